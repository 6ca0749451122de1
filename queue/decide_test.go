package queue

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/heed-go/heed/backoff"
	"github.com/heed-go/heed/queue/jobstore"
	"github.com/heed-go/heed/retry"
)

var t0 = time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)

// sqlState behaves as pgx's *pgconn.PgError.
type sqlState struct{ code string }

func (e *sqlState) Error() string    { return "SQLSTATE " + e.code }
func (e *sqlState) SQLState() string { return e.code }

func testPolicy() retry.Policy {
	return defaultPolicy(retry.Policy{Backoff: backoff.Schedule{Jitter: backoff.NoJitter}})
}

// The defaults the documentation states are the ones WithDefaults fills
// in; fields already set, and negative ones, are kept.
func TestWithDefaults(t *testing.T) {
	c := WorkerConfig{}.WithDefaults()
	p := c.Policy
	if p.Attempts != 10 || p.Backoff.Base != 2*time.Second || p.Backoff.Cap != 5*time.Minute ||
		p.Backoff.Jitter != backoff.FullJitter || p.TimeBudget != 24*time.Hour || p.AttemptTimeout != time.Minute ||
		p.MaxPushback != time.Hour || p.Retryable != nil {
		t.Errorf("WithDefaults().Policy = %+v", p)
	}
	if err := p.Validate(); err != nil {
		t.Error(err)
	}
	if len(c.Queues) != 1 || c.Queues[DefaultQueue] != 100 || c.Lease != 30*time.Second || c.PollInterval != time.Second ||
		c.RescueInterval != 15*time.Second || c.ShutdownGrace != 30*time.Second || c.RetainSucceeded != 24*time.Hour ||
		c.RetainDead != 30*24*time.Hour || c.RetainCancelled != 7*24*time.Hour || c.RetentionInterval != time.Minute {
		t.Errorf("WithDefaults() = %+v", c)
	}
	if c.ID != "" || c.Clock != nil || c.Rand != nil {
		t.Errorf("WithDefaults set ID, Clock or Rand: %+v", c)
	}
	set := WorkerConfig{Queues: map[string]int{"a": 3}, Lease: 4 * time.Second, RetainDead: -1,
		Policy: retry.Policy{Attempts: 2, Backoff: backoff.Schedule{Base: 10 * time.Minute}}}.WithDefaults()
	if set.Queues["a"] != 3 || len(set.Queues) != 1 || set.Lease != 4*time.Second || set.RescueInterval != 2*time.Second ||
		set.RetainDead != -1 || set.Policy.Attempts != 2 || set.Policy.Backoff.Cap != 10*time.Minute {
		t.Errorf("WithDefaults of set fields = %+v", set)
	}
}

