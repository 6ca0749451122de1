package retry

import (
	"container/heap"
	"context"
	"math/rand/v2"
	"sort"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heed-go/heed/budget"
)

// These tests drive the default retry budget through Do over time, in
// virtual time (testing/synctest): an open-loop load of calls, each a
// goroutine, against a dependency whose health a script sets.

// load runs calls at rate per second, evenly spaced, for d, each a Do under
// p against fail (which reports whether an attempt at that instant fails),
// and records every attempt's instant and whether each call succeeded.
type loadRun struct {
	mu       sync.Mutex
	attempts []time.Time
	users    []time.Time
	served   int
}

func (l *loadRun) run(t *testing.T, p Policy, rate float64, d time.Duration, fail func(time.Time) bool) {
	var wg sync.WaitGroup
	gap := time.Duration(float64(time.Second) / rate)
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		now := time.Now()
		l.mu.Lock()
		l.users = append(l.users, now)
		l.mu.Unlock()
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			err := Do(ctx, p, func(context.Context) error {
				at := time.Now()
				l.mu.Lock()
				l.attempts = append(l.attempts, at)
				l.mu.Unlock()
				if fail(at) {
					return errFlaky
				}
				return nil
			})
			if err == nil {
				l.mu.Lock()
				l.served++
				l.mu.Unlock()
			}
		})
		time.Sleep(gap)
	}
	wg.Wait()
}

// dueQueue is a heap of job indexes by due time.
type dueQueue struct {
	idx []int
	due []time.Time
}

func (q *dueQueue) Len() int           { return len(q.idx) }
func (q *dueQueue) Less(i, j int) bool { return q.due[q.idx[i]].Before(q.due[q.idx[j]]) }
func (q *dueQueue) Swap(i, j int)      { q.idx[i], q.idx[j] = q.idx[j], q.idx[i] }
func (q *dueQueue) Push(x any)         { q.idx = append(q.idx, x.(int)) }
func (q *dueQueue) Pop() any {
	x := q.idx[len(q.idx)-1]
	q.idx = q.idx[:len(q.idx)-1]
	return x
}

// lockedSource makes a rand.Source safe for concurrent use, as
// Policy.Rand must be.
type lockedSource struct {
	mu  sync.Mutex
	src rand.Source
}

func (s *lockedSource) Uint64() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.src.Uint64()
}

// within counts the instants of ts, in order of time, in [a, b).
func within(ts []time.Time, a, b time.Time) int {
	i := sort.Search(len(ts), func(i int) bool { return !ts[i].Before(a) })
	j := sort.Search(len(ts), func(i int) bool { return !ts[i].Before(b) })
	return j - i
}

// TestBudgetColdStart: a new budget lets 5 calls in a row, each failing
// twice and then succeeding, all through.
func TestBudgetColdStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, _ := budget.New(budget.Config{})
		p := Policy{Budget: b}
		for i := range 5 {
			n := 0
			err := Do(t.Context(), p, func(context.Context) error {
				if n++; n <= 2 {
					return errFlaky
				}
				return nil
			})
			if err != nil {
				t.Fatalf("call %d: %v", i+1, err)
			}
		}
	})
}

// TestBudgetOutageOffsets: a total outage of a dependency called 100 times
// a second, starting at 10 offsets within a second after 3 s of health:
// every 1 s window of it sees at most 1.2× the calls in attempts, and the
// outage as a whole at most 1 + Ratio + Burst/(r × T) of the defaults (1.095
// over 10 s at 100/s), within 1.10; and once it heals, retries work again
// within a second.
func TestBudgetOutageOffsets(t *testing.T) {
	for k := range 10 {
		offset := time.Duration(k) * 97 * time.Millisecond
		synctest.Test(t, func(t *testing.T) {
			b, _ := budget.New(budget.Config{})
			p := Policy{Budget: b, Rand: &lockedSource{src: rand.NewPCG(uint64(k), 1)}}
			start := time.Now()
			down, up := start.Add(3*time.Second+offset), start.Add(13*time.Second+offset)
			var l loadRun
			l.run(t, p, 100, 15*time.Second, func(at time.Time) bool { return !at.Before(down) && at.Before(up) })
			sort.Slice(l.attempts, func(i, j int) bool { return l.attempts[i].Before(l.attempts[j]) })
			worst := 0.0
			for a := down; !a.Add(time.Second).After(up); a = a.Add(10 * time.Millisecond) {
				users := within(l.users, a, a.Add(time.Second))
				worst = max(worst, float64(within(l.attempts, a, a.Add(time.Second)))/float64(users))
			}
			mean := float64(within(l.attempts, down, up)) / float64(within(l.users, down, up))
			if bound := 1 + budget.DefaultRatio + budget.DefaultBurst/1000; worst > 1.2 || mean > bound || bound > 1.10 {
				t.Errorf("offset %v: worst 1 s window %.3f×, mean %.4f×; want at most 1.2× and %.4f× (at most 1.10×)", offset, worst, mean, bound)
			}
			// After the heal: a call failing once gets its retry.
			n := 0
			time.Sleep(time.Until(up.Add(500 * time.Millisecond)))
			for range 20 { // keep requests flowing for 200 ms
				b.Request()
				time.Sleep(10 * time.Millisecond)
			}
			err := Do(t.Context(), p, func(context.Context) error {
				if n++; n == 1 {
					return errFlaky
				}
				return nil
			})
			if err != nil {
				t.Errorf("offset %v: a retry 0.7 s after the heal: %v", offset, err)
			}
			if k == 0 {
				t.Logf("worst 1 s window %.3f×, mean %.3f× over 10 s", worst, mean)
			}
		})
	}
}

