// Package chaintest runs three real HTTP services on loopback, a user's
// client calling A, A calling B, B calling C, each client a
// retryhttp.Transport and each server wrapped in deadline.Middleware, under
// an open-loop user load, while C fails for a while. It measures what the
// load-safety promise is about: the attempts that reach C per user request
// (the mean over the fault and the worst second) and the users served.
//
// The tests of retryhttp (the load-safety bounds) and of sim (the simulator
// against the real chain) use it. Loads are small and bounded: at most
// Rate × Deadline user requests are in flight.
package chaintest

import (
	"context"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heed-go/heed/budget"
	"github.com/heed-go/heed/deadline"
	"github.com/heed-go/heed/overload"
	"github.com/heed-go/heed/retryhttp"
)

// Fault is how C fails during the fault.
type Fault int

const (
	// Status503 answers 503 Service Unavailable (to a share ErrorRate of
	// the calls).
	Status503 Fault = iota
	// BlackHole accepts the calls and never answers (until the caller's
	// deadline, which Timeout-Remaining brings to C).
	BlackHole
	// Refused refuses B's connections to C. (C then serves without
	// keep-alives, so that every attempt dials, and during the fault B's
	// dials go to 127.0.0.1:1, where nothing listens: C's own listener is
	// never closed, so no other test can take its port.)
	Refused
	// HalfCapacity: C is a pool of Workers workers, each call one job of
	// Service, queued first in, first out; during the fault half the
	// workers are gone. The pool runs every job it queued, whether its
	// caller is still waiting or not, as most pools do.
	HalfCapacity
	// FIFO: during the fault C serves every call through a pool of Workers
	// workers, each call taking Service, in front of a first-in first-out
	// queue: a server at a fraction of the load's capacity. A call whose
	// caller went away (its deadline passed, or the connection was closed)
	// while it waited is dropped with a 503 when its turn comes; a call a
	// worker took is finished whatever happens to its caller. Outside the
	// fault, and for a call whose turn comes after it, C answers at once.
	FIFO
	// Spike: C is a congested service, each call taking Service plus
	// LoadLatency for every other call in it when it starts, with no
	// limit on the calls in it (it finishes every call it took, whether
	// its caller waits or not), and during the fault users arrive at
	// SpikeFactor times the Rate: the seeds' metastable spike (sim's
	// built-in "spike") on real services.
	Spike
)

// Config is one run. Zero fields take the defaults named.
type Config struct {
	// Rate is user requests per second, evenly spaced (default 20: enough
	// for the budget's ratio to hold at every second, little enough for a
	// busy machine under the race detector).
	Rate float64
	// Healthy, FaultFor and After are the phases (defaults 2 s, 8 s, 1 s).
	Healthy, FaultFor, After time.Duration
	// Fault is how C fails; ErrorRate the share of its calls that fail
	// during the fault (default 1).
	Fault     Fault
	ErrorRate float64
	// Deadline is each user request's deadline (default 2 s).
	Deadline time.Duration
	// OwnershipOff sets OwnershipOff on A's and B's middleware.
	OwnershipOff bool
	// Budget is every client's Transport.Budget (zero: the defaults).
	Budget budget.Config
	// Seed seeds C's random failures.
	Seed uint64

	// Workers and Service are C's pool, for HalfCapacity and FIFO
	// (defaults 24 and 200 ms: 120 calls/s, HalfCapacity's 60 during the
	// fault).
	Workers int
	Service time.Duration
	// LoadLatency and SpikeFactor are the Spike fault's (defaults 10 ms
	// per call in C, and 2).
	LoadLatency time.Duration
	SpikeFactor float64
	// Client, when set, makes the clients of every hop (the user's, A's
	// and B's) over base (nil for the user's: net/http's default) instead
	// of zero retryhttp.Transports: for other libraries.
	Client func(base http.RoundTripper) http.RoundTripper
	// ClientFor is Client told the hop ("user", "A" or "B"); it wins over
	// Client.
	ClientFor func(hop string, base http.RoundTripper) http.RoundTripper
	// Transport, when set, is called with each hop's retryhttp.Transport
	// before its first request, to change its settings: hop is "user",
	// "A" (A's client, which calls B) or "B".
	Transport func(hop string, tr *retryhttp.Transport)
	// Overload, when set, puts C behind an overload.Limiter with this
	// Config, inside C's deadline.Middleware.
	Overload *overload.Config
}