func TestDecide(t *testing.T) {
	errBoom := retry.Transient(errors.New("boom"))
	type want struct {
		state   State
		attempt int
		at      time.Time // AvailableAt
		reason  string    // entry reason (and DeadReason when dead)
		outcome string
		action  string
		delay   time.Duration
	}
	now := t0.Add(time.Minute)
	running := func(attempt int, started time.Time) *Job {
		return &Job{ID: 7, LeaseToken: "tok", State: StateRunning, Attempt: attempt, StartedAt: started, AttemptedAt: t0}
	}
	tests := []struct {
		name string
		job  *Job
		pol  func(p *retry.Policy)
		res  result
		want want
	}{
		{"success", running(1, t0), nil, result{},
			want{StateSucceeded, 1, time.Time{}, "success", "success", "done", 0}},
		{"transient retries at now+delay", running(1, t0), nil, result{err: errBoom},
			want{StateAvailable, 1, now.Add(2 * time.Second), "transient", "transient", "retry", 2 * time.Second}},
		{"third failure doubles twice", running(3, t0), nil, result{err: errBoom},
			want{StateAvailable, 3, now.Add(8 * time.Second), "transient", "transient", "retry", 8 * time.Second}},
		{"permanent is dead at once", running(1, t0), nil, result{err: retry.Permanent(errBoom)},
			want{StateDead, 1, time.Time{}, "permanent", "permanent", "give_up", 0}},
		{"After(d) waits d", running(1, t0), nil, result{err: retry.After(10*time.Minute, errBoom)},
			want{StateAvailable, 1, now.Add(10 * time.Minute), "pushback", "pushback", "retry", 10 * time.Minute}},
		{"After(-1) refused", running(1, t0), nil, result{err: retry.After(-1, errBoom)},
			want{StateDead, 1, time.Time{}, "server_refused", "refused", "give_up", 0}},
		{"snooze gives the attempt back", running(2, t0), nil, result{err: Snooze(time.Hour)},
			want{StateAvailable, 1, now.Add(time.Hour), "", jobstore.OutcomeSnoozed, "snooze", time.Hour}},
		{"snooze past the time budget", running(2, t0), nil, result{err: Snooze(25 * time.Hour)},
			want{StateDead, 2, time.Time{}, "time_budget", jobstore.OutcomeSnoozed, "give_up", 25 * time.Hour}},
		{"panic is classified like an error: unmarked, permanent", running(1, t0), nil, result{err: &PanicError{Value: "oops", Stack: "stack"}, stack: "stack"},
			want{StateDead, 1, time.Time{}, "permanent", "permanent", "give_up", 0}},
		{"an unmarked error goes to the dead-letter at once", running(1, t0), nil, result{err: errors.New("boom")},
			want{StateDead, 1, time.Time{}, "permanent", "permanent", "give_up", 0}},
		{"RetryAll retries an unmarked error", running(1, t0), func(p *retry.Policy) { p.Retryable = RetryAll }, result{err: errors.New("boom")},
			want{StateAvailable, 1, now.Add(2 * time.Second), "transient", "transient", "retry", 2 * time.Second}},
		{"a transient database error is retried", running(1, t0), nil, result{err: &sqlState{"40001"}},
			want{StateAvailable, 1, now.Add(2 * time.Second), "transient", "transient", "retry", 2 * time.Second}},
		{"panic with a classifier that refuses panics", running(1, t0), func(p *retry.Policy) {
			p.Retryable = func(err error) bool { _, ok := errors.AsType[*PanicError](err); return !ok }
		}, result{err: &PanicError{Value: "oops", Stack: "stack"}, stack: "stack"},
			want{StateDead, 1, time.Time{}, "permanent", "permanent", "give_up", 0}},
		{"own timeout", running(1, t0), nil, result{err: errBoom, timedOut: true},
			want{StateAvailable, 1, now.Add(2 * time.Second), "timeout", "timeout", "retry", 2 * time.Second}},
		{"attempts exhausted", running(10, t0), nil, result{err: errBoom},
			want{StateDead, 10, time.Time{}, "attempts", "transient", "give_up", 0}},
		{"per-job attempts", &Job{ID: 7, LeaseToken: "tok", Attempt: 2, MaxAttempts: 2, StartedAt: t0}, nil, result{err: errBoom},
			want{StateDead, 2, time.Time{}, "attempts", "transient", "give_up", 0}},
		{"time budget with attempts left", running(2, now.Add(-24*time.Hour+3*time.Second)), nil, result{err: errBoom},
			want{StateDead, 2, time.Time{}, "time_budget", "transient", "give_up", 0}},
		{"time budget just fits a whole attempt", running(1, now.Add(-24*time.Hour+15*time.Minute+2*time.Second)), nil, result{err: errBoom},
			want{StateAvailable, 1, now.Add(2 * time.Second), "transient", "transient", "retry", 2 * time.Second}},
		{"time budget fits the delay, not a whole attempt", running(1, now.Add(-24*time.Hour+3*time.Second)), nil, result{err: errBoom},
			want{StateDead, 1, time.Time{}, "time_budget", "transient", "give_up", 0}},
		{"per-job time budget", &Job{ID: 7, LeaseToken: "tok", Attempt: 1, StartedAt: now.Add(-time.Minute),
			Policy: JobPolicy{TimeBudget: time.Minute}}, nil, result{err: errBoom},
			want{StateDead, 1, time.Time{}, "time_budget", "transient", "give_up", 0}},
		{"per-job backoff", &Job{ID: 7, LeaseToken: "tok", Attempt: 1, StartedAt: t0,
			Policy: JobPolicy{Backoff: &backoff.Schedule{Kind: backoff.Constant, Base: time.Hour, Jitter: backoff.NoJitter}}}, nil, result{err: errBoom},
			want{StateAvailable, 1, now.Add(time.Hour), "transient", "transient", "retry", time.Hour}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := testPolicy()
			if tt.pol != nil {
				tt.pol(&p)
			}
			p = effective(p, tt.job)
			tt.res.started, tt.res.worker = t0, "w1"
			tr, d := decide(&p, tt.job, tt.res, now, rand.NewPCG(1, 2))
			w := tt.want
			e := tr.Entry
			if tr.ID != 7 || tr.LeaseToken != "tok" || tr.State != w.state || tr.Attempt != w.attempt || !tr.AvailableAt.Equal(w.at) {
				t.Errorf("transition %+v, want state %s attempt %d at %v", tr, w.state, w.attempt, w.at)
			}
			if e.Reason != w.reason || e.Outcome != w.outcome || e.Action != w.action || e.Delay != w.delay {
				t.Errorf("entry reason %q outcome %q action %q delay %v, want %q %q %q %v", e.Reason, e.Outcome, e.Action, e.Delay,
					w.reason, w.outcome, w.action, w.delay)
			}
			if e.Attempt != tt.job.Attempt || e.Worker != "w1" || !e.StartedAt.Equal(t0) || !e.FinishedAt.Equal(now) || e.Panic != tt.res.stack {
				t.Errorf("entry %+v", e)
			}
			if tt.res.err != nil && e.Error != tt.res.err.Error() {
				t.Errorf("entry error %q", e.Error)
			}
			switch w.state {
			case StateDead:
				if tr.DeadReason != w.reason || !tr.FinishedAt.Equal(now) || d.Action != retry.GiveUp {
					t.Errorf("dead: reason %q finished %v decision %v", tr.DeadReason, tr.FinishedAt, d)
				}
			case StateSucceeded:
				if !tr.FinishedAt.Equal(now) || d.Action != retry.Done {
					t.Errorf("succeeded: %+v %v", tr, d)
				}
			default:
				if !tr.FinishedAt.IsZero() || tr.DeadReason != "" || !d.At.Equal(w.at) {
					t.Errorf("available: %+v %v", tr, d)
				}
			}
			if err := tr.Validate(); err != nil {
				t.Errorf("invalid transition: %v", err)
			}
		})
	}
}

