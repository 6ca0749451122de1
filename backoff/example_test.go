package backoff_test

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/heed-go/heed/backoff"
)

// The zero Schedule is exponential from 100 ms, doubling, capped at 5 s,
// with full jitter. Delay gives the top of each jittered range.
func ExampleSchedule() {
	var s backoff.Schedule
	for n := 1; n <= 8; n++ {
		fmt.Print(s.Delay(n), " ")
	}
	fmt.Println()
	// Output: 100ms 200ms 400ms 800ms 1.6s 3.2s 5s 5s
}

// A seeded source reproduces a jittered schedule exactly.
func ExampleSchedule_Next() {
	s := backoff.Schedule{Base: time.Second, Cap: 30 * time.Second, Jitter: backoff.EqualJitter}
	a := rand.NewPCG(1, 2)
	b := rand.NewPCG(1, 2)
	for n := 1; n <= 4; n++ {
		x, y := s.Next(n, 0, a), s.Next(n, 0, b)
		lo, hi := s.Range(n, 0)
		fmt.Println(x == y, x >= lo && x <= hi, lo, hi)
	}
	// Output:
	// true true 500ms 1s
	// true true 1s 2s
	// true true 2s 4s
	// true true 4s 8s
}

// Invalid schedules are reported with the field's name.
func ExampleSchedule_Validate() {
	s := backoff.Schedule{Base: time.Second, Cap: time.Millisecond}
	fmt.Println(s.Validate())
	// Output: backoff: Cap is 1ms, below Base 1s
}
