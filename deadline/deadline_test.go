package deadline

import (
	"context"
	"errors"
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heed-go/heed/internal/wire"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// fixedCtx is a context with a fixed deadline that is never done, for the
// pure *At functions.
type fixedCtx struct {
	context.Context
	dl time.Time
}

func (c fixedCtx) Deadline() (time.Time, bool) { return c.dl, !c.dl.IsZero() }

func TestRemainingAt(t *testing.T) {
	tests := []struct {
		name   string
		dl     time.Time // zero: no deadline
		want   time.Duration
		wantOK bool
	}{
		{"no deadline", time.Time{}, 0, false},
		{"future", t0.Add(1500 * time.Millisecond), 1500 * time.Millisecond, true},
		{"now", t0, 0, true},
		{"past", t0.Add(-time.Hour), 0, true},
		{"far future saturates", t0.AddDate(1000, 0, 0), math.MaxInt64, true},
		{"far past clamps", t0.AddDate(-1000, 0, 0), 0, true},
	}
	for _, tt := range tests {
		ctx := fixedCtx{context.Background(), tt.dl}
		got, ok := RemainingAt(ctx, t0)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("%s: RemainingAt = %v, %v; want %v, %v", tt.name, got, ok, tt.want, tt.wantOK)
		}
	}
}

func TestCheckAt(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name string
		ctx  context.Context
		need time.Duration
		want error // compared with errors.Is; nil means nil
		too  *tooCloseError
	}{
		{"no deadline", context.Background(), time.Hour, nil, nil},
		{"enough", fixedCtx{context.Background(), t0.Add(time.Second)}, 200 * time.Millisecond, nil, nil},
		{"exactly enough", fixedCtx{context.Background(), t0.Add(200 * time.Millisecond)}, 200 * time.Millisecond, nil, nil},
		{"too close", fixedCtx{context.Background(), t0.Add(40 * time.Millisecond)}, 200 * time.Millisecond, ErrTooClose,
			&tooCloseError{Remaining: 40 * time.Millisecond, Need: 200 * time.Millisecond}},
		{"one ns short", fixedCtx{context.Background(), t0.Add(time.Second - 1)}, time.Second, ErrTooClose,
			&tooCloseError{Remaining: time.Second - 1, Need: time.Second}},
		{"zero need", fixedCtx{context.Background(), t0.Add(time.Nanosecond)}, 0, nil, nil},
		{"negative need", fixedCtx{context.Background(), t0.Add(time.Nanosecond)}, -time.Second, nil, nil},
		{"deadline passed, not yet done", fixedCtx{context.Background(), t0}, 0, context.DeadlineExceeded, nil},
		{"deadline long passed", fixedCtx{context.Background(), t0.Add(-time.Hour)}, time.Millisecond, context.DeadlineExceeded, nil},
		{"canceled, no deadline", canceled, 0, context.Canceled, nil},
		{"canceled, deadline far", fixedCtx{canceled, t0.Add(time.Hour)}, time.Second, context.Canceled, nil},
	}
	for _, tt := range tests {
		err := checkAt(tt.ctx, tt.need, t0)
		if tt.want == nil {
			if err != nil {
				t.Errorf("%s: checkAt = %v; want nil", tt.name, err)
			}
			continue
		}
		if !errors.Is(err, tt.want) {
			t.Errorf("%s: checkAt = %v; want %v", tt.name, err, tt.want)
		}
		if tt.want != ErrTooClose && err != tt.want {
			t.Errorf("%s: checkAt = %#v; want %v itself, unwrapped", tt.name, err, tt.want)
		}
		var tc *tooCloseError
		if errors.As(err, &tc) != (tt.too != nil) || (tt.too != nil && *tc != *tt.too) {
			t.Errorf("%s: checkAt = %#v; want %#v", tt.name, err, tt.too)
		}
	}
}

func TestTooCloseError(t *testing.T) {
	err := error(&tooCloseError{Remaining: 40 * time.Millisecond, Need: 200 * time.Millisecond})
	if got, want := err.Error(), "deadline: 40ms left, step needs 200ms"; got != want {
		t.Errorf("Error() = %q; want %q", got, want)
	}
	if !errors.Is(err, ErrTooClose) {
		t.Error("does not match ErrTooClose")
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, wire.ErrBadHeader) {
		t.Error("matches an unrelated sentinel")
	}
	if got := (&tooCloseError{}).Error(); got != "deadline: 0s left, step needs 0s" {
		t.Errorf("zero value Error() = %q", got)
	}
}

