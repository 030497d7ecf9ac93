package server

import (
	"bytes"
	"io"
	"testing"
)

// chunkReader returns its data in the chunk sizes given, then io.EOF.
type chunkReader struct {
	data   []byte
	chunks []int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := len(r.data)
	if len(r.chunks) > 0 {
		n = min(n, r.chunks[0])
		r.chunks = r.chunks[1:]
	}
	n = copy(p, r.data[:n])
	r.data = r.data[n:]
	return n, nil
}

func TestLazyReader(t *testing.T) {
	data := make([]byte, 20000)
	for i := range data {
		data[i] = byte(i * 7)
	}
	tests := []struct {
		name   string
		chunks []int
		reads  []int // sizes of successive io.ReadFull calls
	}{
		{"small frames", []int{12, 12, 50}, []int{4, 8, 4, 8, 4, 46}},
		{"stream", []int{20000}, []int{4, 100, 4, 5000, 4, 3000, 4, 11884}},
		{"one byte at a time", []int{1, 1, 1, 1, 1, 1, 1, 1}, []int{4, 4}},
		{"large direct", nil, []int{10000, 10000}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := &chunkReader{data: data, chunks: append([]int(nil), tt.chunks...)}
			lr := newLazyReader(src)
			off := 0
			for _, n := range tt.reads {
				if p, err := lr.Peek(1); err != nil || p[0] != data[off] {
					t.Fatalf("Peek at %d: %v %x", off, err, p)
				}
				got := make([]byte, n)
				if _, err := io.ReadFull(lr, got); err != nil {
					t.Fatalf("ReadFull(%d) at %d: %v", n, off, err)
				}
				if !bytes.Equal(got, data[off:off+n]) {
					t.Fatalf("ReadFull(%d) at %d: wrong bytes", n, off)
				}
				off += n
			}
			if lr.Buffered() == 0 && !lr.busy && lr.big != nil {
				t.Fatal("an idle reader still holds its big buffer")
			}
		})
	}
}

func TestLazyReaderReleasesWhenCaughtUp(t *testing.T) {
	// A full small read makes the reader busy; a short read of the big
	// buffer must hand it back.
	total := lazySmallSize + lazyBigSize + 100
	src := &chunkReader{data: make([]byte, total), chunks: []int{lazySmallSize, lazyBigSize, 100}}
	lr := newLazyReader(src)
	var b [16]byte
	for read := 0; read < total; {
		n, err := lr.Read(b[:])
		if err != nil {
			t.Fatal(err)
		}
		read += n
		if read == lazySmallSize+lazyBigSize/2 && lr.big == nil {
			t.Fatal("a streaming reader does not use the big buffer")
		}
	}
	if lr.big != nil || lr.Buffered() != 0 {
		t.Fatalf("caught-up reader holds big=%v buffered=%d", lr.big != nil, lr.Buffered())
	}
	if _, err := lr.Discard(1); err != io.EOF {
		t.Fatalf("Discard at end: %v, want EOF", err)
	}
}

// countingReader counts the reads of its source.
type countingReader struct {
	io.Reader
	reads int
}

func (r *countingReader) Read(p []byte) (int, error) {
	r.reads++
	return r.Reader.Read(p)
}

func TestLazyReaderWarm(t *testing.T) {
	// A 1 KiB request frame, as a client's setData sends, read the way the
	// connection reads it: Peek for the length, then the whole frame. Cold
	// (idle) it takes two reads of the socket; warm, one. Either way an
	// idle reader ends holding no big buffer once cold again.
	frame := make([]byte, 4+1024)
	for i := range frame {
		frame[i] = byte(i)
	}
	for _, tt := range []struct {
		warm  bool
		reads int
	}{{false, 2}, {true, 1}} {
		src := &countingReader{Reader: bytes.NewReader(frame)}
		lr := newLazyReader(src)
		lr.warm = tt.warm
		if _, err := lr.Peek(4); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, len(frame))
		if _, err := io.ReadFull(lr, got); err != nil || !bytes.Equal(got, frame) {
			t.Fatalf("warm=%v: frame read wrong: %v", tt.warm, err)
		}
		if src.reads != tt.reads {
			t.Errorf("warm=%v: %d reads of the source, want %d", tt.warm, src.reads, tt.reads)
		}
		lr.warm = false
		if _, err := lr.Peek(1); err != io.EOF {
			t.Fatalf("warm=%v: Peek at end: %v, want EOF", tt.warm, err)
		}
		if lr.big != nil {
			t.Errorf("warm=%v: a cold, idle reader holds the big buffer", tt.warm)
		}
	}
}

