// Package clockctx gives an attempt a context that ends at a time read on a
// clock.Clock, for the executors outside the retry package (heedriver,
// heedasynq) whose tests drive time with a fake clock, and the one wait
// between attempts that retry and retryhttp share.
package clockctx

import (
	"context"
	"time"

	"github.com/heed-go/heed/clock"
)

// WithDeadline returns a context that ends at at, as measured on c from
// now. A zero at adds no limit. With a nil c (real time) it is
// context.WithDeadline; with a fake clock, a timer of that clock. Either way
// the context's cause is context.DeadlineExceeded once at has passed, and
// context.Canceled after the returned function is called.
func WithDeadline(ctx context.Context, c clock.Clock, at, now time.Time) (context.Context, context.CancelFunc) {
	switch {
	case at.IsZero():
		return ctx, func() {}
	case c == nil:
		return context.WithDeadline(ctx, at)
	}
	cctx, cancelCause := context.WithCancelCause(ctx)
	t := c.NewTimer(at.Sub(now))
	stop := make(chan struct{})
	go func() {
		select {
		case <-t.C():
			cancelCause(context.DeadlineExceeded)
		case <-stop:
		}
	}()
	return cctx, func() {
		t.Stop()
		close(stop)
		cancelCause(context.Canceled)
	}
}

// Sleep waits for delay on *timer (made on first use, reused after), or
// returns ctx's error if ctx ends first.
func Sleep(ctx context.Context, clk clock.Clock, timer *clock.Timer, delay time.Duration) error {
	if delay <= 0 {
		return ctx.Err()
	}
	if *timer == nil {
		*timer = clock.Or(clk).NewTimer(delay)
	} else {
		(*timer).Reset(delay)
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-(*timer).C():
		return nil
	}
}
