package retry_test

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"time"

	"github.com/heed-go/heed/backoff"
	"github.com/heed-go/heed/breaker"
	"github.com/heed-go/heed/budget"
	"github.com/heed-go/heed/clock/clocktest"
	"github.com/heed-go/heed/retry"
)

// A call that fails twice with a transient error, then succeeds.
func ExampleDo() {
	calls := 0
	err := retry.Do(context.Background(), retry.Policy{
		Backoff: backoff.Schedule{Base: time.Millisecond}, // short for the example
	}, func(ctx context.Context) error {
		calls++
		if calls < 3 {
			return retry.Transient(errors.New("connection reset"))
		}
		return nil
	})
	fmt.Println(err, calls)
	// Output: <nil> 3
}

// Policy.Observe sees every decision of a call, the success included:
// here two retries, then the success.
func ExamplePolicy_observe() {
	calls := 0
	err := retry.Do(context.Background(), retry.Policy{
		Backoff: backoff.Schedule{Base: time.Millisecond, Jitter: backoff.NoJitter}, // short for the example
		Observe: func(_ context.Context, ev retry.Event) { fmt.Println(ev.Decision) },
	}, func(ctx context.Context) error {
		calls++
		if calls < 3 {
			return retry.Transient(errors.New("connection reset"))
		}
		return nil
	})
	fmt.Println(err)
	// Output:
	// attempt 1: connection reset, retry in 1ms
	// attempt 2: connection reset, retry in 2ms
	// attempt 3: ok
	// <nil>
}

// A permanent error ends the call at once; the error returned wraps it.
func ExampleDo_permanent() {
	errNotFound := errors.New("user not found")
	calls := 0
	err := retry.Do(context.Background(), retry.Policy{}, func(ctx context.Context) error {
		calls++
		return retry.Permanent(errNotFound)
	})
	fmt.Println(calls, errors.Is(err, errNotFound), errors.Is(err, retry.ErrExhausted))
	fmt.Println(err)
	// Output:
	// 1 true true
	// retry: gave up after 1 attempt (permanent error): user not found
}

// By default only errors known to be transient are retried. One line makes
// a policy retry every error.
func ExamplePolicy_retryEveryError() {
	p := retry.Policy{
		Attempts:  4,
		Backoff:   backoff.Schedule{Kind: backoff.Immediate},
		Retryable: func(error) bool { return true },
	}
	calls := 0
	err := retry.Do(context.Background(), p, func(ctx context.Context) error {
		calls++
		return errors.New("boom")
	})
	fmt.Println(calls, err)
	// Output: 4 retry: gave up after 4 attempts (attempts exhausted): boom
}

func ExampleDoValue() {
	n := 0
	v, err := retry.DoValue(context.Background(), retry.Policy{
		Backoff: backoff.Schedule{Kind: backoff.Immediate},
	}, func(ctx context.Context) (string, error) {
		n++
		if n == 1 {
			return "", retry.Transient(errors.New("busy"))
		}
		return "hello", nil
	})
	fmt.Println(v, err)
	// Output: hello <nil>
}

// The error returned on give-up carries the trace of the call: every
// decision with its reason.
func ExampleExhaustedError() {
	err := retry.Do(context.Background(), retry.Policy{
		Backoff: backoff.Schedule{Kind: backoff.Immediate},
	}, func(ctx context.Context) error {
		return retry.Transient(errors.New("503 Service Unavailable"))
	})
	var ex *retry.ExhaustedError
	if errors.As(err, &ex) {
		fmt.Println(ex.Reason, ex.Attempts)
		fmt.Println(ex.TraceString())
	}
	// Output:
	// attempts exhausted 3
	// attempt 1: 503 Service Unavailable, retry in 0s
	// attempt 2: 503 Service Unavailable, retry in 0s
	// attempt 3: 503 Service Unavailable, gave up: attempts exhausted
}

// Decide is pure: the same policy, history, error and instant give the
// same decision. Here the server asks for 2 s but only 1.5 s are left.
func ExampleDecide() {
	p := retry.Policy{Backoff: backoff.Schedule{Base: 100 * time.Millisecond, Jitter: backoff.NoJitter}}
	start := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	h := retry.History{Attempts: 1, Start: start, Deadline: start.Add(2 * time.Second)}
	now := start.Add(500 * time.Millisecond)

	d := retry.Decide(&p, h, retry.Transient(errors.New("timeout")), now, nil)
	fmt.Println(d.Action, d.Reason, d.Delay)

	d = retry.Decide(&p, h, retry.After(2*time.Second, errors.New("429 Too Many Requests")), now, nil)
	fmt.Println(d.Action, d.Reason, d.Delay)
	fmt.Println(d)
	// Output:
	// retry transient error 100ms
	// give up deadline too close 2s
	// attempt 1: 429 Too Many Requests, gave up: deadline too close
}

