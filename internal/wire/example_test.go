package wire_test

import (
	"context"
	"fmt"
	"time"

	"github.com/heed-go/heed/deadline"
	"github.com/heed-go/heed/internal/wire"
)

func ExampleFormatHeader() {
	fmt.Println(wire.FormatHeader(3200 * time.Millisecond))
	fmt.Println(wire.FormatHeader(2 * time.Second))
	// Not exact: the finest unit that fits in 8 digits, rounded down.
	fmt.Println(wire.FormatHeader(2999873412 * time.Nanosecond))
	fmt.Println(wire.FormatHeader(0))
	// Output:
	// 3200ms
	// 2s
	// 2999873us
	// 0ms
}

func ExampleParseHeader() {
	for _, v := range []string{"3200ms", "2s", "12.5s", "-1s", "1S", "123456789ms"} {
		d, err := wire.ParseHeader(v)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Println(d)
	}
	// Output:
	// 3.2s
	// 2s
	// deadline: Timeout-Remaining "12.5s": fraction not allowed
	// deadline: Timeout-Remaining "-1s": sign not allowed
	// deadline: Timeout-Remaining "1S": unknown unit "S" (want h, m, s, ms, us or ns; units are case-sensitive)
	// deadline: Timeout-Remaining "123456789ms": more than 8 digits
}

// Forward the time left to the next hop, and read it back on the other side.
func Example_header() {
	now := time.Now()
	ctx, cancel := context.WithDeadline(context.Background(), now.Add(3200*time.Millisecond))
	defer cancel()

	left, ok := deadline.RemainingAt(ctx, now)
	if ok {
		value := wire.FormatHeader(left)
		fmt.Println(wire.Header+":", value)

		got, err := wire.ParseHeader(value)
		fmt.Println(got, err)
	}
	// Output:
	// Timeout-Remaining: 3200ms
	// 3.2s <nil>
}

// A server outside Middleware (a gRPC interceptor, a queue consumer)
// records the attempt number its caller sent, so that the heed clients it
// calls under the context make one attempt (the caller owns the retries)
// and send that number on: a server further down tells the user's retry
// from a first attempt, and refuses it first under overload.
func ExampleWithUpstreamAttempt() {
	ctx := wire.WithUpstreamAttempt(context.Background(), 2)
	fmt.Println(deadline.UpstreamOwns(ctx), wire.UpstreamAttempt(ctx))
	// An attempt number already recorded further up is kept if larger.
	fmt.Println(wire.UpstreamAttempt(wire.WithUpstreamAttempt(ctx, 1)))
	// Output:
	// true 2
	// 2
}
