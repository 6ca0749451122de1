package clockctx_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/heed-go/heed/clock/clocktest"
	"github.com/heed-go/heed/internal/clockctx"
)

func TestWithDeadline(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	fake := clocktest.New(start)
	ctx, cancel := clockctx.WithDeadline(context.Background(), fake, start.Add(time.Second), start)
	defer cancel()
	if ctx.Err() != nil {
		t.Fatalf("ended before its time: %v", ctx.Err())
	}
	fake.Advance(time.Second)
	<-ctx.Done()
	if cause := context.Cause(ctx); !errors.Is(cause, context.DeadlineExceeded) {
		t.Errorf("cause %v, want context.DeadlineExceeded", cause)
	}

	ctx, cancel = clockctx.WithDeadline(context.Background(), fake, fake.Now().Add(time.Hour), fake.Now())
	cancel()
	if cause := context.Cause(ctx); !errors.Is(cause, context.Canceled) {
		t.Errorf("after cancel: cause %v, want context.Canceled", cause)
	}

	ctx, cancel = clockctx.WithDeadline(context.Background(), nil, time.Time{}, start)
	defer cancel()
	if _, ok := ctx.Deadline(); ok {
		t.Error("a zero time set a deadline")
	}
}
