package budget_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/heed-go/heed/budget"
	"github.com/heed-go/heed/clock/clocktest"
)

// A budget with the defaults in a total outage of 100 requests a second,
// each failing and asking for a retry: the bucket's 5 retries go at once,
// then each request adds 0.09 of a retry. No second sees more than
// 1 + Ratio + Burst/100 = 1.14 times its requests, and the outage as a
// whole 1 + Ratio + Burst/1,000 = 1.095 times (1.09 in the long run).
func Example() {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	clk := clocktest.New(t0) // what Stats reads; a program leaves Clock nil
	b, err := budget.New(budget.Config{Clock: clk})
	if err != nil {
		panic(err)
	}
	total := 0
	for sec := range 10 {
		granted := 0
		for i := range 100 {
			now := t0.Add(time.Duration(sec)*time.Second + time.Duration(i)*10*time.Millisecond)
			b.RequestAt(now)
			if b.AllowRetryAt(now) {
				granted++
			}
		}
		total += granted
		fmt.Print(granted, " ")
	}
	fmt.Println("=", total)
	clk.Set(t0.Add(9 * time.Second))
	fmt.Printf("%+v\n", b.Stats())
	// Output:
	// 13 9 9 9 9 9 9 9 9 9 = 94
	// {Requests:1000 Retries:94 Denied:906 Succeeded:0}
}

// A new process may retry its first failures: five calls to endpoints that
// answer 503, 503, 200 all get through, each taking two retries, because a
// retry that succeeds puts three back.
func Example_coldStart() {
	b, _ := budget.New(budget.Config{})
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	served := 0
	for range 5 {
		b.RequestAt(now) // the first attempt: 503
		if b.AllowRetryAt(now) && b.AllowRetryAt(now) {
			b.RetrySucceededAt(now) // the second retry: 200
			served++
		}
		now = now.Add(100 * time.Millisecond)
	}
	fmt.Println("served:", served, "of 5")
	// Output:
	// served: 5 of 5
}

// Retries that succeed pay for themselves: when half of the calls fail at
// random, a retry is as likely to work as a first attempt, and every failed
// call gets its retry. Here every other retry succeeds.
func Example_partialOutage() {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	clk := clocktest.New(t0)
	b, _ := budget.New(budget.Config{Clock: clk})
	for sec := range 6 {
		granted := 0
		for i := range 100 {
			now := t0.Add(time.Duration(sec)*time.Second + time.Duration(i)*10*time.Millisecond)
			b.RequestAt(now)
			if i%2 == 0 {
				continue // the first attempt worked
			}
			if b.AllowRetryAt(now) {
				granted++
				if granted%2 == 0 {
					b.RetrySucceededAt(now)
				}
			}
		}
		if sec > 0 {
			fmt.Print(" ")
		}
		fmt.Print(granted)
	}
	fmt.Println()
	clk.Set(t0.Add(5 * time.Second))
	fmt.Printf("%+v\n", b.Stats())
	// Output:
	// 50 50 50 50 50 50
	// {Requests:600 Retries:300 Denied:0 Succeeded:150}
}

// A durable job refused a retry is rescheduled for RefillAt: when the
// bucket next holds a whole retry. With no requests, the floor refills one
// retry a second.
func ExampleBudget_RefillAt() {
	b, _ := budget.New(budget.Config{})
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	for b.AllowRetryAt(t0) {
	}
	next := b.RefillAt(t0)
	fmt.Println(next.Sub(t0), b.AllowRetryAt(next))
	// Output:
	// 1s true
}

// Requests and retries leave the window after Window, in steps of
// Window/10.
func ExampleBudget_Stats() {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	clk := clocktest.New(t0)
	b, _ := budget.New(budget.Config{Window: 10 * time.Second, Clock: clk})
	for range 4 {
		b.Request()
	}
	clk.Advance(time.Second)
	b.AllowRetry()
	for _, at := range []time.Duration{9, 10, 11} {
		clk.Set(t0.Add(at * time.Second))
		fmt.Printf("at %ds: %+v\n", at, b.Stats())
	}
	// Output:
	// at 9s: {Requests:4 Retries:1 Denied:0 Succeeded:0}
	// at 10s: {Requests:0 Retries:1 Denied:0 Succeeded:0}
	// at 11s: {Requests:0 Retries:0 Denied:0 Succeeded:0}
}

// For returns the process's budget for a destination: every client that
// calls the same host and port with the same config shares it, so a client
// object made per call still spends one budget. A negative Ratio is no
// budget.
func ExampleFor() {
	a, _ := budget.For("orders.internal:443", budget.Config{})
	b, _ := budget.For("orders.internal:443", budget.Config{})
	off, err := budget.For("orders.internal:443", budget.Config{Ratio: -1})
	fmt.Println(a == b, off == nil, err)
	// Output:
	// true true <nil>
}

// New names the bad field, and the error matches ErrInvalid. Burst is the
// size of the bucket in retries: a share of the window, as it was before,
// is an error that says so.
func ExampleNew_invalid() {
	_, err := budget.New(budget.Config{Burst: 0.15})
	fmt.Println(err)
	fmt.Println(errors.Is(err, budget.ErrInvalid))
	// Output:
	// budget: Burst is 0.15, must be at least 1: it is the number of retries the bucket holds (default 5), no longer a share of the window
	// true
}
