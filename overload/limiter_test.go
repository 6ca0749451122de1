package overload

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heed-go/heed/internal/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }

func mustNew(t *testing.T, cfg Config) *Limiter {
	t.Helper()
	l, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func reason(err error) Reason {
	var re *RefusedError
	if errors.As(err, &re) {
		return re.Reason
	}
	return ReasonNone
}

// acquireAsync starts Acquire on its own goroutine and returns a channel
// that receives its error once it returned (the permit is kept in *p).
func acquireAsync(l *Limiter, ctx context.Context, attempt int, p *Permit) <-chan error {
	done := make(chan error, 1)
	go func() {
		pp, err := l.Acquire(ctx, attempt)
		*p = pp
		done <- err
	}()
	return done
}

// Waiters are served in arrival order while the queue empties within
// its target, each as a place frees.
func TestQueueFIFO(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := mustNew(t, Config{Limit: 1, MaxQueue: 10})
		first, _ := l.Acquire(t.Context(), 0)
		var p [3]Permit
		var done [3]<-chan error
		for i := range done {
			done[i] = acquireAsync(l, t.Context(), 0, &p[i])
			synctest.Wait() // queued in this order
		}
		if st := l.Stats(); st.Queued != 3 || st.InFlight != 1 {
			t.Fatalf("stats = %+v, want 3 queued, 1 in flight", st)
		}
		time.Sleep(time.Millisecond)
		first.Release()
		synctest.Wait()
		if err := <-done[0]; err != nil {
			t.Fatalf("oldest waiter: %v, want admitted", err)
		}
		for i := 1; i < 3; i++ {
			time.Sleep(time.Millisecond)
			p[i-1].Release()
			synctest.Wait()
			if err := <-done[i]; err != nil {
				t.Fatalf("waiter %d: %v, want admitted", i, err)
			}
		}
		p[2].Release()
	})
}

// Once the queue has not emptied for a whole interval, a waiter waits at
// most 2 × target, and the newest waiter is served first.
func TestQueueOverloadedLIFO(t *testing.T) {
	for _, lifoOff := range []bool{false, true} {
		t.Run(map[bool]string{false: "adaptive LIFO", true: "LIFOOff"}[lifoOff], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := mustNew(t, Config{Limit: 1, MaxQueue: 10, LIFOOff: lifoOff})
				held, _ := l.Acquire(t.Context(), 0)
				// A standing queue: every place in two intervals goes to a
				// request that waited 8 ms (above the 5 ms target).
				for range 30 {
					var p Permit
					done := acquireAsync(l, t.Context(), 0, &p)
					time.Sleep(8 * time.Millisecond)
					held.Release()
					if err := <-done; err != nil {
						t.Fatalf("standing queue: %v", err)
					}
					held = p
				}
				if !l.c.Overloaded() {
					t.Fatal("not overloaded after 240 ms of 8 ms waits")
				}
				var older, newer Permit
				doneOld := acquireAsync(l, t.Context(), 0, &older)
				synctest.Wait()
				time.Sleep(3 * time.Millisecond)
				doneNew := acquireAsync(l, t.Context(), 0, &newer)
				synctest.Wait()
				time.Sleep(time.Millisecond)
				held.Release()
				synctest.Wait()
				served, waiting := doneNew, doneOld
				if lifoOff {
					served, waiting = doneOld, doneNew
				}
				select {
				case err := <-served:
					if err != nil {
						t.Fatalf("the waiter served first: %v", err)
					}
				default:
					t.Fatalf("LIFOOff %v: the expected waiter was not served first", lifoOff)
				}
				// The other waits at most 2 × target (10 ms) in all.
				start := time.Now()
				err := <-waiting
				if reason(err) != ReasonQueueTime {
					t.Fatalf("the other waiter: %v, want refused for its wait", err)
				}
				if waited := time.Since(start); waited > 10*time.Millisecond {
					t.Errorf("the other waiter was refused after %v more, want within 10ms", waited)
				}
				newer.Release()
				older.Release()
			})
		})
	}
}

// Without overload a waiter waits at most one interval.
func TestQueueTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := mustNew(t, Config{Limit: 1, MaxQueue: 10})
		held, _ := l.Acquire(t.Context(), 0)
		start := time.Now()
		_, err := l.Acquire(t.Context(), 0)
		if reason(err) != ReasonQueueTime || time.Since(start) != 100*time.Millisecond {
			t.Errorf("after %v: %v, want refused for its wait after 100ms", time.Since(start), err)
		}
		var re *RefusedError
		if errors.As(err, &re) && re.RetryAfter <= 0 {
			t.Errorf("RetryAfter = %v, want > 0", re.RetryAfter)
		}
		held.Release()
	})
}

// A waiter whose caller goes leaves the queue and is never served; the
// place goes to the next.
func TestQueueCallerGone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := mustNew(t, Config{Limit: 1, MaxQueue: 10})
		held, _ := l.Acquire(t.Context(), 0)
		ctx, cancel := context.WithCancel(t.Context())
		var gone, next Permit
		doneGone := acquireAsync(l, ctx, 0, &gone)
		synctest.Wait()
		doneNext := acquireAsync(l, t.Context(), 0, &next)
		synctest.Wait()
		cancel()
		err := <-doneGone
		if reason(err) != ReasonGone || !errors.Is(err, context.Canceled) {
			t.Fatalf("gone caller: %v, want refused, caller gone", err)
		}
		if st := l.Stats(); st.Queued != 1 {
			t.Fatalf("queued = %d after the caller went, want 1", st.Queued)
		}
		held.Release()
		if err := <-doneNext; err != nil {
			t.Fatalf("next waiter: %v, want admitted", err)
		}
		next.Release()
		if st := l.Stats(); st.InFlight != 0 || st.Queued != 0 {
			t.Errorf("stats = %+v, want empty", st)
		}
	})
}

