package stripe

import (
	"sync"
	"testing"
)

func TestOfInRange(t *testing.T) {
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for range 1000 {
				if s := Of(); s < 0 || s >= N {
					t.Errorf("Of() = %d, want [0, %d)", s, N)
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestOfSticks: one goroutine, with nothing else running, keeps to one
// stripe while it stays on its processor. The race detector empties
// sync.Pools at random, so the check is skipped under it.
func TestOfSticks(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops values at random under the race detector")
	}
	// A garbage collection or a move to another P changes the stripe
	// now and then; a hint that changed often would be no hint at all.
	prev, changes := Of(), 0
	for range 1000 {
		if s := Of(); s != prev {
			prev = s
			changes++
		}
	}
	if changes > 20 {
		t.Fatalf("the stripe changed %d times in 1000 calls", changes)
	}
}

func TestOfNoAllocs(t *testing.T) {
	if n := testing.AllocsPerRun(1000, func() { _ = Of() }); n != 0 {
		t.Fatalf("%v allocs per call", n)
	}
}

func BenchmarkOf(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = Of()
	}
}
