package clocktest_test

import (
	"fmt"
	"time"

	"github.com/heed-go/heed/clock/clocktest"
)

// A fake clock moves only when the test advances it; timers fire when
// their time comes.
func ExampleClock() {
	c := clocktest.New(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	t := c.NewTimer(500 * time.Millisecond)
	c.Advance(499 * time.Millisecond)
	select {
	case <-t.C():
		fmt.Println("fired early")
	default:
		fmt.Println("not yet;", c.Timers(), "timer waiting")
	}
	c.Advance(time.Millisecond)
	fmt.Println("fired at", (<-t.C()).Format("15:04:05.000"))
	// Output:
	// not yet; 1 timer waiting
	// fired at 12:00:00.500
}