// TestBudgetHalfFail: half of the attempts fail at random: the budget's
// successes pay for the retries, so users are served as with no budget
// (87.5% at 3 attempts) at under 2× the load.
func TestBudgetHalfFail(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, _ := budget.New(budget.Config{})
		p := Policy{Budget: b, Rand: &lockedSource{src: rand.NewPCG(1, 1)}}
		var mu sync.Mutex
		rnd := rand.New(rand.NewPCG(2, 2))
		var l loadRun
		l.run(t, p, 100, 20*time.Second, func(time.Time) bool {
			mu.Lock()
			defer mu.Unlock()
			return rnd.Float64() < 0.5
		})
		served := float64(l.served) / float64(len(l.users))
		load := float64(len(l.attempts)) / float64(len(l.users))
		t.Logf("%.1f%% served at %.2f×", 100*served, load)
		if served < 0.85 || load > 2 {
			t.Fatalf("%.1f%% served at %.2f×, want at least 85%% at most 2×", 100*served, load)
		}
	})
}

// TestBudgetBacklog: durable calls (a job queue's) with no new requests:
// 500 jobs whose dependency was down for 15 s drain after it heals, 95% of
// them within 15 s, on a worker that runs 10 at once and reschedules a job
// the budget refuses for RefillAt, as the queue does.
func TestBudgetBacklog(t *testing.T) {
	b, _ := budget.New(budget.Config{})
	p := Policy{Budget: b, Attempts: -1, Rand: rand.NewPCG(1, 1)}
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	heal := t0.Add(15 * time.Second)
	const jobs = 500
	calls := make([]Call, jobs)
	due := make([]time.Time, jobs)
	for i := range calls {
		calls[i] = Call{Policy: p, Durable: true}
		due[i] = t0
	}
	// The worker: every 10 ms it takes up to 10 due jobs, in order of
	// due time (each attempt takes 10 ms).
	q := &dueQueue{due: due}
	for i := range jobs {
		heap.Push(q, i)
	}
	var doneAt []time.Time
	now := t0
	for q.Len() > 0 && now.Before(heal.Add(30*time.Second)) {
		if first := due[q.idx[0]]; first.After(now) {
			now = first
		}
		for running := 0; running < 10 && q.Len() > 0 && !due[q.idx[0]].After(now); {
			i := heap.Pop(q).(int)
			c := &calls[i]
			if _, ok := c.Admit(now); !ok {
				due[i] = c.Last().At
				heap.Push(q, i)
				continue
			}
			running++
			end := now.Add(10 * time.Millisecond)
			var res Result
			if end.Before(heal) {
				res = Result{Err: errFlaky}
			}
			if d := c.End(end, res); d.Action != Done {
				due[i] = d.At
				heap.Push(q, i)
				continue
			}
			doneAt = append(doneAt, end)
		}
		now = now.Add(10 * time.Millisecond)
	}
	in15 := 0
	for _, at := range doneAt {
		if at.Before(heal.Add(15 * time.Second)) {
			in15++
		}
	}
	t.Logf("%d of %d jobs done within 15 s of the heal (%d in all, the last %v after it)", in15, jobs, len(doneAt), doneAt[len(doneAt)-1].Sub(heal))
	if in15 < jobs*95/100 {
		t.Fatalf("%d of %d jobs done within 15 s of the heal, want 95%%", in15, jobs)
	}
}
