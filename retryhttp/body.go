package retryhttp

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"sync"
)

// rewinder gives each attempt a fresh copy of the request body.
type rewinder struct {
	getBody func() (io.ReadCloser, error) // the request's GetBody, or nil
	buf     []byte                        // the buffered body, when buffered
	ok      bool                          // the body can be given again
}

// prepareBody decides how the body of req is repeated: with GetBody, from a
// buffer of at most limit bytes, or not at all. It returns the body for the
// first attempt. With no body, everything is repeatable.
func prepareBody(req *http.Request, limit int64, wantRetry bool) (first io.ReadCloser, rw rewinder, err error) {
	body := req.Body
	if body == nil || body == http.NoBody {
		return body, rewinder{ok: true}, nil
	}
	if req.GetBody != nil {
		return body, rewinder{getBody: req.GetBody, ok: true}, nil
	}
	if !wantRetry || limit < 0 || req.ContentLength > limit {
		return body, rewinder{}, nil
	}
	// Read at most limit+1 bytes: more means the body is too large to keep.
	var b bytes.Buffer
	if req.ContentLength > 0 {
		b.Grow(int(req.ContentLength))
	}
	n, err := b.ReadFrom(io.LimitReader(body, limit+1))
	if err != nil {
		body.Close()
		return nil, rewinder{}, err
	}
	if n > limit {
		// Too large: send what was read followed by the rest, once.
		return &prefixBody{Reader: io.MultiReader(bytes.NewReader(b.Bytes()), body), c: body}, rewinder{}, nil
	}
	body.Close()
	buf := b.Bytes()
	return io.NopCloser(bytes.NewReader(buf)), rewinder{buf: buf, ok: true}, nil
}

// body returns the body for a later attempt.
func (rw *rewinder) body() (io.ReadCloser, error) {
	switch {
	case rw.getBody != nil:
		return rw.getBody()
	case rw.buf != nil:
		return io.NopCloser(bytes.NewReader(rw.buf)), nil
	}
	return http.NoBody, nil
}

// getBodyFunc is what an attempt's GetBody becomes, so that the base
// transport can replay on its own too.
func (rw *rewinder) getBodyFunc() func() (io.ReadCloser, error) {
	switch {
	case rw.getBody != nil:
		return rw.getBody
	case rw.buf != nil:
		buf := rw.buf // a copy, so that rw itself does not escape
		return func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf)), nil }
	}
	return nil
}

type prefixBody struct {
	io.Reader
	c io.Closer
}

func (p *prefixBody) Close() error { return p.c.Close() }

// discard drains at most limit bytes of a response body that will not be
// used, then closes it, so that the connection can carry the next request.
// A body known to be longer than limit is closed unread.
func discard(resp *http.Response, limit int64) {
	if resp == nil || resp.Body == nil {
		return
	}
	if limit > 0 && resp.ContentLength <= limit {
		io.CopyN(io.Discard, resp.Body, limit)
	}
	resp.Body.Close()
}

// finalBody is the body of the response RoundTrip returns: it cancels the
// attempt's context when closed (not before, so the body stays readable)
// and enforces the size cap.
type finalBody struct {
	rc     io.ReadCloser
	cancel context.CancelFunc // may be nil
	// raceCancel, when set, ends the context of a race's winner.
	raceCancel context.CancelFunc
	left       int64 // bytes still allowed, when max > 0
	max        int64
	once       sync.Once
}

func (b *finalBody) Read(p []byte) (int, error) {
	if b.max > 0 {
		if b.left <= 0 {
			// One more byte tells "exactly max" from "more than max".
			var one [1]byte
			n, err := b.rc.Read(one[:])
			if n > 0 {
				return 0, ErrBodyTooLarge
			}
			return 0, err
		}
		if int64(len(p)) > b.left {
			p = p[:b.left]
		}
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *finalBody) Close() error {
	err := b.rc.Close()
	b.once.Do(func() {
		if b.cancel != nil {
			b.cancel()
		}
		if b.raceCancel != nil {
			b.raceCancel()
		}
	})
	return err
}
