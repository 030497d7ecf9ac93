package wal

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// logsEqual compares every raft.Log field, nil and empty slices apart,
// AppendedAt by instant.
func logsEqual(a, b *raft.Log) bool {
	return a.Index == b.Index && a.Term == b.Term && a.Type == b.Type &&
		reflect.DeepEqual(a.Data, b.Data) && reflect.DeepEqual(a.Extensions, b.Extensions) &&
		a.AppendedAt.Equal(b.AppendedAt)
}

func TestDecodeLogCorrupt(t *testing.T) {
	good := appendLog(nil, &raft.Log{Index: 9, Term: 1, Data: []byte("abc"), Extensions: []byte("e"), AppendedAt: time.Unix(1, 0)})
	tests := []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"bad version", append([]byte{9}, good[1:]...)},
		{"truncated", good[:len(good)-1]},
		{"trailing", append(append([]byte{}, good...), 0)},
		{"header only", good[:2]},
		{"unknown flag", append([]byte{logFormatV1, 0x30}, good[2:]...)},
		{"huge length", []byte{logFormatV1, flagData, 1, 1, 0, 0xff, 0xff, 0xff, 0xff, 0x0f}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var l raft.Log
			if err := decodeLog(tc.b, &l); !errors.Is(err, errPayload) {
				t.Fatalf("decodeLog = %v, want errPayload", err)
			}
		})
	}
}

func FuzzDecodeLog(f *testing.F) {
	f.Add(appendLog(nil, &raft.Log{Index: 1, Term: 1, Data: []byte("x"), AppendedAt: time.Unix(3, 4)}))
	f.Add([]byte{logFormatV1, 7})
	f.Fuzz(func(t *testing.T, b []byte) {
		var l raft.Log
		if decodeLog(b, &l) == nil {
			idx, err := decodeIndex(b)
			if err != nil || idx != l.Index {
				t.Fatalf("decodeIndex(%x) = %d, %v; decodeLog says %d", b, idx, err, l.Index)
			}
			var again raft.Log
			if err := decodeLog(appendLog(nil, &l), &again); err != nil || !logsEqual(&l, &again) {
				t.Fatalf("re-encode of %x: %+v, %v; was %+v", b, again, err, l)
			}
		}
	})
}

func TestSegmentHeader(t *testing.T) {
	good := segHeader{seq: 7, base: 1 << 40}.encode()
	if h, err := decodeHeader(good); err != nil || h != (segHeader{seq: 7, base: 1 << 40}) {
		t.Fatalf("decodeHeader(encode) = %+v, %v", h, err)
	}
	flip := func(i int) []byte {
		b := bytes.Clone(good)
		b[i] ^= 1
		return b
	}
	tests := []struct {
		name string
		b    []byte
	}{
		{"short", good[:headerSize-1]},
		{"bad magic", flip(0)},
		{"sequence flipped", flip(8)},
		{"base flipped", flip(20)},
		{"crc flipped", flip(31)},
		{"zeros", make([]byte, headerSize)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if h, err := decodeHeader(tc.b); err == nil {
				t.Fatalf("decodeHeader accepted %x as %+v", tc.b, h)
			}
		})
	}
}

// TestRecordCRCCoversSequence checks that a record validates only in the
// segment it was written for, and that its length and payload are covered.
func TestRecordCRCCoversSequence(t *testing.T) {
	rec := append(make([]byte, recordHeaderSize), appendLog(nil, &raft.Log{Index: 3, Term: 1, Data: []byte("x")})...)
	putRecordHeader(crcSeed(1), rec)
	if _, ok := checkRecord(crcSeed(1), rec); !ok {
		t.Fatal("record does not validate in its own segment")
	}
	tests := []struct {
		name string
		seed uint32
		rec  func() []byte
	}{
		{"other segment", crcSeed(2), func() []byte { return rec }},
		{"payload flipped", crcSeed(1), func() []byte { b := bytes.Clone(rec); b[len(b)-1] ^= 1; return b }},
		{"length off", crcSeed(1), func() []byte { b := bytes.Clone(rec); return append(b, 0) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, ok := checkRecord(tc.seed, tc.rec()); ok {
				t.Fatal("record validated")
			}
		})
	}
}

func TestSegmentName(t *testing.T) {
	for _, seq := range []uint64{0, 1, 0xabc, 1<<64 - 1} {
		if got, ok := parseSegmentName(segmentName(seq)); !ok || got != seq {
			t.Fatalf("parseSegmentName(%q) = %d, %v", segmentName(seq), got, ok)
		}
	}
	for _, name := range []string{"spare", "1.wal", "000000000000000g.wal", "0000000000000001.wal.tmp"} {
		if _, ok := parseSegmentName(name); ok {
			t.Fatalf("parseSegmentName(%q) accepted", name)
		}
	}
}