// LogObserver writes one structured record per attempt.
func ExampleLogObserver() {
	h := slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		Level: slog.LevelDebug,
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			switch a.Key {
			case slog.TimeKey, "elapsed", "duration": // vary from run to run
				return slog.Attr{}
			}
			return a
		},
	})
	p := retry.Policy{
		Backoff: backoff.Schedule{Kind: backoff.Immediate},
		Observe: retry.LogObserver(slog.New(h), "fetch-user"),
	}
	n := 0
	_ = retry.Do(context.Background(), p, func(ctx context.Context) error {
		n++
		if n == 1 {
			return retry.Transient(errors.New("connection refused"))
		}
		return nil
	})
	// Output:
	// level=INFO msg="retry attempt" op=fetch-user attempt=1 outcome=transient decision=retry reason="transient error" delay=0s error="connection refused"
	// level=DEBUG msg="retry attempt" op=fetch-user attempt=2 outcome=success decision=done reason=success delay=0s
}

// A retry budget and a circuit breaker are shared by every call to one
// dependency. During an outage the budget keeps retries to its bucket of 5
// and about 10% of the calls, and once the breaker opens, calls fail fast without reaching the
// dependency at all. (A fake clock moves 100 ms between calls.)
func ExamplePolicy_budgetAndBreaker() {
	clk := clocktest.New(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	b, _ := budget.New(budget.Config{Ratio: 0.1, MinPerSecond: -1})
	br, _ := breaker.New(breaker.Config{MinCalls: 50, FailureRatio: 0.5, Cooldown: time.Minute})
	p := retry.Policy{Backoff: backoff.Schedule{Kind: backoff.Immediate}, Budget: b, Breaker: br, Clock: clk}

	attempts := 0
	reasons := map[retry.Reason]int{}
	for range 100 {
		clk.Advance(100 * time.Millisecond)
		err := retry.Do(context.Background(), p, func(ctx context.Context) error {
			attempts++
			return retry.Transient(errors.New("503 Service Unavailable"))
		})
		var ex *retry.ExhaustedError
		if errors.As(err, &ex) {
			reasons[ex.Reason]++
		}
	}
	fmt.Println("attempts reaching the dependency:", attempts)
	fmt.Println("gave up, retry budget empty:", reasons[retry.ReasonBudget])
	fmt.Println("gave up, attempts exhausted:", reasons[retry.ReasonAttempts])
	fmt.Println("refused by the open breaker:", reasons[retry.ReasonBreakerOpen])
	// Output:
	// attempts reaching the dependency: 50
	// gave up, retry budget empty: 39
	// gave up, attempts exhausted: 2
	// refused by the open breaker: 59
}

// An executor of its own (here, one that keeps its work in a list and
// waits by moving a virtual clock) takes every step through retry.Call:
// admission, the attempt's limit, the outcome, the decision. A durable
// call is deferred, not ended, while the breaker is open; here the first
// probe fails, the breaker opens again, and the retry waits another
// cooldown.
func ExampleCall() {
	b, _ := breaker.New(breaker.Config{MinCalls: 1, Cooldown: 10 * time.Second, Probes: 1})
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	permit, _ := b.AllowAt(now)
	permit.RecordAt(now, breaker.Failure) // someone else saw the dependency fail

	c := retry.Call{
		Policy:  retry.Policy{Breaker: b, AttemptTimeout: 2 * time.Second, Backoff: backoff.Schedule{Jitter: backoff.NoJitter}},
		Durable: true,
	}
	results := []error{retry.Transient(errors.New("503")), nil}
	for {
		lim, ok := c.Admit(now)
		if !ok {
			d := c.Last()
			fmt.Println(d.Action, "for", d.Reason.Key(), "until", d.At.Format(time.TimeOnly))
			now = d.At
			continue
		}
		fmt.Println("attempt", c.History.Attempts+1, "must end by", lim.At.Format(time.TimeOnly))
		d := c.End(now, retry.Result{Err: results[0]})
		results = results[1:]
		fmt.Println(d.Action, d.Reason.Key(), d.Delay)
		if d.Action != retry.Retry {
			break
		}
		now = d.At
	}
	// Output:
	// defer for breaker_open until 12:00:10
	// attempt 1 must end by 12:00:12
	// retry transient 100ms
	// defer for breaker_open until 12:00:20
	// attempt 2 must end by 12:00:22
	// done success 0s
}

// The default classifier knows the network: an EOF that net/http returns
// for a server that closed without answering is transient, the same EOF
// returned by the application's own reader is not, and neither is a plain
// error that says nothing of itself.
func ExampleIsTransient() {
	closed := &url.Error{Op: "Get", URL: "http://inventory/items", Err: io.EOF}
	fmt.Println(retry.IsTransient(closed))
	fmt.Println(retry.IsTransient(fmt.Errorf("decode config: %w", io.EOF)))
	fmt.Println(retry.IsTransient(io.ErrUnexpectedEOF)) // a cut response body
	fmt.Println(retry.IsTransient(driver.ErrBadConn))
	fmt.Println(retry.IsTransient(errors.New("invoice 42 is closed")))
	// Output:
	// true
	// false
	// true
	// true
	// false
}
