package sim

import (
	"bytes"
	"context"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/heed-go/heed/backoff"
	"github.com/heed-go/heed/breaker"
	"github.com/heed-go/heed/budget"
	"github.com/heed-go/heed/retry"
)

// immediate is a layer that retries at once, attempts times in all, with
// no budget, no attempt share, and ownership off.
func immediate(attempts int) Layer {
	return Layer{Retry: retry.Policy{Attempts: attempts, Backoff: backoff.Schedule{Kind: backoff.Immediate}},
		Budget: budget.Config{Ratio: -1}, AttemptShare: -1, OwnershipOff: true}
}

// owned is immediate with ownership on: it honours a claim from above.
func owned(attempts int) Layer {
	l := immediate(attempts)
	l.OwnershipOff = false
	return l
}

// down is a scenario whose bottom service is down for the whole horizon.
func down(horizon time.Duration, rate float64, layers ...Layer) Scenario {
	return Scenario{
		Name:    "down",
		Horizon: horizon,
		Load:    Load{Rate: rate, Arrival: Constant},
		Faults:  []Fault{{Kind: Outage, Start: 0, End: horizon}},
		Chains:  []Chain{{Layers: layers}},
	}
}

func run1(t *testing.T, s Scenario) *Result {
	t.Helper()
	rs, err := Run(s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return rs[0]
}

// With every attempt failing at once and no delays, each user request
// makes exactly the product of the layers' attempts at the bottom.
func TestAmplificationIsTheProductOfAttempts(t *testing.T) {
	tests := []struct {
		attempts []int
		want     int64
	}{
		{[]int{4, 4, 4}, 64}, // 3 layers × 3 retries
		{[]int{3, 3, 3}, 27},
		{[]int{2, 3, 4}, 24},
		{[]int{5}, 5},
		{[]int{1, 1, 1}, 1},
		{[]int{3, 3, 3, 3, 3}, 243}, // AWS Builders' Library: 3 tries at 5 layers
	}
	for _, tt := range tests {
		var layers []Layer
		for _, a := range tt.attempts {
			layers = append(layers, immediate(a))
		}
		r := run1(t, down(10*time.Second, 10, layers...))
		s := r.Summary
		if s.UserRequests != 100 || s.Failed != 100 || s.Attempts != tt.want*100 || s.AttemptsPerRequest != float64(tt.want) {
			t.Errorf("attempts %v: %d user requests, %d failed, %d attempts (%v per request), want 100, 100, %d (%d)",
				tt.attempts, s.UserRequests, s.Failed, s.Attempts, s.AttemptsPerRequest, tt.want*100, tt.want)
		}
		if s.PeakAmplification != float64(tt.want) {
			t.Errorf("attempts %v: peak amplification %v, want %d", tt.attempts, s.PeakAmplification, tt.want)
		}
	}
}

// A retry owner makes the chain cost (1 + retries), not (1 + retries)^layers.
func TestOwnerStopsMultiplication(t *testing.T) {
	r := run1(t, down(10*time.Second, 10, immediate(4), owned(4), owned(4)))
	if got := r.Summary.AttemptsPerRequest; got != 4 {
		t.Errorf("attempts per request %v, want 4", got)
	}
	if got := r.Summary.GiveUps["attempts"]; got != 100 {
		t.Errorf("give-ups %v, want 100 for attempts", r.Summary.GiveUps)
	}
}

// The Google SRE book's "just 1.1x": one retry owner with the default retry
// budget keeps the load of a total outage near 1 + Ratio (1.09) × the user
// request rate.
func TestBudgetBoundsOutageLoad(t *testing.T) {
	top := Layer{
		Retry:  retry.Policy{Attempts: 4, Backoff: backoff.Schedule{Base: 10 * time.Millisecond, Cap: 100 * time.Millisecond}},
		Budget: budget.Config{}, // the defaults: 9% of the requests
	}
	s := down(40*time.Second, 1000, top, owned(4), owned(4))
	s.Load.Arrival = Poisson
	s.Faults[0].Start = 10 * time.Second
	r := run1(t, s)
	ratio := func(from, to time.Duration) float64 {
		var users, attempts int64
		for _, p := range r.Series {
			if p.At >= from && p.At < to {
				users += p.UserRequests
				attempts += p.Attempts
			}
		}
		return float64(attempts) / float64(users)
	}
	whole, steady := ratio(10*time.Second, 40*time.Second), ratio(20*time.Second, 40*time.Second)
	t.Logf("load during the outage: %.3f× the user request rate (%.3f× after the first window)", whole, steady)
	if want := 1 + budget.DefaultRatio; whole > 1.15 || steady > want+0.015 || steady < want-0.05 {
		t.Errorf("load during the outage %.3f× (steady %.3f×), want about %.2f×", whole, steady, want)
	}
	if before := ratio(0, 10*time.Second); before != 1 {
		t.Errorf("load before the outage %.3f×, want 1×", before)
	}
}

// A spike tips a service with naive retries into a metastable failure:
// goodput stays near zero long after the spike ends. The same scenario
// with heed's defaults recovers.
func TestSpikeMetastableWithoutBudget(t *testing.T) {
	s, _ := Builtin("spike")
	rs, err := Run(s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	tail := func(r *Result) (users, good int64) {
		for _, p := range r.Series {
			if p.At >= s.Horizon-30*time.Second {
				users += p.UserRequests
				good += p.Goodput
			}
		}
		return users, good
	}
	naive, heed := rs[0], rs[1]
	users, good := tail(naive)
	t.Logf("naive: %s; last 30s goodput %d of %d; in flight at the end %d; %s",
		naive.Chain, good, users, naive.Series[len(naive.Series)-1].InFlight, naive.Summary.RecoveryString())
	if naive.Summary.Recovered || float64(good) > 0.05*float64(users) {
		t.Errorf("naive retries recovered (goodput %d of %d in the last 30s); want a metastable failure", good, users)
	}
	// Users give up after 6 s, but the service keeps working on what they
	// left: several times the normal 40-odd in flight.
	if inFlight := naive.Series[len(naive.Series)-1].InFlight; inFlight < 200 {
		t.Errorf("naive: %d in flight at the end, want a backlog", inFlight)
	}
	users, good = tail(heed)
	t.Logf("heed: last 30s goodput %d of %d; %s", good, users, heed.Summary.RecoveryString())
	if !heed.Summary.Recovered || heed.Summary.RecoveryTime > 10*time.Second || float64(good) < 0.95*float64(users) {
		t.Errorf("heed: %s, goodput %d of %d in the last 30s; want a recovery", heed.Summary.RecoveryString(), good, users)
	}
	// Without the spike, naive retries are fine: the trigger matters.
	s.Faults = nil
	if r := run1(t, only(s, "calm", 0, "")); r.Summary.SuccessRate < 0.95 || r.Summary.AttemptsPerRequest > 1.01 {
		t.Errorf("naive without a spike: success %.3f, %.3f attempts per request", r.Summary.SuccessRate, r.Summary.AttemptsPerRequest)
	}
}

// The same scenario and seed give the same output, byte for byte; another
// seed gives another.
func TestDeterministic(t *testing.T) {
	csvOf := func(s Scenario) ([]*Result, []byte) {
		rs, err := Run(s, Options{})
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := WriteCSV(&b, rs...); err != nil {
			t.Fatal(err)
		}
		return rs, b.Bytes()
	}
	for _, name := range []string{"spike", "layers"} {
		s, _ := Builtin(name)
		s.Horizon = 25 * time.Second
		r1, b1 := csvOf(s)
		r2, b2 := csvOf(s)
		if !bytes.Equal(b1, b2) || !reflect.DeepEqual(r1, r2) {
			t.Errorf("%s: two runs differ", name)
		}
		s.Seed++
		if _, b3 := csvOf(s); bytes.Equal(b1, b3) {
			t.Errorf("%s: seeds %d and %d give the same output", name, s.Seed-1, s.Seed)
		}
	}
}

// Every policy of a scenario sees the same user requests.
func TestPoliciesSeeTheSameArrivals(t *testing.T) {
	s, _ := Builtin("layers")
	s.Horizon = 30 * time.Second
	rs, err := Run(s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs[1:] {
		for i, p := range r.Series {
			if p.UserRequests != rs[0].Series[i].UserRequests {
				t.Fatalf("%s: interval %d has %d user requests, %s has %d", r.Chain, i, p.UserRequests, rs[0].Chain, rs[0].Series[i].UserRequests)
			}
		}
	}
	if n := rs[0].Summary.UserRequests; n < 2800 || n > 3200 {
		t.Errorf("%d user requests in 30s at 100/s", n)
	}
}

// A breaker stops attempts during an outage.
func TestBreakerSheds(t *testing.T) {
	l := immediate(3)
	l.Breaker = &breaker.Config{Cooldown: time.Second}
	r := run1(t, down(20*time.Second, 100, l))
	if got := r.Summary.AttemptsPerRequest; got > 0.2 {
		t.Errorf("attempts per request %.3f with an open breaker, want far below 1", got)
	}
	if r.Summary.GiveUps["breaker_open"] == 0 {
		t.Errorf("give-ups %v, want breaker_open", r.Summary.GiveUps)
	}
}

// The bottom service: a queue that fills rejects, a capacity drop slows
// service, an error window fails attempts, and timeouts orphan work.
func TestService(t *testing.T) {
	one := immediate(1)
	base := Scenario{
		Horizon: 10 * time.Second,
		Load:    Load{Rate: 100, Arrival: Constant},
		Service: Service{Concurrency: 1, ServiceTime: 5 * time.Millisecond},
		Chains:  []Chain{{Layers: []Layer{one}}},
	}
	if r := run1(t, base); r.Summary.Succeeded != 1000 || r.Summary.P50 < 4800*time.Microsecond || r.Summary.P50 > 5200*time.Microsecond {
		t.Errorf("healthy: %+v", r.Summary)
	}

	s := base
	s.Service.ServiceTime = 20 * time.Millisecond // 50/s against 100/s
	s.Service.QueueLimit = 10
	r := run1(t, s)
	if got := r.Summary.SuccessRate; got < 0.45 || got > 0.55 {
		t.Errorf("overloaded with a queue of 10: success rate %.3f, want about 0.5", got)
	}
	if q := r.Series[5].Queue; q != 10 && q != 9 {
		t.Errorf("queue %d, want full (10)", q)
	}

	s = base
	s.Faults = []Fault{{Kind: CapacityDrop, Start: 2 * time.Second, End: 4 * time.Second, Factor: 0.25}}
	r = run1(t, s)
	if p := r.Series[3].P50; p < 15*time.Millisecond {
		t.Errorf("latency during a capacity drop to 25%%: p50 %v, want 20ms or more", p)
	}
	if !r.Summary.Recovered {
		t.Errorf("capacity drop: %s", r.Summary.RecoveryString())
	}

	s = base
	s.Faults = []Fault{{Kind: ErrorRate, Start: 0, End: 10 * time.Second, Rate: 0.5}}
	r = run1(t, s)
	if got := r.Summary.SuccessRate; got < 0.4 || got > 0.6 {
		t.Errorf("50%% errors, no retries: success rate %.3f", got)
	}
	if r.Summary.Recovered {
		t.Errorf("a fault to the horizon: %s", r.Summary.RecoveryString())
	}

	s = base
	s.Service.ServiceTime = 100 * time.Millisecond
	s.Service.Concurrency = 0
	s.Chains = []Chain{{Layers: []Layer{{Retry: retry.Policy{Attempts: 1, AttemptTimeout: 50 * time.Millisecond}}}}}
	r = run1(t, s)
	if r.Summary.Failed < 990 || r.Summary.GiveUps["attempts"] < 990 || r.Summary.Orphaned < 990 {
		t.Errorf("every attempt times out: %+v", r.Summary)
	}
}

// A propagated deadline lets the bottom drop work nobody waits for.
func TestPropagateDeadline(t *testing.T) {
	s := Scenario{
		Horizon: 20 * time.Second,
		Load:    Load{Rate: 100, Deadline: 500 * time.Millisecond},
		Service: Service{Concurrency: 1, ServiceTime: 5 * time.Millisecond},
		Faults:  []Fault{{Kind: Spike, Start: 5 * time.Second, End: 10 * time.Second, Factor: 3}},
		Chains: []Chain{
			{Name: "no propagation", Layers: []Layer{immediate(1)}},
			{Name: "propagation", Layers: []Layer{immediate(1)}, PropagateDeadline: true},
		},
	}
	rs, err := Run(s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	without, with := rs[0].Summary, rs[1].Summary
	t.Logf("without: %s, orphaned %d, success %.3f; with: %s, orphaned %d, success %.3f",
		without.RecoveryString(), without.Orphaned, without.SuccessRate, with.RecoveryString(), with.Orphaned, with.SuccessRate)
	if with.Orphaned >= without.Orphaned || with.SuccessRate <= without.SuccessRate {
		t.Errorf("propagating deadlines did not help: orphaned %d vs %d, success %.3f vs %.3f",
			with.Orphaned, without.Orphaned, with.SuccessRate, without.SuccessRate)
	}
}

func TestValidate(t *testing.T) {
	ok := func() Scenario {
		return Scenario{Horizon: time.Minute, Load: Load{Rate: 10}, Chains: []Chain{{Layers: []Layer{{}}}}}
	}
	tests := []struct {
		change func(*Scenario)
		want   string
	}{
		{func(s *Scenario) { s.Horizon = 0 }, "horizon is 0s, must be positive"},
		{func(s *Scenario) { s.Interval = 2 * time.Minute }, "interval is 2m0s, longer than the horizon"},
		{func(s *Scenario) { s.Load.Rate = -1 }, "load.rate is -1, must be a positive number"},
		{func(s *Scenario) { s.Service.ErrorRate = 2 }, "service.error_rate is 2, must be from 0 to 1"},
		{func(s *Scenario) { s.Service.QueueLimit = -2 }, "service.queue_limit is -2"},
		{func(s *Scenario) { s.Faults = []Fault{{Kind: Outage, Start: time.Second, End: time.Second}} }, "faults[0].end is 1s, must be after start 1s"},
		{func(s *Scenario) { s.Faults = []Fault{{Kind: CapacityDrop, End: time.Second, Factor: 2}} }, "faults[0].factor is 2, must be in (0, 1]"},
		{func(s *Scenario) { s.Faults = []Fault{{Kind: Outage, End: time.Second, Rate: 0.5}} }, "faults[0].rate is set, but a outage fault has no rate"},
		{func(s *Scenario) { s.Chains = nil }, "policies is empty"},
		{func(s *Scenario) { s.Chains[0].Name = "a"; s.Chains = append(s.Chains, s.Chains[0]) }, `policies[1].name is "a", used by an earlier policy`},
		{func(s *Scenario) { s.Chains[0].Layers = nil }, "policies[0].layers is empty"},
		{func(s *Scenario) { s.Chains[0].Layers[0].Retry.Attempts = retry.Unlimited }, "policies[0].layers[0].attempts is -1, must be at least 1"},
		{func(s *Scenario) { s.Chains[0].Layers[0].Retry.Backoff.Multiplier = 0.5 }, "policies[0].layers[0].backoff.multiplier is 0.5, must be at least 1"},
		{func(s *Scenario) { s.Chains[0].Layers[0].Budget = budget.Config{Burst: 0.15} }, "policies[0].layers[0].budget.burst is 0.15, must be at least 1: it is the number of retries the bucket holds (default 5), no longer a share of the window"},
		{func(s *Scenario) { s.Chains[0].Layers[0].AttemptShare = 1 }, "policies[0].layers[0].attempt_share is 1, must be below 1"},
		{func(s *Scenario) { s.Chains[0].Layers[0].Breaker = &breaker.Config{MinCalls: -1} }, "policies[0].layers[0].breaker.min_calls is -1"},
		{func(s *Scenario) { s.Chains[0].Layers[0].Retry.Budget = &budget.Budget{} }, "policies[0].layers[0].retry has a Budget or Breaker"},
	}
	if s := ok(); s.Validate() != nil {
		t.Fatalf("valid scenario: %v", s.Validate())
	}
	for _, tt := range tests {
		s := ok()
		tt.change(&s)
		err := s.Validate()
		if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, ErrInvalid) {
			t.Errorf("error %v, want one containing %q", err, tt.want)
		}
		if _, err := Run(s, Options{}); err == nil {
			t.Errorf("Run accepted an invalid scenario (%s)", tt.want)
		}
	}
}

func TestBuiltins(t *testing.T) {
	for _, name := range Builtins() {
		s, ok := Builtin(name)
		if !ok || s.Name != name || s.Description == "" {
			t.Errorf("%s: %v %q %q", name, ok, s.Name, s.Description)
		}
		if err := s.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, ok := Builtin("nope"); ok {
		t.Error("Builtin(nope) found a scenario")
	}
}

func TestHistogram(t *testing.T) {
	var h hist
	for v := int64(1); v <= 1000; v++ {
		h.add(v * int64(time.Millisecond))
	}
	for _, q := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 500 * time.Millisecond}, {0.99, 990 * time.Millisecond}, {1, time.Second}} {
		got := h.quantile(q.q)
		if d := float64(got-q.want) / float64(q.want); d < -0.035 || d > 0.035 {
			t.Errorf("quantile %v = %v, want %v within 3.5%%", q.q, got, q.want)
		}
	}
	for i := range histBuckets {
		if histIndex(int64(histValue(i))) != i {
			t.Fatalf("bucket %d: midpoint %v maps to %d", i, histValue(i), histIndex(int64(histValue(i))))
		}
	}
}

// The event loop allocates nothing per event: a longer run allocates no
// more than a short one beyond its time series and pool.
func TestAllocations(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	s, _ := Builtin("layers")
	s.Chains = s.Chains[2:]
	s.Horizon = 20 * time.Second
	short := testing.AllocsPerRun(2, func() { _, _ = Run(s, Options{}) })
	s.Horizon = 60 * time.Second
	long := testing.AllocsPerRun(2, func() { _, _ = Run(s, Options{}) })
	if long > short+40 {
		t.Errorf("%v allocations for 20s, %v for 60s: allocations grow with events", short, long)
	}
}

func TestProgressAndCancel(t *testing.T) {
	s, _ := Builtin("layers")
	var calls []time.Duration
	rs, err := Run(s, Options{Progress: func(policy int, at time.Duration) {
		if policy == 0 {
			calls = append(calls, at)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) < 2 || calls[len(calls)-1] != s.Horizon {
		t.Errorf("progress %v, want several calls ending at the horizon", calls)
	}
	for i := 1; i < len(calls); i++ {
		if calls[i] < calls[i-1] {
			t.Errorf("progress went backwards: %v", calls)
		}
	}
	plain, _ := Run(s, Options{})
	if !reflect.DeepEqual(rs, plain) {
		t.Error("a run with progress differs from one without")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Run(s, Options{Context: ctx}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled run: %v", err)
	}
}

// In the layers scenario's outage, the retry budget (the same code as
// retryhttp's) keeps every second at the bottom within 1.2× the user
// requests of that second: it refills a step at a time, instead of letting
// the outage spend a whole window's allowance in one second (2.2× before).
func TestLayersBudgetSmooth(t *testing.T) {
	s, _ := Builtin("layers")
	rs, err := Run(s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := rs[2] // one owner + budget
	if r.Chain != "one owner + budget" {
		t.Fatalf("policy %q", r.Chain)
	}
	var attempts, users int64
	for _, p := range r.Series {
		if p.At < 20*time.Second || p.At >= 40*time.Second || p.UserRequests == 0 {
			continue
		}
		attempts += p.Attempts
		users += p.UserRequests
		if a := float64(p.Attempts) / float64(p.UserRequests); a > 1.2 {
			t.Errorf("at %v: %d attempts at the bottom for %d user requests (%.2f×), want at most 1.2×", p.At, p.Attempts, p.UserRequests, a)
		}
	}
	mean := float64(attempts) / float64(users)
	t.Logf("mean %.3f× over the outage", mean)
	if want := 1 + budget.DefaultRatio; math.Abs(mean-want) > 0.05 {
		t.Errorf("mean %.3f× over the outage, want about 1 + Ratio, %.2f×", mean, want)
	}
}

// A black hole at any depth: the bottom service (depth 0) receives each
// attempt and answers none; the last layer (depth 1) accepts the calls and
// never calls the bottom service. With an attempt share at the top (the
// owner of the retries), the user's client retries within the budget;
// without one, an attempt takes all the time left and nothing is retried.
func TestBlackHoleAtAnyDepth(t *testing.T) {
	for _, tt := range []struct {
		depth        int
		share        float64
		min, max     float64 // attempts at the bottom per user request in the fault
		retriedAtTop bool
	}{
		{0, 0, 1, 1, false},
		{0, 0.5, 1.02, 1.2, true},
		{1, 0, 0, 0, false},
		{2, 0.5, 0, 0, true},
	} {
		s := Scenario{
			Name:    "black hole",
			Horizon: 30 * time.Second,
			Load:    Load{Rate: 100, Arrival: Constant, Deadline: 2 * time.Second},
			Faults:  []Fault{{Kind: BlackHole, Depth: tt.depth, Start: 5 * time.Second, End: 25 * time.Second}},
			Chains:  []Chain{{PropagateDeadline: true, Layers: []Layer{{AttemptShare: tt.share}, {}, {}}}},
		}
		var retries int
		e := newEngine(&s, 0, nil)
		e.decided = func(d retry.Decision) {
			if d.Action == retry.Retry {
				retries++
			}
		}
		res := e.run()
		f := res.Summary.Fault
		// Served: with a share, the users of the hole's last second, whose
		// retry comes after it heals (5% of the fault's); without, none.
		served := 0.0
		if tt.retriedAtTop {
			served = 0.06
		}
		if f.AttemptsPerRequest < tt.min || f.AttemptsPerRequest > tt.max || f.SuccessRate > served {
			t.Errorf("depth %d, share %v: %.2f attempts at the bottom per user, %.0f%% served; want %v to %v, at most %.0f%% served",
				tt.depth, tt.share, f.AttemptsPerRequest, 100*f.SuccessRate, tt.min, tt.max, 100*served)
		}
		if (retries > 0) != tt.retriedAtTop {
			t.Errorf("depth %d, share %v: %d retries, want some: %v", tt.depth, tt.share, retries, tt.retriedAtTop)
		}
	}
}