func TestCheck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := Check(ctx, time.Second); err != nil {
			t.Fatalf("at start: Check(1s) = %v", err)
		}
		time.Sleep(960 * time.Millisecond)
		err := Check(ctx, 200*time.Millisecond)
		var tc *tooCloseError
		if !errors.As(err, &tc) || *tc != (tooCloseError{40 * time.Millisecond, 200 * time.Millisecond}) {
			t.Fatalf("after 960ms: Check(200ms) = %v; want 40ms left, needs 200ms", err)
		}
		if err.Error() != "deadline: 40ms left, step needs 200ms" {
			t.Fatalf("message = %q", err)
		}
		if err := Check(ctx, 40*time.Millisecond); err != nil {
			t.Fatalf("after 960ms: Check(40ms) = %v", err)
		}
		if d, ok := Remaining(ctx); d != 40*time.Millisecond || !ok {
			t.Fatalf("Remaining = %v, %v", d, ok)
		}
		time.Sleep(40 * time.Millisecond)
		synctest.Wait()
		if err := Check(ctx, 0); err != context.DeadlineExceeded {
			t.Fatalf("after deadline: Check = %v; want context.DeadlineExceeded", err)
		}
		if d, ok := Remaining(ctx); d != 0 || !ok {
			t.Fatalf("after deadline: Remaining = %v, %v", d, ok)
		}

		cctx, ccancel := context.WithCancel(context.Background())
		ccancel()
		if err := Check(cctx, time.Hour); err != context.Canceled {
			t.Fatalf("canceled: Check = %v", err)
		}
		if err := Check(context.Background(), time.Hour); err != nil {
			t.Fatalf("no deadline: Check = %v", err)
		}
		if d, ok := Remaining(context.Background()); d != 0 || ok {
			t.Fatalf("no deadline: Remaining = %v, %v", d, ok)
		}
	})
}

func TestStep(t *testing.T) {
	type parent struct {
		timeout  time.Duration // 0: no deadline
		canceled bool
	}
	tests := []struct {
		name   string
		parent parent
		budget time.Duration
		want   time.Duration // step deadline relative to now; -1: none
	}{
		{"budget shorter than parent", parent{timeout: time.Second}, 300 * time.Millisecond, 300 * time.Millisecond},
		{"parent shorter than budget", parent{timeout: 100 * time.Millisecond}, 300 * time.Millisecond, 100 * time.Millisecond},
		{"equal", parent{timeout: time.Second}, time.Second, time.Second},
		{"no parent deadline", parent{}, 300 * time.Millisecond, 300 * time.Millisecond},
		{"zero budget keeps parent", parent{timeout: time.Second}, 0, time.Second},
		{"negative budget keeps parent", parent{timeout: time.Second}, -time.Second, time.Second},
		{"zero budget, no deadline", parent{}, 0, -1},
		{"huge budget", parent{timeout: time.Second}, math.MaxInt64, time.Second},
		{"huge budget, no deadline", parent{}, math.MaxInt64, math.MaxInt64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := context.Background()
				if tt.parent.timeout > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tt.parent.timeout)
					defer cancel()
				}
				start := time.Now()
				step, cancel := Step(ctx, tt.budget)
				defer cancel()
				dl, ok := step.Deadline()
				switch {
				case tt.want < 0:
					if ok {
						t.Fatalf("step deadline %v; want none", dl.Sub(start))
					}
					return
				case !ok:
					t.Fatalf("step has no deadline; want %v", tt.want)
				case tt.want == math.MaxInt64:
					if !dl.After(start.AddDate(200, 0, 0)) {
						t.Fatalf("step deadline %v; want effectively none", dl)
					}
					return
				case dl.Sub(start) != tt.want:
					t.Fatalf("step deadline %v; want %v", dl.Sub(start), tt.want)
				}
				time.Sleep(tt.want - 1)
				synctest.Wait()
				if err := step.Err(); err != nil {
					t.Fatalf("step done 1ns early: %v", err)
				}
				time.Sleep(1)
				synctest.Wait()
				if err := step.Err(); err != context.DeadlineExceeded {
					t.Fatalf("step after its deadline: Err = %v", err)
				}
				if parentDone := ctx.Err() != nil; parentDone != (tt.parent.timeout == tt.want) {
					t.Fatalf("parent Err = %v at %v", ctx.Err(), tt.want)
				}
			})
		})
	}
}

func TestStepCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		for _, budget := range []time.Duration{0, 100 * time.Millisecond} {
			step, stepCancel := Step(ctx, budget)
			stepCancel()
			if step.Err() != context.Canceled || ctx.Err() != nil {
				t.Fatalf("budget %v: canceling the step: step %v, parent %v", budget, step.Err(), ctx.Err())
			}
		}

		pctx, pcancel := context.WithCancel(context.Background())
		step, stepCancel := Step(pctx, time.Second)
		defer stepCancel()
		pcancel()
		if step.Err() != context.Canceled {
			t.Fatalf("canceling the parent: step %v", step.Err())
		}
	})
}

func BenchmarkCheck(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	b.ReportAllocs()
	for b.Loop() {
		if err := Check(ctx, time.Second); err != nil {
			b.Fatal(err)
		}
	}
}
