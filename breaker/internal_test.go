package breaker

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var base = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// checkInvariant verifies that every slot holds an epoch of its own slot
// number no newer than head, which is what lets sum tell a current slot from
// a stale one.
func checkInvariant(t *testing.T, b *Breaker) {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	h := b.win.head
	for j, bk := range b.win.buckets {
		if bk.epoch > h || bk.epoch&bucketMask != int64(j) {
			t.Fatalf("slot %d: epoch %d, head %d", j, bk.epoch, h)
		}
	}
}

func TestWindowInvariant(t *testing.T) {
	b, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	checkInvariant(t, b)
	width := time.Duration(b.width)
	// Small steps, jumps of less than a window, of exactly a window, and
	// of 2^32 buckets (where a 32-bit tag comes back to the same value).
	steps := []time.Duration{0, 1, width, 3 * width, 15 * width, 16 * width, 17 * width, 1 << 32 * width, width / 2}
	now := base
	for _, d := range steps {
		now = now.Add(d)
		p, _ := b.AllowAt(now)
		p.RecordAt(now, Failure)
		checkInvariant(t, b)
	}
}

func TestNoAliasingAfter2To32Buckets(t *testing.T) {
	b, err := New(Config{MinCalls: 20})
	if err != nil {
		t.Fatal(err)
	}
	for range 19 {
		p, _ := b.AllowAt(base)
		p.RecordAt(base, Failure)
	}
	// 2^32 buckets later the tags of the old bucket match again; the
	// window must still know that those failures are 85 years old.
	later := base.Add(1 << 32 * time.Duration(b.width))
	if c := b.countsAt(later); c != (Counts{}) {
		t.Fatalf("CountsAt 2^32 buckets later (nothing recorded since) = %+v", c)
	}
	p, _ := b.AllowAt(later)
	p.RecordAt(later, Failure)
	if c := b.countsAt(later); c != (Counts{Failures: 1}) {
		t.Fatalf("CountsAt 2^32 buckets later = %+v, want 1 failure", c)
	}
	if s := b.StateAt(later); s != Closed {
		t.Fatalf("StateAt = %v, want closed", s)
	}
}

// TestConcurrent hammers one breaker from many goroutines over a shared
// virtual clock, with phases of failures so that it goes through every
// state many times, and checks what must hold under any interleaving.
func TestConcurrent(t *testing.T) {
	const (
		workers = 8
		calls   = 20000
		probes  = 3
	)
	var (
		evMu   sync.Mutex
		events []string
		prev   = Closed
		broken string
	)
	b, err := New(Config{
		MinCalls: 10,
		Window:   40 * time.Millisecond,
		Cooldown: 5 * time.Millisecond,
		Probes:   probes,
		OnStateChange: func(from, to State, _ time.Time) {
			evMu.Lock()
			defer evMu.Unlock()
			if from != prev || from == to {
				broken = fmt.Sprintf("change %v->%v after a change to %v", from, to, prev)
			}
			prev = to
			events = append(events, from.String()+"->"+to.String())
		},
	})
	if err != nil {
		t.Fatal(err)
	}

	var (
		clock    atomic.Int64 // virtual nanoseconds since base
		recorded atomic.Int64 // successes and failures recorded so far
		probeMu  sync.Mutex
		out      = map[uint32]int{} // probe permits not yet recorded, by generation
		errs     = make(chan error, workers+1)
		wg       sync.WaitGroup
		done     = make(chan struct{})
	)
	report := func(err error) {
		select {
		case errs <- err:
		default: // enough errors already
		}
	}
	// Failing for 50ms out of every 200ms.
	failing := func(n int64) bool { return n/int64(50*time.Millisecond)%4 == 0 }

	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for range calls {
				n := clock.Add(rng.Int64N(int64(20 * time.Microsecond)))
				// Instants arrive slightly out of order, as they do
				// between real goroutines.
				now := base.Add(time.Duration(n - rng.Int64N(int64(time.Millisecond))))
				p, err := b.AllowAt(now)
				if err != nil {
					continue
				}
				if p.probe {
					probeMu.Lock()
					out[p.gen]++
					if out[p.gen] > probes {
						report(fmt.Errorf("%d probes out in generation %d", out[p.gen], p.gen))
					}
					probeMu.Unlock()
				}
				var o Outcome
				switch r := rng.IntN(100); {
				case r < 5:
					o = Ignored
				case failing(n) && r < 90, r < 8:
					o = Failure
				default:
					o = Success
				}
				if rng.IntN(10) == 0 {
					// A slow call: finishes after other calls.
					n = clock.Add(int64(time.Millisecond))
				}
				if p.probe {
					// Before RecordAt frees the slot, so that the
					// map never counts fewer than the breaker.
					probeMu.Lock()
					out[p.gen]--
					probeMu.Unlock()
				}
				if o != Ignored {
					recorded.Add(1)
				}
				p.RecordAt(base.Add(time.Duration(n)), o)
			}
		}()
	}
	go func() { // a reader, as metrics would be
		defer close(errs)
		for {
			select {
			case <-done:
				return
			default:
			}
			now := base.Add(time.Duration(clock.Load()))
			c := b.countsAt(now)
			if c.Successes < 0 || c.Failures < 0 || int64(c.Successes+c.Failures) > recorded.Load() {
				report(fmt.Errorf("CountsAt = %+v with %d recorded", c, recorded.Load()))
				return
			}
			_ = b.StateAt(now)
		}
	}()
	wg.Wait()
	close(done)
	for err := range errs {
		t.Error(err)
	}

	evMu.Lock()
	defer evMu.Unlock()
	if broken != "" {
		t.Fatal(broken)
	}
	kinds := map[string]int{}
	for _, e := range events {
		kinds[e]++
	}
	t.Logf("%d changes of state: %v", len(events), kinds)
	for _, k := range []string{"closed->open", "open->half-open", "half-open->open", "half-open->closed"} {
		if kinds[k] == 0 {
			t.Errorf("no %s change: the test did not exercise every state", k)
		}
	}
	// Every permit has been recorded, so no probe slot may still be held.
	b.mu.Lock()
	state, inflight := b.state, b.inflight
	b.mu.Unlock()
	if inflight != 0 {
		t.Errorf("state %v with %d probe slots held after every permit was recorded", state, inflight)
	}
	checkInvariant(t, b)
}