func (c *Config) defaults() {
	if c.Rate == 0 {
		c.Rate = 20
	}
	if c.Healthy == 0 {
		c.Healthy = 2 * time.Second
	}
	if c.FaultFor == 0 {
		c.FaultFor = 8 * time.Second
	}
	if c.After == 0 {
		c.After = time.Second
	}
	if c.ErrorRate == 0 {
		c.ErrorRate = 1
	}
	if c.Deadline == 0 {
		c.Deadline = 2 * time.Second
	}
	if c.Workers == 0 {
		c.Workers = 24
	}
	if c.Service == 0 {
		c.Service = 200 * time.Millisecond
	}
	if c.LoadLatency == 0 {
		c.LoadLatency = 10 * time.Millisecond
	}
	if c.SpikeFactor == 0 {
		c.SpikeFactor = 2
	}
}

// Second is one second of a run, counted by when things happened.
type Second struct {
	Users    int64 // user requests started
	Attempts int64 // attempts that reached C
	Served   int64 // user requests started this second that succeeded
}

// Summary sums up the fault: the user requests that started during it,
// and the attempts that reached C during it.
type Summary struct {
	Users, Served, Attempts int64
	// Mean is Attempts / Users; Worst the highest attempts / users of a
	// second wholly inside the fault (seconds counted from the run's
	// start); ServedShare is Served / Users.
	Mean, Worst, ServedShare float64
	// WorstWindow is the highest attempts / users of any 1 s window
	// wholly inside the fault, sliding by 10 ms from the fault's start:
	// the onset's window included, wherever in a second the fault starts.
	WorstWindow float64
}

// Pool is what C's pool did (HalfCapacity, FIFO).
type Pool struct {
	// Capacity is the pool's capacity during the fault, jobs per second.
	Capacity float64
	// ServedRate is the users started during the fault who were served,
	// per second of the fault.
	ServedRate float64
	// P50 and P99 are the latencies of those users.
	P50, P99 time.Duration
	// Finished is the jobs the pool finished during the fault, and Wasted
	// those whose caller had gone by then.
	Finished, Wasted int64
	// RecoveredAfter is how long after the fault's end every 250 ms of
	// users (by start) was served at 95% or more; -1 if never in the run.
	RecoveredAfter time.Duration
}

// Result is a run's outcome.
type Result struct {
	Seconds []Second
	Fault   Summary
	Pool    Pool
	// Late is the most a 10 ms timer of the run woke late, from the
	// fault's start to the run's end: a machine too busy to run the
	// chain's goroutines on time (the race detector, other packages'
	// tests) shows here; see OnTime.
	Late time.Duration
	// HealthyServed is the share of the user requests started before the
	// fault that succeeded: below 1, the machine could not carry the load,
	// and the figures do not describe heed.
	HealthyServed float64
}

// Usable reports whether the run measured heed rather than a machine too
// busy to carry the load: at least 95% of the user requests before the
// fault succeeded.
func (r *Result) Usable() bool { return r.HealthyServed >= 0.95 }

// MaxLate is the most a timer may wake late for [Result.OnTime].
const MaxLate = 250 * time.Millisecond

// OnTime reports whether the machine ran the chain's goroutines on time
// from the fault on: no 10 ms timer woke more than MaxLate late. Which
// users a deadline leaves served depends on when answers arrive: on a
// loaded two-core machine (load average 15 to 22), 2× overload runs whose
// timers were at most 64 to 181 ms late served 60.5% to 65.2% of their
// users (the simulator 65.9%), runs 345 and 391 ms late 60.8% and 60.1%,
// and one 2.7 s late 48.7%.
func (r *Result) OnTime() bool { return r.Late <= MaxLate }