// A request whose deadline cannot cover the expected wait plus the
// handlers' no-queue latency is refused at once; retries never wait; the
// queue is bounded.
func TestRefusedAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := mustNew(t, Config{Limit: 2, MaxQueue: 1})
		// Learn a no-queue latency of 50 ms.
		p, _ := l.Acquire(t.Context(), 0)
		time.Sleep(50 * time.Millisecond)
		p.Release()

		a, _ := l.Acquire(t.Context(), 0)
		b, _ := l.Acquire(t.Context(), 0)
		start := time.Now()
		if _, err := l.Acquire(t.Context(), 2); reason(err) != ReasonRetry {
			t.Errorf("retry at the limit: %v, want refused as a retry", err)
		}
		// 60 ms left: a place frees every 25 ms, plus 50 ms of handler.
		mid, cancel2 := context.WithTimeout(t.Context(), 60*time.Millisecond)
		defer cancel2()
		if _, err := l.Acquire(mid, 0); reason(err) != ReasonDeadline {
			t.Errorf("60ms left, 75ms expected: %v, want refused for its deadline", err)
		}
		var q Permit
		done := acquireAsync(l, t.Context(), 1, &q)
		synctest.Wait()
		if _, err := l.Acquire(t.Context(), 0); reason(err) != ReasonQueueFull {
			t.Errorf("queue of 1 full: %v, want refused, queue full", err)
		}
		if time.Since(start) != 0 {
			t.Errorf("refusals took %v, want at once", time.Since(start))
		}
		a.Release()
		if err := <-done; err != nil {
			t.Errorf("waiter: %v", err)
		}
		b.Release()
		q.Release()
		// Below the limit, a retry is still refused while the limiter has
		// been refusing; a second without refusals later, it runs.
		if _, err := l.Acquire(t.Context(), 2); reason(err) != ReasonRetry {
			t.Errorf("retry below the limit just after refusals: %v, want refused as a retry", err)
		}
		time.Sleep(1100 * time.Millisecond)
		p, err := l.Acquire(t.Context(), 2)
		if err != nil {
			t.Errorf("retry a second after the last refusal: %v, want admitted", err)
		}
		p.Release()
	})
}

// The adaptive limit finds a pool's size: 8 workers of 100 ms behind the
// limiter, 200 requests a second offered. The limit settles a few above
// 8 (Vegas keeps a small queue inside), the workers stay busy, and when the
// pool halves the limit follows.
func TestAdaptiveFindsPool(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := mustNew(t, Config{})
		workers := make(chan struct{}, 8)
		var served, refused int
		var mu sync.Mutex
		run := func(d time.Duration, size int) (limits []int) {
			workers = make(chan struct{}, size)
			end := time.Now().Add(d)
			var wg sync.WaitGroup
			for time.Now().Before(end) {
				wg.Go(func() {
					ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
					defer cancel()
					p, err := l.Acquire(ctx, 0)
					if err != nil {
						mu.Lock()
						refused++
						mu.Unlock()
						return
					}
					defer p.Release()
					w := workers
					w <- struct{}{}
					time.Sleep(100 * time.Millisecond)
					<-w
					mu.Lock()
					served++
					mu.Unlock()
				})
				time.Sleep(5 * time.Millisecond)
				limits = append(limits, l.Stats().Limit)
			}
			wg.Wait()
			return limits
		}
		limits := run(5*time.Second, 8)
		last := limits[len(limits)-200:]
		for _, lim := range last {
			if lim < 8 || lim > 16 {
				t.Errorf("limit in the last second of 8 workers: %d, want 8-16", lim)
				break
			}
		}
		// 5 s of 80/s capacity, less the first latencies learnt.
		if served < 350 {
			t.Errorf("served %d in 5 s of 8 workers at 100 ms, want at least 350", served)
		}
		limits = run(5*time.Second, 4)
		for _, lim := range limits[len(limits)-200:] {
			if lim < 4 || lim > 10 {
				t.Errorf("limit in the last second of 4 workers: %d, want 4-10", lim)
				break
			}
		}
	})
}

// Many goroutines at a small fixed limit, admitted at once and through the
// queue by turns: never more in flight than the limit, no waiter left
// behind when places free (each waits at most a queue interval, and the
// queue's lock-free fast path must hand every freed place to a waiter),
// and nothing held at the end.
func TestConcurrentNeverAboveLimit(t *testing.T) {
	l := mustNew(t, Config{Limit: 3, MaxQueue: 100, QueueInterval: time.Second})
	var mu sync.Mutex
	inside, most, admitted := 0, 0, 0
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := range 200 {
				p, err := l.Acquire(t.Context(), 0)
				if err != nil {
					t.Errorf("goroutine %d, request %d: %v, want admitted (a place frees well within the queue's interval)", g, i, err)
					return
				}
				mu.Lock()
				inside++
				most = max(most, inside)
				admitted++
				mu.Unlock()
				if i%3 == 0 {
					time.Sleep(10 * time.Microsecond)
				}
				mu.Lock()
				inside--
				mu.Unlock()
				p.Release()
			}
		})
	}
	wg.Wait()
	if most > 3 {
		t.Errorf("%d in flight at once, want at most the limit 3", most)
	}
	if st := l.Stats(); st.InFlight != 0 || st.Queued != 0 || admitted != 16*200 {
		t.Errorf("after: %+v, %d admitted; want nothing held, 3200 admitted", st, admitted)
	}
}