func TestDecideLost(t *testing.T) {
	now := t0.Add(time.Minute)
	p := testPolicy()
	job := &Job{ID: 1, LeaseToken: "new", Attempt: 3, Worker: "dead-worker", StartedAt: t0, AttemptedAt: t0.Add(time.Second)}
	tr, d := decideLost(&p, job, now, nil)
	e := tr.Entry
	if tr.State != StateAvailable || tr.Attempt != 3 || !tr.AvailableAt.Equal(now.Add(8*time.Second)) || d.Reason != retry.ReasonTransient {
		t.Errorf("lost: %+v %v", tr, d)
	}
	if e.Outcome != jobstore.OutcomeLost || e.Worker != "dead-worker" || !e.StartedAt.Equal(job.AttemptedAt) || !strings.Contains(e.Error, "lease expired") {
		t.Errorf("lost entry: %+v", e)
	}
	// A classifier that retries nothing still retries a lost attempt: it
	// says nothing about the job's own error.
	p.Retryable = func(error) bool { return false }
	if tr, _ := decideLost(&p, job, now, nil); tr.State != StateAvailable {
		t.Errorf("lost with a strict classifier: %+v", tr)
	}
	job.Attempt = 10
	tr, _ = decideLost(&p, job, now, nil)
	if tr.State != StateDead || tr.DeadReason != "attempts" || tr.Entry.Outcome != jobstore.OutcomeLost {
		t.Errorf("lost at the last attempt: %+v", tr)
	}
}

