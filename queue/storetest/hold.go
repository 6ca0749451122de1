package storetest

// Deferral without a stampede: what a worker claims while its breaker or
// budget refuses, and the history of a run of deferrals, over each store.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heed-go/heed/breaker"
	"github.com/heed-go/heed/clock/clocktest"
	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/queue/jobstore"
	"github.com/heed-go/heed/retry"
)

// testClaimFirstOnly: a claim with FirstOnly takes only jobs that have
// made no attempt, in claim order, and leaves retried jobs due.
func testClaimFirstOnly(t *testing.T, s jobstore.Store) {
	retried := insert(t, s, "k", queue.EnqueueOptions{})
	c := claimOne(t, s, queue.DefaultQueue, t0)
	e := entry(1, "transient", "retry", "transient", t0)
	if err := s.JobTransition(ctx, jobstore.Transition{ID: c.ID, LeaseToken: c.LeaseToken, State: jobstore.StateAvailable,
		Attempt: c.Attempt, AvailableAt: t0, Entry: e}); err != nil {
		t.Fatal(err)
	}
	first := []int64{insert(t, s, "k", queue.EnqueueOptions{}).ID, insert(t, s, "k", queue.EnqueueOptions{}).ID}
	now := t0.Add(time.Second)
	jobs, err := s.JobClaim(ctx, jobstore.ClaimParams{Queue: queue.DefaultQueue, Limit: 10, Now: now,
		LeaseUntil: now.Add(time.Minute), Worker: "w1", FirstOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(jobs); fmt.Sprint(got) != fmt.Sprint(first) {
		t.Errorf("FirstOnly claimed %v, want the jobs never attempted %v", got, first)
	}
	for _, j := range jobs {
		if j.Attempt != 1 {
			t.Errorf("job %d claimed with attempt %d, want 1", j.ID, j.Attempt)
		}
	}
	if j := claimOne(t, s, queue.DefaultQueue, now); j.ID != retried.ID || j.Attempt != 2 {
		t.Errorf("the claim without FirstOnly took job %d (attempt %d), want the retried job %d (attempt 2)", j.ID, j.Attempt, retried.ID)
	}
}

// testHistoryReplaceLast: a transition with ReplaceLast puts its entry in
// place of the history's last one (the run of deferrals kept as one entry
// with a count), keeps the entries before it exactly, and appends to an
// empty history; through JobTransitions too.
func testHistoryReplaceLast(t *testing.T, s jobstore.Store) {
	j := insert(t, s, "k", queue.EnqueueOptions{})
	c := claimOne(t, s, queue.DefaultQueue, t0)
	defer1 := entry(1, jobstore.OutcomeDeferred, "defer", "breaker_open", t0)
	defer1.Error = `breaker: circuit open "quoted" <&>`
	// An empty history: the entry is appended.
	if err := s.JobTransition(ctx, jobstore.Transition{ID: c.ID, LeaseToken: c.LeaseToken, State: jobstore.StateAvailable,
		Attempt: 0, AvailableAt: t0, Entry: defer1, ReplaceLast: true}); err != nil {
		t.Fatal(err)
	}
	c = claimOne(t, s, queue.DefaultQueue, t0)
	e1 := entry(1, "transient", "retry", "transient", t0)
	e1.Error = "first \u00e9 \\ \n line"
	if err := s.JobTransition(ctx, jobstore.Transition{ID: c.ID, LeaseToken: c.LeaseToken, State: jobstore.StateAvailable,
		Attempt: 1, AvailableAt: t0, Entry: e1}); err != nil {
		t.Fatal(err)
	}
	want := []jobstore.Attempt{defer1, e1}
	at := t0
	for n := 1; n <= 3; n++ {
		at = at.Add(time.Second)
		c = claimOne(t, s, queue.DefaultQueue, at)
		d := entry(2, jobstore.OutcomeDeferred, "defer", "breaker_open", at)
		d.Delay = time.Duration(n) * time.Second
		tr := jobstore.Transition{ID: c.ID, LeaseToken: c.LeaseToken, State: jobstore.StateAvailable, Attempt: 1, AvailableAt: at, Entry: d}
		if n > 1 {
			d.StartedAt, d.Count = t0.Add(time.Second), n
			tr.Entry, tr.ReplaceLast = d, true
		}
		var err error
		if b, ok := s.(jobstore.TransitionBatcher); ok && n == 3 {
			var errs []error
			errs, err = b.JobTransitions(ctx, []jobstore.Transition{tr})
			if err == nil {
				err = errors.Join(errs...)
			}
		} else {
			err = s.JobTransition(ctx, tr)
		}
		if err != nil {
			t.Fatal(err)
		}
		if n == 1 {
			want = append(want, d)
		} else {
			want[len(want)-1] = d
		}
		if got := normalize(get(t, s, j.ID).History); fmt.Sprint(got) != fmt.Sprint(normalize(want)) {
			t.Fatalf("after deferral %d the history is\n%v\nwant\n%v", n, got, normalize(want))
		}
	}
	if h := get(t, s, j.ID).History; h[2].Count != 3 || !h[2].StartedAt.Equal(t0.Add(time.Second)) {
		t.Errorf("the run of deferrals: %+v, want count 3 since %v", h[2], t0.Add(time.Second))
	}
}

// writeCounter counts the rows a worker writes: every job a claim
// leases and every transition (each with its history entry). When trip is
// set, the first claim that leases jobs opens it after the store answered,
// as when a dependency's other callers open the breaker between a claim
// and the attempts.
type writeCounter struct {
	jobstore.Store
	writes atomic.Int64
	trip   func()
	once   sync.Once
}

func (s *writeCounter) JobClaim(ctx context.Context, p jobstore.ClaimParams) ([]*jobstore.Job, error) {
	jobs, err := s.Store.JobClaim(ctx, p)
	s.writes.Add(int64(len(jobs)))
	if len(jobs) > 0 && s.trip != nil {
		s.once.Do(s.trip)
	}
	return jobs, err
}

func (s *writeCounter) JobTransition(ctx context.Context, t jobstore.Transition) error {
	err := s.Store.JobTransition(ctx, t)
	if err == nil {
		s.writes.Add(1)
	}
	return err
}

// JobTransitions applies ts in one batch when the store batches (as a
// worker over it would), one by one otherwise.
func (s *writeCounter) JobTransitions(ctx context.Context, ts []jobstore.Transition) ([]error, error) {
	b, ok := s.Store.(jobstore.TransitionBatcher)
	if !ok {
		errs := make([]error, len(ts))
		for i, t := range ts {
			errs[i] = s.JobTransition(ctx, t)
		}
		return errs, nil
	}
	errs, err := b.JobTransitions(ctx, ts)
	for i := range ts {
		if err == nil && i < len(errs) && errs[i] == nil {
			s.writes.Add(1)
		}
	}
	return errs, err
}

// testBreakerOutage: 2,000 jobs behind a breaker that opens just after a
// worker claimed 500 of them, while their dependency is down for 9 s, on
// a fake clock. The claimed jobs are deferred with their due times spread
// over the cooldown after it ends; the others stay unclaimed, without a
// write, until the breaker lets a probe through; each probe is one job.
// Over the 9 s the store sees at most one write per job (the issue's
// worker made 60,408 deferral writes for 2,000 jobs in 30 s, every job
// due at the same instant at every wave). Once the dependency is back,
// every job succeeds with one attempt or two.
func testBreakerOutage(t *testing.T, s jobstore.Store) {
	const (
		jobs     = 2000
		claimed  = 500 // the worker's concurrency: its first claim
		cooldown = 3 * time.Second
		down     = 9 * time.Second
	)
	clk := clocktest.New(t0)
	br, err := breaker.New(breaker.Config{MinCalls: 5, Cooldown: cooldown, Probes: 1})
	if err != nil {
		t.Fatal(err)
	}
	cs := &writeCounter{Store: s, trip: func() {
		for range 5 { // other callers of the dependency see it fail
			p, _ := br.AllowAt(clk.Now())
			p.RecordAt(clk.Now(), breaker.Failure)
		}
	}}
	items := make([]queue.EnqueueItem, jobs)
	for i := range items {
		items[i] = queue.EnqueueItem{Kind: "dep", Args: struct{}{}}
	}
	if _, err := queue.NewClient(s, queue.ClientConfig{Clock: clk}).EnqueueMany(ctx, items); err != nil {
		t.Fatal(err)
	}

	var (
		mu                          sync.Mutex
		deferred, retried, finished int
		changed                     = make(chan struct{}, 1)
	)
	w, err := queue.NewWorker(cs, queue.WorkerConfig{
		Queues: map[string]int{queue.DefaultQueue: claimed},
		Policy: retry.Policy{Breaker: br},
		Clock:  clk,
		Observe: func(_ context.Context, e queue.Event) {
			mu.Lock()
			switch e.Kind {
			case queue.EventDeferred:
				deferred++
			case queue.EventRetried:
				retried++
			case queue.EventSucceeded, queue.EventDead:
				finished++
			}
			mu.Unlock()
			select {
			case changed <- struct{}{}:
			default:
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	queue.Handle(w, "dep", func(ctx context.Context, job *jobstore.Job, _ struct{}) error {
		if clk.Now().Before(t0.Add(down)) {
			return retry.Transient(errors.New("dependency down"))
		}
		return nil
	})
	// await waits until cond holds over the counts, each time the events
	// change them. With nudge, a second without an event calls it: a store
	// call that failed under load (a busy database) is tried again at the
	// worker's next poll, on the fake clock.
	await := func(what string, cond func(deferred, retried, finished int) bool, nudge func()) {
		t.Helper()
		timeout := time.After(2 * time.Minute)
		for {
			mu.Lock()
			ok := cond(deferred, retried, finished)
			d, r, f := deferred, retried, finished
			mu.Unlock()
			if ok {
				return
			}
			var idle <-chan time.Time
			if nudge != nil {
				idle = time.After(time.Second)
			}
			select {
			case <-changed:
			case <-idle:
				nudge()
			case <-timeout:
				t.Fatalf("waiting for %s: %d deferred, %d retried, %d finished", what, d, r, f)
			}
		}
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer w.Shutdown(ctx)

	// The first claim takes 500 jobs; the breaker opens before any
	// attempt starts, so each is deferred.
	await("the first claim's deferrals", func(d, _, _ int) bool { return d == claimed }, nil)
	checkDeferredSpread(t, s, jobs, claimed, cooldown)

	// The breaker lets one probe through at the end of each cooldown; it
	// fails while the dependency is down, and opens the breaker again.
	probes := 0
	for at := t0.Add(cooldown); at.Before(t0.Add(down)); at = at.Add(cooldown) {
		clk.Set(at)
		probes++
		await(fmt.Sprintf("probe %d", probes), func(_, r, _ int) bool { return r == probes }, nil)
	}
	clk.Set(t0.Add(down))
	writes := cs.writes.Load()
	mu.Lock()
	d, r := deferred, retried
	mu.Unlock()
	t.Logf("%d jobs behind an open breaker for %v: %d writes (%.2f a job): %d deferrals, %d failed probes",
		jobs, down, writes, float64(writes)/jobs, d, r)
	if writes > jobs || d != claimed || r != probes {
		t.Errorf("%d writes (%d deferrals, %d probes) for %d jobs over %v, want at most one a job: %d deferrals and %d probes",
			writes, d, r, jobs, down, claimed, probes)
	}

	// The dependency is back: the next probe closes the breaker and
	// every job succeeds.
	clk.Set(t0.Add(down + cooldown))
	await("every job to succeed", func(_, _, f int) bool { return f == jobs }, func() { clk.Advance(1200 * time.Millisecond) })
	all, err := s.JobList(ctx, jobstore.JobFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range all {
		if j.State != jobstore.StateSucceeded || len(j.History) > 3 {
			t.Errorf("job %d: %s with %d history entries %v, want succeeded with at most 3", j.ID, j.State, len(j.History), j.History)
		}
	}
}

// checkDeferredSpread checks that the claimed jobs, deferred behind a
// breaker open from t0 for cooldown, are due within the cooldown after it
// ends, and spread over it.
func checkDeferredSpread(t *testing.T, s jobstore.Store, jobs, claimed int, cooldown time.Duration) {
	t.Helper()
	list, err := s.JobList(ctx, jobstore.JobFilter{State: jobstore.StateAvailable, Retried: false})
	if err != nil {
		t.Fatal(err)
	}
	due := map[time.Time]int{}
	tenths := map[int]int{} // tenths of the cooldown after it ends
	end := t0.Add(cooldown)
	for _, j := range list {
		if len(j.History) == 0 {
			continue
		}
		due[j.AvailableAt]++
		if j.AvailableAt.Before(end) || j.AvailableAt.After(end.Add(cooldown)) {
			t.Errorf("job %d deferred to %v, want within a cooldown after the breaker's end %v", j.ID, j.AvailableAt, end)
		}
		tenths[int(j.AvailableAt.Sub(end)/(cooldown/10))]++
	}
	most, mostTenth := 0, 0
	for _, n := range due {
		most = max(most, n)
	}
	for _, n := range tenths {
		mostTenth = max(mostTenth, n)
	}
	// At most 10% of the jobs due at one instant; and the deferred ones
	// spread: no tenth of the cooldown holds more than twice its share.
	if most > jobs/10 || mostTenth > 2*claimed/10 {
		t.Errorf("%d deferred jobs due at one instant, %d in one tenth of the cooldown; want at most %d and %d",
			most, mostTenth, jobs/10, 2*claimed/10)
	}
	t.Logf("first wave: %d jobs deferred, at most %d due at one instant, %d in one tenth of the cooldown", claimed, most, mostTenth)
}