// Run runs cfg and returns what it measured. It fails t if the chain
// cannot be built.
func Run(t testing.TB, cfg Config) Result {
	t.Helper()
	cfg.defaults()
	total := cfg.Healthy + cfg.FaultFor + cfg.After
	nsec := int(total/time.Second) + int(cfg.Deadline/time.Second) + 3
	users := make([]atomic.Int64, nsec)
	good := make([]atomic.Int64, nsec)
	attempts := make([]atomic.Int64, nsec)
	// The same counts in steps of 10 ms, for WorstWindow.
	nfine := nsec * 100
	fineUsers := make([]atomic.Int64, nfine)
	fineAttempts := make([]atomic.Int64, nfine)
	var start time.Time
	sec := func(d time.Duration) int { return min(max(int(d/time.Second), 0), nsec-1) }
	fine := func(d time.Duration) int { return min(max(int(d/(10*time.Millisecond)), 0), nfine-1) }
	inFault := func(d time.Duration) bool { return d >= cfg.Healthy && d < cfg.Healthy+cfg.FaultFor }

	var finished, wasted atomic.Int64
	cInner, stopPool := serviceC(t, cfg, func() bool { return inFault(time.Since(start)) }, &finished, &wasted)
	cHandler := deadline.Middleware{}.Wrap(cInner)
	c := httptest.NewUnstartedServer(cHandler)
	if cfg.Fault == Refused {
		c.Config.SetKeepAlivesEnabled(false)
	}
	c.Start()
	defer c.Close()
	if stopPool != nil {
		defer stopPool()
	}
	// One registry per run: budgets do not carry over between runs that
	// happen to get the same ports.
	reg := &budget.Registry{}
	transport := func(hop string, base http.RoundTripper) http.RoundTripper {
		if cfg.ClientFor != nil {
			return cfg.ClientFor(hop, base)
		}
		if cfg.Client != nil {
			return cfg.Client(base)
		}
		tr := &retryhttp.Transport{Base: base, Budget: cfg.Budget, Budgets: reg}
		if cfg.Transport != nil {
			cfg.Transport(hop, tr)
		}
		return tr
	}
	closeIdle := func(rt http.RoundTripper) {
		if c, ok := rt.(interface{ CloseIdleConnections() }); ok {
			c.CloseIdleConnections()
		}
	}
	// The load on C is counted where B sends it, attempt by attempt, so
	// that refused connections count as well as answered requests.
	base := http.DefaultTransport.(*http.Transport).Clone()
	defer base.CloseIdleConnections()
	if cfg.Fault == Refused {
		var d net.Dialer
		base.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			if inFault(time.Since(start)) {
				addr = "127.0.0.1:1" // nothing listens there: refused
			}
			return d.DialContext(ctx, network, addr)
		}
	}
	toC := roundTripper(func(r *http.Request) (*http.Response, error) {
		d := time.Since(start)
		attempts[sec(d)].Add(1)
		fineAttempts[fine(d)].Add(1)
		return base.RoundTrip(r)
	})
	mw := deadline.Middleware{OwnershipOff: cfg.OwnershipOff}
	forward := func(hop, next string, base http.RoundTripper) (*httptest.Server, http.RoundTripper) {
		tr := transport(hop, base)
		srv := httptest.NewServer(mw.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			req, _ := http.NewRequestWithContext(r.Context(), "GET", next, nil)
			resp, err := tr.RoundTrip(req)
			if err != nil {
				http.Error(w, "upstream failed", http.StatusBadGateway)
				return
			}
			defer resp.Body.Close()
			// A service that passes its dependency's answer on passes
			// on when to come back too.
			if v := resp.Header.Get("Retry-After"); v != "" {
				w.Header().Set("Retry-After", v)
			}
			w.WriteHeader(resp.StatusCode)
			io.Copy(w, io.LimitReader(resp.Body, 1<<10))
		})))
		return srv, tr
	}
	b, trB := forward("B", c.URL, toC)
	defer b.Close()
	defer closeIdle(trB)
	a, trA := forward("A", b.URL, nil)
	defer a.Close()
	defer closeIdle(trA)
	user := transport("user", nil)
	defer closeIdle(user)

	type userRec struct {
		began, took time.Duration
		ok          bool
	}
	var recMu sync.Mutex
	recs := make([]userRec, 0, int(cfg.Rate*cfg.SpikeFactor*total.Seconds())+1)
	// Open-loop pacing: users arrive evenly spaced at the Rate (times the
	// SpikeFactor in a Spike's fault), whatever happened to the others.
	arrivals := arrivalTimes(cfg, total, inFault)
	var wg sync.WaitGroup
	// How late a timer wakes, from the fault on (see OnTime).
	lates := make(chan []time.Duration, 1)
	stopLate := make(chan struct{})
	start = time.Now()
	go func() {
		var ls []time.Duration
		for {
			t0 := time.Now()
			select {
			case <-stopLate:
				lates <- ls
				return
			case <-time.After(10 * time.Millisecond):
			}
			if t0.Sub(start) >= cfg.Healthy {
				ls = append(ls, time.Since(t0)-10*time.Millisecond)
			}
		}
	}()
	for _, at := range arrivals {
		if d := time.Until(start.Add(at)); d > 0 {
			time.Sleep(d)
		}
		wg.Go(func() {
			began := time.Since(start)
			k := sec(began)
			users[k].Add(1)
			fineUsers[fine(began)].Add(1)
			ctx, cancel := context.WithTimeout(context.Background(), cfg.Deadline)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, "GET", a.URL, nil)
			resp, err := user.RoundTrip(req)
			ok := false
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				ok = resp.StatusCode == http.StatusOK
			}
			if ok {
				good[k].Add(1)
			}
			recMu.Lock()
			recs = append(recs, userRec{began, time.Since(start) - began, ok})
			recMu.Unlock()
		})
	}
	wg.Wait()
	close(stopLate)

	var res Result
	if ls := <-lates; len(ls) > 0 {
		res.Late = slices.Max(ls)
	}
	for k := range nsec {
		res.Seconds = append(res.Seconds, Second{Users: users[k].Load(), Attempts: attempts[k].Load(), Served: good[k].Load()})
	}
	faultFigures(&res, cfg, inFault)
	res.Fault.WorstWindow = worstWindow(fineUsers, fineAttempts, fine(cfg.Healthy), fine(cfg.Healthy+cfg.FaultFor))
	if cfg.Fault == HalfCapacity || cfg.Fault == FIFO {
		res.Pool = poolResult(cfg, recs, finished.Load(), wasted.Load(), func(r userRec) (time.Duration, time.Duration, bool) {
			return r.began, r.took, r.ok
		})
		if cfg.Fault == FIFO {
			res.Pool.Capacity = float64(cfg.Workers) / cfg.Service.Seconds()
		}
	}
	return res
}