func TestDecideLastDelay(t *testing.T) {
	p := defaultPolicy(retry.Policy{Backoff: backoff.Schedule{Base: time.Second, Cap: time.Hour, Jitter: backoff.DecorrelatedJitter}})
	job := &Job{Attempt: 3, StartedAt: t0, LeaseToken: "t", History: []Attempt{
		{Attempt: 1, Action: "retry", Delay: time.Second},
		{Attempt: 2, Action: "retry", Delay: 10 * time.Minute},
		{Attempt: 2, Action: "snooze", Outcome: jobstore.OutcomeSnoozed, Delay: time.Hour},
	}}
	h := call(&p, job, nil).History
	if h.LastDelay != 10*time.Minute || h.Attempts != 2 || !h.Start.Equal(t0) {
		t.Errorf("history before attempt 3 = %+v", h)
	}
	job.History = append(job.History, Attempt{Outcome: jobstore.OutcomeRequeued, Action: "requeue"})
	if h := call(&p, job, nil).History; h.LastDelay != 0 {
		t.Errorf("LastDelay across a requeue = %v", h.LastDelay)
	}
	tr, _ := decide(&p, &Job{Attempt: 3, StartedAt: t0, LeaseToken: "t", History: job.History[:2]}, result{err: retry.Transient(errors.New("x"))}, t0, rand.NewPCG(3, 4))
	if tr.Entry.Delay < time.Second || tr.Entry.Delay > 30*time.Minute {
		t.Errorf("decorrelated delay %v outside [1s, 30m]", tr.Entry.Delay)
	}
}

func TestDecideExpiredAndRelease(t *testing.T) {
	job := &Job{ID: 3, LeaseToken: "t", Attempt: 4, StartedAt: t0}
	p := testPolicy()
	c := call(&p, job, nil)
	now := t0.Add(25 * time.Hour)
	_, ok := c.Admit(now)
	d := c.Last()
	if ok {
		t.Fatal("an attempt admitted after its time budget")
	}
	tr, _ := refused(job, d, "w", now, nil)
	if tr.State != StateDead || tr.DeadReason != "time_budget" || tr.Entry.Outcome != jobstore.OutcomeExpired || d.Reason != retry.ReasonTimeBudget {
		t.Errorf("expired: %+v", tr)
	}
	if err := tr.Validate(); err != nil {
		t.Error(err)
	}
	tr = decideRelease(job, result{err: errShutdown, started: t0, worker: "w"}, t0.Add(time.Second))
	if tr.State != StateAvailable || tr.Attempt != 3 || !tr.AvailableAt.Equal(t0.Add(time.Second)) || tr.Entry.Outcome != jobstore.OutcomeReleased {
		t.Errorf("release: %+v", tr)
	}
	if err := tr.Validate(); err != nil {
		t.Error(err)
	}
}

