// Package soak holds zkd's long-run fault test: a 3-member ensemble of
// real zkd processes (compat/zkproc), each member's data directory on its
// own compat/faultfs mount and every member reaching the others through
// TCP proxies, runs a register workload and a lock workload while a
// nemesis injects one fault at a time:
//
//   - kill: SIGKILL a member (the leader or a follower), restart it;
//   - pause: SIGSTOP a member, SIGCONT it;
//   - partition: cut a member off from the other two (connections refused
//     and reset, or silently dropped), heal;
//   - disk: on one member's file system, delay every fsync by seconds,
//     fail fsync with EIO or answer ENOSPC (zkd exits with status 74 and
//     the harness, as a supervisor would, clears the fault and starts it
//     again), or cut the power (SIGKILL, then drop every write not yet
//     fsynced) of one member or of all three;
//   - mixed: any of the above, drawn at random.
//
// The checks, over the whole run:
//
//   - register: every write (set) and read (sync, then getData) of a few
//     znodes is recorded with its call and return times and checked for
//     linearizability with porcupine; a write whose outcome the client
//     cannot know (its connection broke) may take effect at any time after
//     its call;
//   - lock: clients take a lock made of ephemeral sequential znodes (the
//     lowest sequence number holds; the sequence number is the fencing
//     token), and while holding it bump a counter with a multi that checks
//     their lock node still exists. No two holds may overlap in real time
//     (unless the earlier holder's session expired), the counter's
//     versions must carry non-decreasing tokens, and a holder must never
//     find its lock node gone or the counter changed under it;
//   - acknowledged writes: every create a client saw acknowledged is on
//     every member at the end, and the members agree on every znode the
//     run wrote;
//   - a disk fault that must stop zkd stops it with status 74.
//
// TestIntegration_Soak runs every nemesis for -soak.duration (24 s by
// default: two minutes of faults over the five nemeses, so `go test`
// covers it in CI); `make soak` runs it for SOAK_MINUTES (30) per nemesis
// and prints one line per nemesis: minutes, faults injected, operations checked, violations,
// acknowledged writes lost and sessions expired. See docs/disk-faults.md.
package soak