// serviceC returns the handler of C, the bottom service, failing as
// cfg.Fault says while faulty() (FIFO and HalfCapacity count the attempts
// finished and wasted in the fault), and the function that stops its
// worker pool, if it has one.
func serviceC(t testing.TB, cfg Config, faulty func() bool, finished, wasted *atomic.Int64) (http.Handler, func()) {
	t.Helper()
	var mu sync.Mutex
	rnd := rand.New(rand.NewPCG(cfg.Seed, 1))
	fail := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return rnd.Float64() < cfg.ErrorRate
	}
	var cInner http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if faulty() && cfg.Fault != Refused && fail() {
			if cfg.Fault == BlackHole {
				<-r.Context().Done()
				panic(http.ErrAbortHandler) // never answer, even late
			}
			http.Error(w, "C is down", http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "ok")
	})
	var stopPool func()
	if cfg.Fault == FIFO {
		cInner, stopPool = fifo(cfg, faulty, finished, wasted)
	}
	if cfg.Fault == HalfCapacity {
		workers := func() int {
			if faulty() {
				return cfg.Workers / 2
			}
			return cfg.Workers
		}
		var p *pool
		p, stopPool = newPool(cfg.Workers, cfg.Service, workers, func(gone bool) {
			if faulty() {
				finished.Add(1)
				if gone {
					wasted.Add(1)
				}
			}
		})
		cInner = p
	}
	if cfg.Fault == Spike {
		var in atomic.Int64
		cInner = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			n := in.Add(1)
			time.Sleep(cfg.Service + time.Duration(n-1)*cfg.LoadLatency)
			in.Add(-1)
			io.WriteString(w, "ok")
		})
	}
	if cfg.Overload != nil {
		lim, err := overload.New(*cfg.Overload)
		if err != nil {
			t.Fatal(err)
		}
		cInner = lim.Wrap(cInner)
	}
	return cInner, stopPool
}

