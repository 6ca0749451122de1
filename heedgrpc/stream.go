package heedgrpc

import (
	"context"
	"io"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/heed-go/heed/clock"
	"github.com/heed-go/heed/retry"
)

// StreamInterceptor returns the stream client interceptor: a stream's
// attempts go through heed's call protocol, as for unary calls, until its
// first response message. Until then the messages sent are kept (up to
// MaxReplay; a stream that sends more is no longer retried) and sent again,
// with CloseSend, on a new stream; once a message has arrived, or Header
// has returned the server's headers, the stream is committed and its
// failures are returned as they are. As gRPC requires of any stream, do
// not modify a message after SendMsg.
//
// Creating the stream retries, inside the interceptor, failures that open
// no stream; a SendMsg that finds the stream broken returns nil (the
// message is kept for the next attempt), and the RecvMsg that follows gets
// the status and retries. A give-up is returned as by the unary
// interceptor: a *retry.ExhaustedError wrapping the last status.
func (c *Client) StreamInterceptor() grpc.StreamClientInterceptor {
	return func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		c.init()
		if c.initErr != nil {
			return nil, c.initErr
		}
		if err := ctx.Err(); err != nil {
			return nil, status.FromContextError(err).Err()
		}
		s := &stream{ctx: ctx, desc: desc, cc: cc, streamer: streamer, opts: opts}
		c.prepare(ctx, cc, method, &s.cs)
		s.cs.startCall(ctx, &s.rc)
		s.mu.Lock()
		defer s.mu.Unlock()
		if err := s.begin(); err != nil {
			return nil, err
		}
		return s, nil
	}
}

// stream is a client stream whose attempts heed makes. Its mutex guards
// everything but the current stream's own methods, which are called
// without it (SendMsg and RecvMsg may run on two goroutines at once).
type stream struct {
	cs       call
	rc       retry.Call // the call protocol's state
	ctx      context.Context
	desc     *grpc.StreamDesc
	cc       *grpc.ClientConn
	streamer grpc.Streamer
	opts     []grpc.CallOption

	mu        sync.Mutex
	cur       grpc.ClientStream // the current attempt's stream
	actx      context.Context   // its context
	cancel    context.CancelFunc
	gen       int // attempts opened
	start     time.Time
	sent      []any // messages sent, for a replay
	closed    bool  // CloseSend was called
	broken    bool  // cur failed on a send: keep messages, send nothing
	overflow  bool  // more messages than MaxReplay were sent: no retry
	committed bool  // a message (or the headers) arrived: no retry
	ended     bool  // the call protocol has decided (Done or GiveUp)
	final     error // the error of a stream that gave up
	last      error // the last attempt's error
	timer     clock.Timer
}

// begin opens the first attempt, retrying failures to open it.
func (s *stream) begin() error {
	err, timedOut, refused := s.open()
	if err == nil || refused {
		return err
	}
	return s.retryAfter(err, timedOut)
}

// open makes the next attempt: admission, the stream, the replay. It
// returns the attempt's failure, or, with refused, the error of a call
// that Admit refused (the call is over).
func (s *stream) open() (err error, timedOut, refused bool) {
	cs := &s.cs
	now := clock.Now(s.rc.Policy.Clock)
	lim, ok := s.rc.Admit(now)
	if !ok {
		s.ended = true
		s.final = cs.refused(s.ctx, &s.rc, s.last)
		return s.final, false, true
	}
	s.start = now
	actx, cancel := cs.attemptContext(s.ctx, s.rc.History.Attempts+1, now, lim)
	st, err := s.streamer(actx, s.desc, s.cc, cs.method, cs.callOptions(s.opts)...)
	if err != nil {
		timedOut = cancel != nil && s.ctx.Err() == nil && actx.Err() == context.DeadlineExceeded
		if cancel != nil {
			cancel()
		}
		return err, timedOut, false
	}
	s.cur, s.actx, s.cancel, s.broken = st, actx, cancel, false
	s.gen++
	for _, m := range s.sent {
		if err := st.SendMsg(m); err != nil {
			// io.EOF: the stream failed; RecvMsg will say how. Any
			// other error is local (the message does not marshal) and
			// RecvMsg returns it too.
			s.broken = true
			break
		}
	}
	if s.closed && !s.broken {
		st.CloseSend()
	}
	return nil, false, false
}

