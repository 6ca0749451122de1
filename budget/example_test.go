package budget_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/heed-go/heed/budget"
)

// A budget with the defaults: 10% of the requests plus 1 retry per second,
// over a 10 s window. After 100 requests, 10 + 10 retries fit. Requests
// count towards the limit once their bucket (a tenth of the window) is
// complete, so the retries here come a second later.
func Example() {
	b, err := budget.New(budget.Config{})
	if err != nil {
		panic(err)
	}
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	for i := range 1000 {
		b.RequestAt(t0.Add(time.Duration(i) * time.Millisecond))
	}
	// From 1 s, the 1000 requests allow 0.1 × 1000 + 10 (the floor) = 110
	// retries per window, 15% of them (16) in any one second: 25 retries
	// asked for every second get 16 a second until the 110 are spent.
	for sec := 1; sec <= 9; sec++ {
		if sec > 1 {
			fmt.Print(" ")
		}
		granted := 0
		for range 25 {
			if b.AllowRetryAt(t0.Add(time.Duration(sec) * time.Second)) {
				granted++
			}
		}
		fmt.Print(granted)
	}
	fmt.Println()
	fmt.Printf("%+v\n", b.StatsAt(t0.Add(9*time.Second)))
	// Output:
	// 16 16 16 16 16 16 14 0 0
	// {Requests:1000 Retries:110 Denied:115}
}

// Requests and retries leave the window after Window (in steps of
// Window/10), and the budget refills. Requests count towards the limit
// from the end of their step: the retry at t0 finds none. (Burst 1 lets one
// step spend the whole window's allowance, to show the window alone.)
func ExampleBudget_StatsAt() {
	b, _ := budget.New(budget.Config{Ratio: 0.5, Window: 10 * time.Second, MinPerSecond: budget.None, Burst: 1})
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	for range 4 {
		b.RequestAt(t0)
	}
	t1 := t0.Add(time.Second)
	fmt.Println(b.AllowRetryAt(t0), b.AllowRetryAt(t1), b.AllowRetryAt(t1), b.AllowRetryAt(t1))
	fmt.Printf("at 9s:  %+v\n", b.StatsAt(t0.Add(9*time.Second)))
	fmt.Printf("at 10s: %+v\n", b.StatsAt(t0.Add(10*time.Second)))
	fmt.Printf("at 11s: %+v\n", b.StatsAt(t0.Add(11*time.Second)))
	// Output:
	// false true true false
	// at 9s:  {Requests:4 Retries:2 Denied:2}
	// at 10s: {Requests:0 Retries:2 Denied:1}
	// at 11s: {Requests:0 Retries:0 Denied:0}
}

// A floor-only budget grants a fixed number of retries per window, whatever
// the traffic: here 2 per second over 5 s, so 10, one per step of 0.5 s.
func ExampleNone() {
	b, _ := budget.New(budget.Config{Ratio: budget.None, Window: 5 * time.Second, MinPerSecond: 2})
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	granted := 0
	for i := range 1000 {
		now := t0.Add(time.Duration(i) * 5 * time.Millisecond)
		b.RequestAt(now)
		if b.AllowRetryAt(now) {
			granted++
		}
	}
	fmt.Println("granted:", granted)
	// Output:
	// granted: 10
}

// New names the bad field, and the error matches ErrInvalid.
func ExampleNew_invalid() {
	_, err := budget.New(budget.Config{Ratio: -0.5})
	fmt.Println(err)
	fmt.Println(errors.Is(err, budget.ErrInvalid))
	// Output:
	// budget: Ratio is -0.5, must not be negative
	// true
}