// arrivalTimes returns when users arrive, from 0 to total: evenly spaced
// at the Rate (times the SpikeFactor in a Spike's fault).
func arrivalTimes(cfg Config, total time.Duration, inFault func(time.Duration) bool) []time.Duration {
	var arrivals []time.Duration
	for at := time.Duration(0); at < total; {
		arrivals = append(arrivals, at)
		gap := time.Duration(float64(time.Second) / cfg.Rate)
		if cfg.Fault == Spike && inFault(at) {
			gap = time.Duration(float64(gap) / cfg.SpikeFactor)
		}
		at += gap
	}
	return arrivals
}

// faultFigures sets res.HealthyServed and the fault's figures but
// WorstWindow from res.Seconds.
func faultFigures(res *Result, cfg Config, inFault func(time.Duration) bool) {
	f := &res.Fault
	var hu, hs int64
	for k, s := range res.Seconds {
		from, to := time.Duration(k)*time.Second, time.Duration(k+1)*time.Second
		if to <= cfg.Healthy {
			hu += s.Users
			hs += s.Served
		}
		if !inFault(from) {
			continue
		}
		f.Users += s.Users
		f.Served += s.Served
		f.Attempts += s.Attempts
		if inFault(to-1) && s.Users > 0 {
			f.Worst = max(f.Worst, float64(s.Attempts)/float64(s.Users))
		}
	}
	if hu > 0 {
		res.HealthyServed = float64(hs) / float64(hu)
	}
	if f.Users > 0 {
		f.Mean = float64(f.Attempts) / float64(f.Users)
		f.ServedShare = float64(f.Served) / float64(f.Users)
	}
}

// worstWindow returns the most attempts per user in any 1 s window (100
// steps of 10 ms) of the steps from to to.
func worstWindow(fineUsers, fineAttempts []atomic.Int64, from, to int) float64 {
	worst := 0.0
	for a := from; a+100 <= to; a++ {
		var u, n int64
		for i := a; i < a+100; i++ {
			u += fineUsers[i].Load()
			n += fineAttempts[i].Load()
		}
		if u > 0 {
			worst = max(worst, float64(n)/float64(u))
		}
	}
	return worst
}

