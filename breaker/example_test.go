package breaker_test

import (
	"fmt"
	"time"

	"github.com/heed-go/heed/breaker"
)

// A breaker opens when failures dominate its window, refuses calls for the
// cooldown, lets a probe through, and closes when the probes succeed. The
// At methods take the time as an argument, so this runs over fixed instants.
func Example() {
	start := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	b, err := breaker.New(breaker.Config{
		MinCalls: 4,               // tiny, for the example; the default is 20
		Cooldown: 5 * time.Second, // the default
		Probes:   1,
		OnStateChange: func(from, to breaker.State, at time.Time) {
			fmt.Printf("  %s -> %s at +%v\n", from, to, at.Sub(start))
		},
	})
	if err != nil {
		panic(err)
	}

	call := func(after time.Duration, o breaker.Outcome) {
		now := start.Add(after)
		p, err := b.AllowAt(now)
		if err != nil {
			fmt.Printf("+%v: refused: %v\n", after, err)
			return
		}
		fmt.Printf("+%v: admitted, %s\n", after, o)
		p.RecordAt(now, o)
	}

	call(0, breaker.Success)
	call(1*time.Second, breaker.Failure)
	call(2*time.Second, breaker.Failure)
	call(3*time.Second, breaker.Failure) // 3 of 4 failed: opens
	call(4*time.Second, breaker.Success) // refused without calling
	fmt.Println("state at +7s:", b.StateAt(start.Add(7*time.Second)))
	fmt.Println("state at +8s:", b.StateAt(start.Add(8*time.Second))) // cooldown over
	call(8*time.Second, breaker.Success)                              // the probe
	call(9*time.Second, breaker.Success)

	// Output:
	// +0s: admitted, success
	// +1s: admitted, failure
	// +2s: admitted, failure
	// +3s: admitted, failure
	//   closed -> open at +3s
	// +4s: refused: breaker: circuit open
	// state at +7s: open
	// state at +8s: half-open
	//   open -> half-open at +8s
	// +8s: admitted, success
	//   half-open -> closed at +8s
	// +9s: admitted, success
}

// A probe that fails opens the breaker again for a fresh cooldown, and while
// the probe is out, other calls are refused.
func ExampleBreaker_AllowAt_probe() {
	start := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	b, _ := breaker.New(breaker.Config{MinCalls: 2, Probes: 1})
	for range 2 {
		p, _ := b.AllowAt(start)
		p.RecordAt(start, breaker.Failure)
	}
	fmt.Println("after two failures:", b.StateAt(start))

	probeAt := start.Add(5 * time.Second)
	probe, err := b.AllowAt(probeAt)
	fmt.Println("probe admitted:", err == nil)
	_, err = b.AllowAt(probeAt)
	fmt.Println("second call:", err)

	probe.RecordAt(probeAt.Add(time.Second), breaker.Failure)
	fmt.Println("after the probe failed:", b.StateAt(probeAt.Add(time.Second)))
	fmt.Println("5s later:", b.StateAt(probeAt.Add(6*time.Second)))

	// Output:
	// after two failures: open
	// probe admitted: true
	// second call: breaker: circuit open
	// after the probe failed: open
	// 5s later: half-open
}

// Allow and Record read the clock themselves; this is how most callers use a
// breaker around a call.
func ExamplePermit_Record() {
	b, _ := breaker.New(breaker.Config{})
	call := func() error { return nil } // the protected call

	p, err := b.Allow()
	if err != nil {
		fmt.Println("not calling:", err)
		return
	}
	if err := call(); err != nil {
		p.Record(breaker.Failure)
	} else {
		p.Record(breaker.Success)
	}
	fmt.Println(b.State(), b.Counts().Successes)

	// Output:
	// closed 1
}
