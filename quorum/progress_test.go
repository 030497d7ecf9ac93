package quorum

import (
	"reflect"
	"testing"
	"time"
)

// TestProgressCodec: the leader's table reaches a follower whole, and a
// truncated one is refused rather than half-read.
func TestProgressCodec(t *testing.T) {
	p := Progress{LeaderID: 2, CommitIndex: 41, Members: []MemberProgress{
		{ID: 1, Known: true, AppliedIndex: 40, Zxid: 0x20000000a, Lag: 1, Serving: true, InTouch: true, Ready: true, Age: 120 * time.Millisecond},
		{ID: 2, Leader: true, Known: true, AppliedIndex: 41, Zxid: 0x20000000b, Serving: true, InTouch: true, Ready: true},
		{ID: 4, Observer: true},
	}}
	body := encodeProgress(p)
	got, err := decodeProgress(body)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, p) {
		t.Errorf("decoded %+v, want %+v", got, p)
	}
	if _, err := decodeProgress(body[:len(body)-3]); err == nil {
		t.Error("a truncated table decoded without error")
	}
}