// fifo returns C's handler for a FIFO fault and a function that stops its
// workers. Workers take calls in the order they came (channel senders wait
// in order), each keeping its own schedule: a call's work starts when the
// worker's previous call ended or when the call came, whichever is later,
// not when the worker got to it, so that the pool serves exactly
// Workers/Service calls a second whatever the handoffs and late timers
// cost. (Counting from when the worker got to it lost a timer's lateness
// per call: the pool served about 49 calls a second, not 50, and the
// users of a 2× overload stopped being served 0.1 s earlier than in the
// simulator.)
// finished and wasted count the calls a worker took during the fault, and
// those whose caller had gone when it was done.
func fifo(cfg Config, inFault func() bool, finished, wasted *atomic.Int64) (http.Handler, func()) {
	type job struct {
		ctx  context.Context
		at   time.Time // when it came
		done chan bool // true: served; false: dropped, its caller gone
	}
	jobs, stop := make(chan job), make(chan struct{})
	for range cfg.Workers {
		go func() {
			free := time.Now()
			for {
				var j job
				select {
				case j = <-jobs:
				case <-stop:
					return
				}
				if j.ctx.Err() != nil {
					j.done <- false
					continue
				}
				if inFault() { // its turn came before the fault ended
					free = later(free, j.at).Add(cfg.Service)
					time.Sleep(time.Until(free))
					finished.Add(1)
					if j.ctx.Err() != nil {
						wasted.Add(1)
					}
				}
				j.done <- true
			}
		}()
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if inFault() {
			j := job{r.Context(), time.Now(), make(chan bool, 1)}
			select {
			case jobs <- j:
			case <-r.Context().Done():
				http.Error(w, "C dropped the call: its caller went away", http.StatusServiceUnavailable)
				return
			case <-stop:
				http.Error(w, "C stopped", http.StatusServiceUnavailable)
				return
			}
			if !<-j.done {
				http.Error(w, "C dropped the call: its caller went away", http.StatusServiceUnavailable)
				return
			}
		}
		io.WriteString(w, "ok")
	})
	return h, func() { close(stop) }
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// poolResult sums up a HalfCapacity run from its users' records.
func poolResult[R any](cfg Config, recs []R, finished, wasted int64, get func(R) (began, took time.Duration, ok bool)) Pool {
	p := Pool{
		Capacity: float64(cfg.Workers/2) / cfg.Service.Seconds(),
		Finished: finished, Wasted: wasted, RecoveredAfter: -1,
	}
	faultEnd := cfg.Healthy + cfg.FaultFor
	var lat []time.Duration
	const bin = 250 * time.Millisecond
	nb := int(cfg.After / bin)
	users, served := make([]int, nb), make([]int, nb)
	for _, r := range recs {
		began, took, ok := get(r)
		if began >= cfg.Healthy && began < faultEnd && ok {
			lat = append(lat, took)
		}
		if b := int((began - faultEnd) / bin); began >= faultEnd && b < nb {
			users[b]++
			if ok {
				served[b]++
			}
		}
	}
	p.ServedRate = float64(len(lat)) / cfg.FaultFor.Seconds()
	if len(lat) > 0 {
		slices.Sort(lat)
		p.P50 = lat[len(lat)/2]
		p.P99 = lat[min(len(lat)-1, len(lat)*99/100)]
	}
	for b := nb - 1; b >= 0; b-- {
		if users[b] == 0 || float64(served[b]) < 0.95*float64(users[b]) {
			break
		}
		p.RecoveredAfter = time.Duration(b) * bin
	}
	return p
}

// pool is C's worker pool: jobs queue first in, first out, and each
// takes a worker for service. Only workers() of its workers take jobs at
// any time.
type pool struct {
	jobs chan *job
}

type job struct {
	ctx  context.Context
	done chan struct{}
}

// newPool starts n workers; stop ends them. finish is told of every job
// done, and whether its caller had gone.
func newPool(n int, service time.Duration, workers func() int, finish func(gone bool)) (*pool, func()) {
	p := &pool{jobs: make(chan *job, 1<<16)}
	quit := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			for {
				if i >= workers() {
					select {
					case <-quit:
						return
					case <-time.After(5 * time.Millisecond):
					}
					continue
				}
				select {
				case <-quit:
					return
				case j := <-p.jobs:
					time.Sleep(service)
					finish(j.ctx.Err() != nil)
					close(j.done)
				case <-time.After(5 * time.Millisecond):
				}
			}
		})
	}
	return p, func() { close(quit); wg.Wait() }
}

// ServeHTTP queues the call's job and answers when it is done, or gives
// up when the caller goes (the job still runs).
func (p *pool) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	j := &job{ctx: r.Context(), done: make(chan struct{})}
	p.jobs <- j
	select {
	case <-j.done:
		io.WriteString(w, "ok")
	case <-r.Context().Done():
		http.Error(w, "gone", http.StatusServiceUnavailable)
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
