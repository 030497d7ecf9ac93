package server

import "time"

// A goroutine's stack grows while it handles a request (the handshake alone
// takes a few KiB) and the runtime shrinks a parked goroutine's stack only
// while it uses less than a quarter of it, counting 800 bytes of guard:
// a reader parked in a socket read never qualifies, so it would keep its
// largest stack for as long as the connection idles. Instead, a reader that
// has no buffered input left hands the wait for the next packet to a fresh
// goroutine, on the minimum stack, and exits. Under load input stays
// buffered, or arrives within handOffAfter, and the reader keeps going; an
// idle connection costs one small stack.

// handOffAfter is how long a reader waits for the next packet before it
// hands the wait off: a client with requests in a loop sends its next one
// within a round trip, and the reader keeps going without a new goroutine.
const handOffAfter = 2 * time.Millisecond

// busy reports whether the client sends requests back to back: its last
// two came within handOffAfter of each other. Only then is the next one
// worth waiting for; an idle session (a ping every few seconds) hands off
// at once. Waiting would cost more than the goroutine it saves: the wait
// moves the connection's read deadline from seconds away to handOffAfter
// away, and the Go runtime rescans every timer of the process
// (runtime.(*timers).adjust) whenever a timer moved earlier comes due. With
// 15,000 idle sessions pinging that scan was 40% of the server's CPU.
func (c *conn) busy() bool {
	return c.lastGap <= handOffAfter
}

// nextSoon reports whether input arrives within handOffAfter, or rather
// within a half to a whole of it: a busy reader comes here once per
// request, and moving the socket's deadline each time (a timer update, and
// a clock read) cost a few percent of a read's CPU. The deadline set for
// the last wait stands while at least half of handOffAfter is left of it.
func (c *conn) nextSoon() bool {
	if now := time.Now(); c.soonUntil.Sub(now) < handOffAfter/2 {
		c.soonUntil = now.Add(handOffAfter)
		c.nc.SetReadDeadline(c.soonUntil)
	}
	c.br.warm = true
	_, err := c.br.Peek(1)
	return err == nil
}

// handOff continues the connection's reading on a fresh goroutine. The
// caller returns without ending the connection; the new goroutine inherits
// its count in the server's WaitGroup, so Close still waits for the reader.
// The Add happens while the caller still holds its own count, so it never
// races a Wait at zero.
func (c *conn) handOff() {
	c.s.wg.Add(1)
	go c.resume()
}

// resume waits for the next packet and reads on, ending the connection
// when reading stops for good.
func (c *conn) resume() {
	defer c.s.wg.Done()
	var handedOff bool
	defer c.endReader(&handedOff)
	c.setReadDeadline()
	c.br.warm = false // idle: wait on the small buffer
	if _, err := c.br.Peek(1); err != nil {
		c.logReadError(err)
		return
	}
	handedOff = c.readLoop()
}

// endReader is deferred by each reader goroutine: unless the reading moved
// on to a fresh goroutine, it ends the connection, after a panic too.
func (c *conn) endReader(handedOff *bool) {
	if r := recover(); r != nil {
		c.panicked("reader", r)
	} else if *handedOff {
		return
	}
	c.endConn()
}

// setReadDeadline sets the socket's read deadline for a wait as long as
// any packet may take (readDeadline), which ends the short one of nextSoon.
func (c *conn) setReadDeadline() {
	c.soonUntil = time.Time{}
	c.nc.SetReadDeadline(c.readDeadline())
}
