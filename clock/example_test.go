package clock_test

import (
	"fmt"
	"time"

	"github.com/heed-go/heed/clock"
	"github.com/heed-go/heed/clock/clocktest"
)

// Code that takes a clock.Clock runs on real time when given nil, and on a
// fake clock in tests.
func ExampleClock() {
	fake := clocktest.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	var c clock.Clock = fake
	t := c.NewTimer(time.Minute)
	fake.Advance(time.Minute)
	fmt.Println((<-t.C()).Format(time.TimeOnly))
	fmt.Println(clock.Or(nil) == clock.Real{})
	// Output:
	// 00:01:00
	// true
}
