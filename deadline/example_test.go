package deadline_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/heed-go/heed/deadline"
)

// Bound one attempt by its own budget and by the caller's deadline,
// whichever comes first.
func ExampleStep() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()

	// The step budget (2s) is shorter than the time left (1h), so it applies.
	step, stepCancel := deadline.Step(ctx, 2*time.Second)
	defer stepCancel()
	left, _ := deadline.Remaining(step)
	fmt.Println("step bounded by its budget:", left <= 2*time.Second)

	// A budget of 0 means no step limit: only the caller's deadline applies.
	whole, wholeCancel := deadline.Step(ctx, 0)
	defer wholeCancel()
	stepDL, _ := whole.Deadline()
	parentDL, _ := ctx.Deadline()
	fmt.Println("zero budget keeps the parent deadline:", stepDL.Equal(parentDL))
	// Output:
	// step bounded by its budget: true
	// zero budget keeps the parent deadline: true
}

// Fail fast instead of starting work that cannot finish in time.
func ExampleCheck() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()

	// A step that needs a minute cannot finish within a second.
	err := deadline.Check(ctx, time.Minute)
	fmt.Println("too close:", errors.Is(err, deadline.ErrTooClose))

	err = deadline.Check(ctx, time.Millisecond)
	fmt.Println("short step:", err)

	err = deadline.Check(context.Background(), time.Minute)
	fmt.Println("no deadline:", err)
	// Output:
	// too close: true
	// short step: <nil>
	// no deadline: <nil>
}

func ExampleRemainingAt() {
	now := time.Now()
	ctx, cancel := context.WithDeadline(context.Background(), now.Add(1500*time.Millisecond))
	defer cancel()

	fmt.Println(deadline.RemainingAt(ctx, now))
	fmt.Println(deadline.RemainingAt(context.Background(), now))
	// Output:
	// 1.5s true
	// 0s false
}