// retryAfter ends the current attempt, which failed with err, and makes
// the next ones as the call protocol says until one opens a stream (nil)
// or the call gives up (its error, kept in s.final).
func (s *stream) retryAfter(err error, timedOut bool) error {
	cs := &s.cs
	clk := s.rc.Policy.Clock
	for {
		if s.cancel != nil {
			s.cancel()
			s.cancel = nil
		}
		now := clock.Now(clk)
		if cs.callerEnded(s.ctx, &s.rc, now) {
			s.rc.Abandon(now)
			cs.canceled(s.ctx, &s.rc, err, now.Sub(s.start))
			s.ended, s.final = true, err
			return err
		}
		s.last = err
		res, code := cs.result(err, timedOut)
		if s.overflow || s.committed {
			res.NotRepeatable = true
		}
		d := s.rc.End(now, res)
		cs.observe(s.ctx, &s.rc, code, d, now.Sub(s.start), false)
		if d.Action != retry.Retry {
			s.ended = true
			s.final = s.rc.Exhausted(err)
			return s.final
		}
		if werr := cs.wait(s.ctx, &s.rc, &s.timer, d.Delay); werr != nil {
			cs.canceled(s.ctx, &s.rc, werr, 0)
			s.ended, s.final = true, werr
			return werr
		}
		var refused bool
		if err, timedOut, refused = s.open(); err == nil || refused {
			return err
		}
	}
}

// SendMsg sends m on the current attempt and keeps it for a replay until
// the stream is committed.
func (s *stream) SendMsg(m any) error {
	s.mu.Lock()
	if s.final != nil {
		s.mu.Unlock()
		return io.EOF // RecvMsg returns the error
	}
	keep := !s.committed && !s.overflow
	if keep {
		if len(s.sent) >= s.cs.c.maxReplay {
			s.overflow, s.sent, keep = true, nil, false
		} else {
			s.sent = append(s.sent, m)
		}
	}
	if s.broken {
		s.mu.Unlock()
		if keep {
			return nil // sent with the replay of the next attempt
		}
		return io.EOF
	}
	cur, gen := s.cur, s.gen
	s.mu.Unlock()
	err := cur.SendMsg(m)
	if err == nil || !keep {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if gen == s.gen {
		s.broken = true // the next RecvMsg finds out why, and retries
	}
	return nil
}

// CloseSend closes the sending side of the current attempt, and of the
// attempts that follow.
func (s *stream) CloseSend() error {
	s.mu.Lock()
	s.closed = true
	if s.broken || s.final != nil {
		s.mu.Unlock()
		return nil
	}
	cur := s.cur
	s.mu.Unlock()
	return cur.CloseSend()
}

// RecvMsg receives the next message. Until the first, a failure is the
// attempt's, and is retried as the call protocol says.
func (s *stream) RecvMsg(m any) error {
	s.mu.Lock()
	if s.final != nil {
		err := s.final
		s.mu.Unlock()
		return err
	}
	for {
		cur := s.cur
		done := s.committed && s.ended
		s.mu.Unlock()
		err := cur.RecvMsg(m)
		if done {
			if err != nil {
				s.mu.Lock()
				s.release()
				s.mu.Unlock()
			}
			return err
		}
		s.mu.Lock()
		if err == nil || err == io.EOF {
			// The first message, or a stream that ended well without
			// any: the attempt succeeded.
			s.commit()
			if err != nil {
				s.release()
			}
			s.end(retry.Result{})
			s.mu.Unlock()
			return err
		}
		timedOut := s.cancel != nil && s.ctx.Err() == nil && s.actx.Err() == context.DeadlineExceeded
		if rerr := s.retryAfter(err, timedOut); rerr != nil {
			s.mu.Unlock()
			return rerr
		}
	}
}

// commit ties the stream to its current attempt: no more retries, no more
// messages kept.
func (s *stream) commit() {
	s.committed, s.sent = true, nil
}

// end reports the current attempt's success to the call protocol, once.
func (s *stream) end(r retry.Result) {
	if s.ended {
		return
	}
	s.ended = true
	cs := &s.cs
	now := clock.Now(s.rc.Policy.Clock)
	d := s.rc.End(now, r)
	cs.observe(s.ctx, &s.rc, 0, d, now.Sub(s.start), false)
}

// release frees the attempt's context once its stream is over.
func (s *stream) release() {
	if s.cancel != nil {
		s.cancel()
		s.cancel = nil
	}
}

// Header returns the current attempt's header metadata. Headers from the
// server commit the stream: a retry would show the caller other ones.
func (s *stream) Header() (metadata.MD, error) {
	s.mu.Lock()
	cur := s.cur
	s.mu.Unlock()
	md, err := cur.Header()
	if md != nil && err == nil {
		s.mu.Lock()
		if !s.committed {
			s.commit()
		}
		s.mu.Unlock()
	}
	return md, err
}

// Trailer returns the current attempt's trailer metadata.
func (s *stream) Trailer() metadata.MD {
	s.mu.Lock()
	cur := s.cur
	s.mu.Unlock()
	return cur.Trailer()
}

// Context returns the current attempt's stream context.
func (s *stream) Context() context.Context {
	s.mu.Lock()
	cur := s.cur
	s.mu.Unlock()
	return cur.Context()
}
