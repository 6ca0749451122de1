package budget_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/heed-go/heed/budget"
)

// A budget with the defaults in a total outage: 10% of the requests over a
// 10 s window. After 10 s of healthy traffic, 100 requests a second, each
// failing and asking for a retry, get 1 retry per 10 requests over the
// window; no second spends more than 15% of the window's allowance.
func Example() {
	b, err := budget.New(budget.Config{})
	if err != nil {
		panic(err)
	}
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	for i := range 1000 { // healthy: no retries
		b.RequestAt(t0.Add(time.Duration(i) * 10 * time.Millisecond))
	}
	t0 = t0.Add(10 * time.Second)
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
	fmt.Printf("%+v\n", b.StatsAt(t0.Add(9*time.Second)))
	// Output:
	// 15 15 15 15 15 15 10 0 0 0 = 100
	// {Requests:1000 Retries:100 Denied:900 Succeeded:0}
}

// Retries that succeed earn more: when half of the calls fail at random, a
// retry is as likely to work as a first attempt, each success earns two
// more, and the budget grows to what the calls ask for (within the step:
// successes count at once), up to 1 retry per request. Here every other
// retry succeeds, and every failed call gets its retry.
func Example_partialOutage() {
	b, _ := budget.New(budget.Config{})
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	for i := range 1000 { // healthy: no retries
		b.RequestAt(t0.Add(time.Duration(i) * 10 * time.Millisecond))
	}
	t0 = t0.Add(10 * time.Second)
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
	fmt.Printf("%+v\n", b.StatsAt(t0.Add(5*time.Second)))
	// Output:
	// 50 50 50 50 50 50
	// {Requests:1000 Retries:300 Denied:0 Succeeded:150}
}

// Requests and retries leave the window after Window (in steps of
// Window/10), and the budget refills. (Burst 1 lets one step spend the
// whole window's allowance, to show the window alone; MinPerSecond -1 turns
// the floor off.)
func ExampleBudget_StatsAt() {
	b, _ := budget.New(budget.Config{Ratio: 0.5, Window: 10 * time.Second, MinPerSecond: -1, Burst: 1})
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	for range 4 {
		b.RequestAt(t0)
	}
	t1 := t0.Add(time.Second)
	fmt.Println(b.AllowRetryAt(t1), b.AllowRetryAt(t1), b.AllowRetryAt(t1))
	fmt.Printf("at 9s:  %+v\n", b.StatsAt(t0.Add(9*time.Second)))
	fmt.Printf("at 10s: %+v\n", b.StatsAt(t0.Add(10*time.Second)))
	fmt.Printf("at 11s: %+v\n", b.StatsAt(t0.Add(11*time.Second)))
	// Output:
	// true true false
	// at 9s:  {Requests:4 Retries:2 Denied:1 Succeeded:0}
	// at 10s: {Requests:0 Retries:2 Denied:1 Succeeded:0}
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

// New names the bad field, and the error matches ErrInvalid.
func ExampleNew_invalid() {
	_, err := budget.New(budget.Config{Burst: 2})
	fmt.Println(err)
	fmt.Println(errors.Is(err, budget.ErrInvalid))
	// Output:
	// budget: Burst is 2, must be from 0 to 1
	// true
}