func TestSlotQueue(t *testing.T) {
	var q slotQueue
	if how, _ := q.add(&slot{xid: 1}, handQueue); how != addStart {
		t.Fatalf("first add: %d, want addStart", how)
	}
	if how, held := q.add(&slot{xid: 2}, handInline); how != addQueued || held != 1 {
		t.Fatalf("second add: how=%d held=%d; want queued behind the first", how, held)
	}
	// Steady traffic: the queue never drains, and must not grow.
	next := int32(3)
	want := int32(1)
	for range 1000 {
		q.add(&slot{xid: next}, handQueue)
		next++
		if sl := q.next(); sl == nil || sl.xid != want {
			t.Fatalf("next = %v, want xid %d", sl, want)
		}
		want++
	}
	if cap(q.q) > 16 {
		t.Fatalf("queue of 2 slots grew to %d", cap(q.q))
	}
	// The completer finishes a slot it took: a read may not overtake it.
	if sl := q.next(); sl == nil {
		t.Fatal("queue drained early")
	}
	if how, _ := q.add(&slot{xid: next}, handInline); how != addQueued {
		t.Fatalf("add while the completer is busy: %d, want addQueued", how)
	}
	for q.next() != nil {
	}
	// Drained: the completer lingers, not busy.
	if !q.running || q.busy {
		t.Fatalf("drained queue: running=%v busy=%v; want a lingering completer", q.running, q.busy)
	}
	if how, _ := q.add(&slot{}, handInline); how != addInline {
		t.Fatalf("read with nothing ahead: %d, want addInline", how)
	}
	if how, _ := q.add(&slot{}, handQueue); how != addWake {
		t.Fatalf("write to a lingering completer: %d, want addWake", how)
	}
	if q.stop() {
		t.Fatal("stop with a slot queued ended the completer")
	}
	if n := len(q.drain()); n != 1 {
		t.Fatalf("drain = %d slots, want 1", n)
	}
	if !q.stop() || q.running {
		t.Fatal("stop on an empty queue did not end the completer")
	}
	if how, _ := q.add(&slot{}, handQueue); how != addStart {
		t.Fatalf("add after stop: %d, want addStart", how)
	}
}

// TestSlotQueueHook walks a parked write through the ways its reply can be
// finished: by the hook of its future, by a completer that took it first,
// and with slots queued behind it while the hook runs.
func TestSlotQueueHook(t *testing.T) {
	t.Run("hook finishes a lone write", func(t *testing.T) {
		var q slotQueue
		w := &slot{xid: 1}
		if how, _ := q.add(w, handPark); how != addParked {
			t.Fatalf("lone write: %d, want addParked", how)
		}
		if q.running {
			t.Fatal("parking started a completer")
		}
		if !q.hook(w) {
			t.Fatal("hook refused the first, untaken slot")
		}
		// While the hook finishes it, a read may not overtake it, and a
		// completer started for it waits.
		if how, _ := q.add(&slot{xid: 2}, handInline); how != addStart {
			t.Fatalf("read during the hook: %d, want addStart (queued)", how)
		}
		if sl := q.next(); sl != nil {
			t.Fatalf("completer took xid %d while the hook runs", sl.xid)
		}
		q.unhook()
		select {
		case <-q.wake:
		default:
			t.Fatal("unhook did not wake the completer of the queued read")
		}
		if sl := q.next(); sl == nil || sl.xid != 2 {
			t.Fatalf("after unhook next = %v, want xid 2", sl)
		}
	})
	t.Run("completer takes it first", func(t *testing.T) {
		var q slotQueue
		w := &slot{xid: 1}
		q.add(w, handPark)
		// A second request behind it starts a completer, which takes the
		// parked write and waits for its future itself.
		if how, _ := q.add(&slot{xid: 2}, handPark); how != addStart {
			t.Fatalf("write behind a parked one: %d, want addStart", how)
		}
		if sl := q.next(); sl != w {
			t.Fatalf("completer took %v, want the parked write", sl)
		}
		if q.hook(w) {
			t.Fatal("hook took a slot the completer owns")
		}
	})
	t.Run("not first: queued", func(t *testing.T) {
		var q slotQueue
		q.add(&slot{xid: 1}, handQueue) // a completer starts, busy with it
		if how, _ := q.add(&slot{xid: 2}, handPark); how != addQueued {
			t.Fatalf("write behind a busy completer: %d, want addQueued", how)
		}
	})
	t.Run("dropped before the hook", func(t *testing.T) {
		var q slotQueue
		w := &slot{xid: 1}
		q.add(w, handPark)
		q.drain()
		if q.hook(w) {
			t.Fatal("hook took a slot of a connection that ended")
		}
	})
}