func TestNewJobInsert(t *testing.T) {
	for _, tc := range []struct {
		kind  string
		args  string
		opts  EnqueueOptions
		field string
	}{
		{"", "{}", EnqueueOptions{}, "kind"},
		{"k", `{"a":`, EnqueueOptions{}, "args"},
		{"k", "{}", EnqueueOptions{In: -time.Second}, "EnqueueOptions.In"},
		{"k", "{}", EnqueueOptions{In: time.Second, At: t0}, "EnqueueOptions.At"},
		{"k", "{}", EnqueueOptions{Policy: JobPolicy{Backoff: &backoff.Schedule{Multiplier: 0.5}}}, "EnqueueOptions.Policy.Backoff"},
	} {
		_, err := NewJobInsert(tc.kind, []byte(tc.args), tc.opts, t0)
		ie, ok := errors.AsType[*InputError](err)
		if !ok || ie.Field != tc.field || !errors.Is(err, ErrInvalid) || !strings.HasPrefix(err.Error(), "queue: "+tc.field) {
			t.Errorf("NewJobInsert(%q, %s, %+v) = %v, want an error naming %s", tc.kind, tc.args, tc.opts, err, tc.field)
		}
	}
	in, err := NewJobInsert("k", nil, EnqueueOptions{In: time.Minute}, t0.In(time.FixedZone("x", 3600)))
	if err != nil || in.Queue != DefaultQueue || string(in.Args) != "{}" || !in.AvailableAt.Equal(t0.Add(time.Minute)) ||
		in.AvailableAt.Location() != time.UTC || in.CreatedAt != t0 {
		t.Errorf("NewJobInsert defaults: %+v, %v", in, err)
	}
}

func TestAttemptString(t *testing.T) {
	for _, tc := range []struct {
		a    Attempt
		want string
	}{
		{Attempt{Attempt: 2, Outcome: "transient", Error: "connection reset", Action: "retry", Reason: "transient", Delay: 4 * time.Second},
			"attempt 2: transient: connection reset; retry in 4s"},
		{Attempt{Attempt: 3, Outcome: "permanent", Error: "no such user", Action: "give_up", Reason: "permanent"},
			"attempt 3: permanent: no such user; give up (permanent)"},
		{Attempt{Attempt: 1, Outcome: "success", Action: "done", Reason: "success"}, "attempt 1: success; done"},
		{Attempt{Outcome: jobstore.OutcomeRequeued, Action: "requeue", Worker: "ops"}, "requeued by ops"},
	} {
		if got := tc.a.String(); got != tc.want {
			t.Errorf("String() = %q, want %q", got, tc.want)
		}
	}
}

func TestLogObserver(t *testing.T) {
	var buf strings.Builder
	l := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	obs := LogObserver(l)
	job := &Job{ID: 5, Kind: "email", Queue: "mail", Attempt: 2}
	obs(context.Background(), Event{Kind: EventStarted, Job: job}) // Debug: filtered out
	obs(context.Background(), Event{Kind: EventRetried, Job: job, Err: errors.New("reset"),
		Decision: retry.Decision{Action: retry.Retry, Reason: retry.ReasonTransient, Delay: 4 * time.Second}})
	obs(context.Background(), Event{Kind: EventDead, Job: job, Decision: retry.Decision{Action: retry.GiveUp, Reason: retry.ReasonAttempts}})
	out := buf.String()
	for _, want := range []string{
		`level=INFO msg="job retried" job_id=5 kind=email queue=mail attempt=2 event=retried decision=retry reason=transient delay=4s`,
		`error=reset`,
		`level=WARN msg="job dead"`, `reason=attempts`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "started") {
		t.Errorf("debug event logged at info level:\n%s", out)
	}
}

// Zero keeps the worker's value; a negative one turns the limit off for
// the job (heed's convention for "off").
func TestEffectiveOff(t *testing.T) {
	w := WorkerConfig{}.WithDefaults().Policy
	job := &Job{StartedAt: t0, Policy: JobPolicy{TimeBudget: -1, AttemptTimeout: -time.Second}}
	p := effective(w, job)
	if !budgetEnd(&p, job).IsZero() {
		t.Errorf("a negative job TimeBudget still ends at %v", budgetEnd(&p, job))
	}
	c := call(&p, job, nil)
	if l, ok := c.Admit(t0); !ok || !l.At.IsZero() {
		t.Errorf("Admit with both limits off = %+v, %v; want no limit", l, ok)
	}
	if p := effective(w, &Job{StartedAt: t0}); p.TimeBudget != defaultTimeBudget || p.AttemptTimeout != defaultAttemptTimeout {
		t.Errorf("zero job policy: %v, %v; want the defaults", p.TimeBudget, p.AttemptTimeout)
	}
}

