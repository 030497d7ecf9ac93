package server

import (
	"io"
	"sync"
)

// Sizes of a lazyReader's two buffers.
const (
	// lazySmallSize is the inline buffer an idle connection blocks on:
	// enough for a ping (12 bytes) and most small requests in one read.
	lazySmallSize = 128
	// lazyBigSize is the pooled buffer used while a client streams
	// requests faster than they are read.
	lazyBigSize = 4 << 10
)

// readBufPool holds the big buffers of lazyReaders that are not streaming.
var readBufPool = sync.Pool{New: func() any {
	b := make([]byte, lazyBigSize)
	return &b
}}

// lazyReader is a buffered reader that holds a large buffer only while its
// source keeps it full. An idle connection blocks reading into a small
// inline buffer, so 100k idle connections do not park 100k 4 KiB buffers
// (bufio.Reader's cost); a connection whose last read filled its buffer
// reads into a pooled 4 KiB one, returned as soon as a read comes back
// short. Reads at least as large as the buffer in use go straight into the
// caller's slice, as bufio.Reader does.
type lazyReader struct {
	rd   io.Reader
	buf  []byte  // small[:] or *big, whichever the last fill used
	big  *[]byte // the pooled buffer, nil when not held
	r, w int     // buf[r:w] is unread
	err  error   // deferred error of the last fill
	busy bool    // the last fill filled its buffer: more is likely waiting
	// warm is set by the owner while the connection is busy (a request
	// was just handled and the next is due within a round trip): fills
	// then use the big buffer too, so a request larger than the small
	// buffer (a 1 KiB setData) arrives in one read instead of two.
	warm  bool
	small [lazySmallSize]byte
}

func newLazyReader(rd io.Reader) *lazyReader { return &lazyReader{rd: rd} }

// release returns the big buffer to the pool; the reader must be empty.
func (b *lazyReader) release() {
	if b.big != nil {
		readBufPool.Put(b.big)
		b.big = nil
	}
	b.buf = nil
}

// choose picks the buffer for the next fill of an empty reader.
func (b *lazyReader) choose() {
	b.r, b.w = 0, 0
	if !b.busy && !b.warm {
		b.release()
		b.buf = b.small[:]
		return
	}
	if b.big == nil {
		b.big = readBufPool.Get().(*[]byte)
	}
	b.buf = *b.big
}

// fill reads once into buf[w:]; false with the error when nothing came.
func (b *lazyReader) fill() error {
	if b.err != nil {
		err := b.err
		b.err = nil
		return err
	}
	n, err := b.rd.Read(b.buf[b.w:])
	b.w += n
	b.busy = b.w == len(b.buf)
	if n > 0 {
		b.err = err
		return nil
	}
	if err == nil {
		err = io.ErrNoProgress
	}
	return err
}

// Read reads into p, from the buffer when it holds data.
func (b *lazyReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if b.r == b.w {
		b.choose()
		if len(p) >= len(b.buf) {
			// Straight into p: no copy, and no buffer held meanwhile.
			b.release()
			if b.err != nil {
				err := b.err
				b.err = nil
				return 0, err
			}
			n, err := b.rd.Read(p)
			b.busy = n == len(p) && len(p) >= lazyBigSize
			return n, err
		}
		if err := b.fill(); err != nil {
			b.release()
			return 0, err
		}
	}
	n := copy(p, b.buf[b.r:b.w])
	b.r += n
	if b.r == b.w && !b.busy {
		b.release()
	}
	return n, nil
}

// Buffered is how many bytes can be read without reading the source.
func (b *lazyReader) Buffered() int { return b.w - b.r }

// Peek returns the next n bytes without consuming them; n must not exceed
// lazySmallSize.
func (b *lazyReader) Peek(n int) ([]byte, error) {
	if b.r == b.w {
		b.choose()
	}
	for b.w-b.r < n {
		if b.r > 0 {
			b.w = copy(b.buf, b.buf[b.r:b.w])
			b.r = 0
		}
		if err := b.fill(); err != nil {
			return b.buf[b.r:b.w], err
		}
	}
	return b.buf[b.r : b.r+n], nil
}

// Discard skips the next n bytes.
func (b *lazyReader) Discard(n int) (int, error) {
	var scratch [64]byte
	done := 0
	for done < n {
		m, err := b.Read(scratch[:min(n-done, len(scratch))])
		done += m
		if err != nil {
			return done, err
		}
	}
	return done, nil
}
