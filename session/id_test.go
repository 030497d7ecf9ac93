package session

import (
	"encoding/hex"
	"math"
	"testing"
)

// TestPasswordMatchesZooKeeper checks Password against bytes produced by
// the real ZooKeeper 3.8.0 jar: ZooKeeperServer.generatePasswd called by
// reflection from a Java single-file program (java Gen.java) on this
// machine.
func TestPasswordMatchesZooKeeper(t *testing.T) {
	tests := []struct {
		id   int64
		want string
	}{
		{0, "f22acd4a97e69d6d20a49bb638eadb38"},
		{1, "054cc74a37327db215e702e20c73f005"},
		{-1, "20f62cb5648dc2d771471c8a2486a9ee"},
		{0x0100000000000001, "054cc74a37327db215e702e20c73f005"},
		{0x01783F5B1C2D0000, "c95da7bd22b666ae4fe4b6943b787433"},
		{math.MinInt64, "f22acd4a97e69d6d20a49bb638eadb38"},
		{math.MaxInt64, "20f62cb5648dc2d771471c8a2486a9ee"},
		{0xB3415C00, "60b420bb3851d9d47acb933dbe70399b"},
		{1 << 56, "f22acd4a97e69d6d20a49bb638eadb38"},
		{0x7F12345678ABCDEF, "f7aa663f3fadda0974ca2adbe3378a32"},
	}
	for _, tc := range tests {
		got := hex.EncodeToString(Password(tc.id))
		if got != tc.want {
			t.Errorf("Password(%#x) = %s, want %s", tc.id, got, tc.want)
		}
		if !CheckPassword(tc.id, Password(tc.id)) {
			t.Errorf("CheckPassword(%#x, own password) = false", tc.id)
		}
	}
}

// TestJavaRandom checks the generator against java.util.Random(42):
// nextBytes of 7 bytes (a partial last int) and the nextInt after it.
func TestJavaRandom(t *testing.T) {
	r := newJavaRandom(42)
	b := make([]byte, 7)
	r.nextBytes(b)
	if got := hex.EncodeToString(b); got != "359d41baf78afe" {
		t.Fatalf("nextBytes(7) = %s, want 359d41baf78afe", got)
	}
	if got := r.nextInt(); got != -1360544799 {
		t.Fatalf("nextInt = %d, want -1360544799", got)
	}
}

func TestCheckPassword(t *testing.T) {
	id := int64(0x01783F5B1C2D0001)
	good := Password(id)
	flipped := append([]byte(nil), good...)
	flipped[15] ^= 1
	tests := []struct {
		name string
		pw   []byte
		want bool
	}{
		{"right", good, true},
		{"last bit flipped", flipped, false},
		{"short", good[:15], false},
		{"long", append(append([]byte(nil), good...), 0), false},
		{"empty", nil, false},
		{"zero password (what a fresh client sends)", make([]byte, 16), false},
		{"another session's", Password(id + 1), false},
	}
	for _, tc := range tests {
		if got := CheckPassword(id, tc.pw); got != tc.want {
			t.Errorf("%s: CheckPassword = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestInitialID checks InitialID against the expression of ZooKeeper's
// SessionTrackerImpl.initializeNextSessionId evaluated by java (Ids.java).
func TestInitialID(t *testing.T) {
	tests := []struct {
		myid, nowMs, want int64
	}{
		{0, 0, 0},
		{1, 0, 72057594037927936},
		{1, 1, 72057594037993472},
		{1, 1763761234567, 115589856268582912},
		{2, 1763761234567, 187647450306510848},
		{255, 1763761234567, -28525331807272960},
		{128, 0, -9223372036854775807}, // skips the container-owner marker
		{3, 123456789, 216180872977907712},
		{1, 0xFFFFFFFFFF, 144115188075790336},
		{1, 0x10000000000, 72057594037927936}, // only 40 bits of time kept
	}
	for _, tc := range tests {
		if got := InitialID(tc.myid, tc.nowMs); got != tc.want {
			t.Errorf("InitialID(%d, %d) = %d, want %d", tc.myid, tc.nowMs, got, tc.want)
		}
	}
}

func TestNegotiate(t *testing.T) {
	tests := []struct {
		req, min, max, want int32
	}{
		{30000, 4000, 40000, 30000},
		{1000, 4000, 40000, 4000},
		{100000, 4000, 40000, 40000},
		{4000, 4000, 40000, 4000},
		{40000, 4000, 40000, 40000},
		{0, 4000, 40000, 4000},
		{-5, 4000, 40000, 4000},
		{5000, 6000, 3000, 3000}, // misconfigured: max wins, as in ZooKeeper
	}
	for _, tc := range tests {
		if got := Negotiate(tc.req, tc.min, tc.max); got != tc.want {
			t.Errorf("Negotiate(%d, %d, %d) = %d, want %d", tc.req, tc.min, tc.max, got, tc.want)
		}
	}
}