// A refusal wave spreads its jobs: 2,000 jobs deferred at one instant by
// the same breaker come back between its end and as long again after it,
// none at the same instant, each tenth of the spread holding about a tenth
// of them. A deferral that follows one for the same attempt and reason
// replaces its entry, counting both.
func TestRefusedSpreadsAndCounts(t *testing.T) {
	ready := t0.Add(5 * time.Second)
	d := retry.Decision{Action: retry.Defer, Reason: retry.ReasonBreakerOpen, Err: errors.New("breaker: circuit open"),
		At: ready, Delay: 5 * time.Second}
	r := rand.NewPCG(1, 2)
	at := map[time.Time]int{}
	tenths := make([]int, 11)
	for i := range 2000 {
		job := &Job{ID: int64(i + 1), LeaseToken: "t", Attempt: 1}
		tr, got := refused(job, d, "w", t0, r)
		if tr.State != StateAvailable || tr.Attempt != 0 || tr.ReplaceLast || tr.Entry.Count != 0 ||
			!tr.AvailableAt.Equal(got.At) || tr.Entry.Delay != got.Delay || got.Delay != got.At.Sub(t0) {
			t.Fatalf("deferral %d: %+v, decision %+v", i, tr, got)
		}
		if got.At.Before(ready) || got.At.After(ready.Add(5*time.Second)) {
			t.Fatalf("deferred to %v, want within [%v, %v]", got.At, ready, ready.Add(5*time.Second))
		}
		at[got.At]++
		tenths[got.At.Sub(ready)/(500*time.Millisecond)]++
	}
	for when, n := range at {
		if n > 1 {
			t.Errorf("%d jobs due at %v", n, when)
		}
	}
	for i, n := range tenths[:10] {
		if n < 140 || n > 260 {
			t.Errorf("tenth %d of the spread holds %d of 2,000 jobs, want about 200", i, n)
		}
	}

	// The same job deferred again, then for another reason, then after an
	// attempt.
	first, _ := refused(&Job{ID: 1, LeaseToken: "t", Attempt: 3}, d, "w", t0, r)
	job := &Job{ID: 1, LeaseToken: "t", Attempt: 3, History: []Attempt{{Attempt: 2, Outcome: "transient"}, first.Entry}}
	later := t0.Add(7 * time.Second)
	tr, _ := refused(job, d, "w2", later, r)
	if !tr.ReplaceLast || tr.Entry.Count != 2 || !tr.Entry.StartedAt.Equal(t0) || !tr.Entry.FinishedAt.Equal(later) || tr.Entry.Worker != "w2" {
		t.Errorf("second deferral: %+v, want the run's entry with count 2 since %v", tr, t0)
	}
	job.History[1] = tr.Entry
	if tr, _ = refused(job, d, "w", later, r); tr.Entry.Count != 3 || !tr.ReplaceLast {
		t.Errorf("third deferral: count %d, replace %v; want 3, true", tr.Entry.Count, tr.ReplaceLast)
	}
	other := d
	other.Reason = retry.ReasonBudget
	if tr, _ = refused(job, other, "w", later, r); tr.ReplaceLast || tr.Entry.Count != 0 {
		t.Errorf("a deferral for another reason joined the run: %+v", tr)
	}
	job.Attempt = 4
	if tr, _ = refused(job, d, "w", later, r); tr.ReplaceLast {
		t.Errorf("a deferral of the next attempt joined the run of the one before: %+v", tr)
	}
	if s := job.History[1].String(); !strings.Contains(s, "deferred 2 times since") {
		t.Errorf("String() = %q, want the count", s)
	}
}
