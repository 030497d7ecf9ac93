package session

import (
	"crypto/subtle"
	"math"
)

// superSecret is the constant ZooKeeper XORs into a session id to seed its
// password generator (ZooKeeperServer.superSecret).
const superSecret = 0xB3415C00

// PasswordLen is the length of a session password in bytes.
const PasswordLen = 16

// javaRandom is java.util.Random: a 48-bit linear congruential generator.
type javaRandom struct{ seed uint64 }

const (
	javaMultiplier = 0x5DEECE66D
	javaAddend     = 0xB
	javaMask       = 1<<48 - 1
)

// newJavaRandom seeds the generator as new java.util.Random(seed) does:
// the seed is scrambled with the multiplier and cut to 48 bits.
func newJavaRandom(seed int64) *javaRandom {
	return &javaRandom{seed: (uint64(seed) ^ javaMultiplier) & javaMask}
}

// next advances the generator and returns its top bits bits, as
// Random.next(bits).
func (r *javaRandom) next(bits uint) int32 {
	r.seed = (r.seed*javaMultiplier + javaAddend) & javaMask
	return int32(r.seed >> (48 - bits))
}

// nextInt is Random.nextInt().
func (r *javaRandom) nextInt() int32 { return r.next(32) }

// nextBytes fills b as Random.nextBytes does: one nextInt per four bytes,
// least significant byte first.
func (r *javaRandom) nextBytes(b []byte) {
	for i := 0; i < len(b); {
		rnd := r.nextInt()
		for n := min(len(b)-i, 4); n > 0; n-- {
			b[i] = byte(rnd)
			rnd >>= 8
			i++
		}
	}
}

// Password returns the 16-byte password ZooKeeper gives session id: the
// bytes of java.util.Random seeded with id ^ 0xB3415C00, as
// ZooKeeperServer.generatePasswd computes them. It is deterministic, so
// every member derives the same password from a replicated session id.
// (As in ZooKeeper, only the low 48 bits of the seed matter.)
func Password(id int64) []byte {
	pw := make([]byte, PasswordLen)
	newJavaRandom(id ^ superSecret).nextBytes(pw)
	return pw
}

// CheckPassword reports whether pw is session id's password, comparing in
// constant time.
func CheckPassword(id int64, pw []byte) bool {
	return subtle.ConstantTimeCompare(Password(id), pw) == 1
}

// InitialID returns the first session id a server with the given myid
// hands out when its clock reads nowMs (milliseconds), as ZooKeeper's
// SessionTrackerImpl.initializeNextSessionId: the low 40 bits of nowMs in
// bits 16..55 and myid in the top byte. Later sessions take the next ids.
// The one value ZooKeeper reserves as the container owner marker
// (math.MinInt64) is skipped.
func InitialID(myid int64, nowMs int64) int64 {
	id := int64(uint64(nowMs<<24)>>8) | myid<<56
	if id == math.MinInt64 {
		id++
	}
	return id
}

// Negotiate clamps a client's requested session timeout (ms) to
// [min, max] as ZooKeeper does: first raised to min, then lowered to max,
// so max wins if the bounds are misconfigured with min > max.
func Negotiate(requested, min, max int32) int32 {
	if requested < min {
		requested = min
	}
	if requested > max {
		requested = max
	}
	return requested
}
