package stripe_test

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/heed-go/heed/internal/stripe"
)

// A counter that goroutines on every core add to: one copy per stripe,
// each on a cache line of its own, added up when read.
func Example() {
	var counts [stripe.N]struct {
		n atomic.Int64
		_ [56]byte
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 1000 {
				counts[stripe.Of()].n.Add(1)
			}
		})
	}
	wg.Wait()
	var total int64
	for i := range counts {
		total += counts[i].n.Load()
	}
	fmt.Println(total)
	// Output: 4000
}
