package cmdrun

import (
	"fmt"
	"io"
	"sync"
)

// replayStdin gives every attempt of a command the whole of a stdin that is
// not a terminal: what earlier attempts read (kept, up to a cap), then the
// rest as it comes. The source is read lazily, as attempts need it, so a
// command fed by a slow pipe starts at once.
type replayStdin struct {
	src io.Reader
	max int

	read sync.Mutex // held while reading src, so that one reader reads it at a time

	mu       sync.Mutex
	buf      []byte
	err      error // src's error or io.EOF, once seen
	overflow bool  // more than max bytes were read: later attempts cannot replay
}

func newReplayStdin(src io.Reader, max int) *replayStdin {
	return &replayStdin{src: src, max: max}
}

// StdinTooLargeError ends a retry whose input cannot be replayed: more
// than [MaxReplayStdin] of it was read.
type StdinTooLargeError struct{ max int }

// Error says how much was read and what to do instead.
func (e StdinTooLargeError) Error() string {
	return fmt.Sprintf("cannot give a retry the same stdin: more than %d MiB of it was read (give the input as a file instead)", e.max>>20)
}

// attempt returns the reader of the next attempt's stdin, or an error when
// the input read so far cannot be replayed. Closing the reader ends it: its
// next Read returns io.EOF without reading src.
func (r *replayStdin) attempt() (io.ReadCloser, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.overflow {
		return nil, StdinTooLargeError{r.max}
	}
	return &replayReader{r: r}, nil
}

type replayReader struct {
	r      *replayStdin
	mu     sync.Mutex
	off    int
	closed bool
}

func (rr *replayReader) Close() error {
	rr.mu.Lock()
	rr.closed = true
	rr.mu.Unlock()
	return nil
}

func (rr *replayReader) Read(p []byte) (int, error) {
	r := rr.r
	for {
		rr.mu.Lock()
		closed, off := rr.closed, rr.off
		rr.mu.Unlock()
		if closed {
			return 0, io.EOF
		}
		r.mu.Lock()
		if off < len(r.buf) {
			n := copy(p, r.buf[off:])
			r.mu.Unlock()
			rr.advance(n)
			return n, nil
		}
		if r.err != nil {
			err := r.err
			r.mu.Unlock()
			return 0, err
		}
		r.mu.Unlock()

		// Read more of src, unless another reader is at it; then look
		// again at what it kept.
		if !r.read.TryLock() {
			r.read.Lock()
			r.read.Unlock()
			continue
		}
		r.mu.Lock()
		behind := off < len(r.buf) || r.err != nil // another reader got there first
		r.mu.Unlock()
		if behind {
			r.read.Unlock()
			continue
		}
		n, err := r.src.Read(p)
		r.mu.Lock()
		if n > 0 {
			if !r.overflow && len(r.buf)+n <= r.max {
				r.buf = append(r.buf, p[:n]...)
			} else {
				r.overflow = true
			}
		}
		if err != nil {
			r.err = err
		}
		keptAll := !r.overflow
		r.mu.Unlock()
		r.read.Unlock()
		if n > 0 {
			if keptAll {
				rr.advance(n)
			}
			return n, nil
		}
		if err != nil {
			return 0, err
		}
	}
}

func (rr *replayReader) advance(n int) {
	rr.mu.Lock()
	rr.off += n
	rr.mu.Unlock()
}
