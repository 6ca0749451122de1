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
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heed-go/heed/budget"
	"github.com/heed-go/heed/deadline"
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
	// Overload serves every call through a pool of Config.Workers workers
	// in front of a first-in first-out queue, each call taking Config.Work
	// of a worker: a server at a fraction of the load's capacity. A call
	// whose caller went away (its deadline passed, or the connection was
	// closed) while it waited is dropped with a 503 when its turn comes; a
	// call a worker took is finished whatever happens to its caller, as a
	// server's work is. A call whose turn comes after the fault is served at
	// once.
	Overload
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
	// Workers and Work are C's pool in an Overload (defaults 5 and 100 ms:
	// 50 calls a second).
	Workers int
	Work    time.Duration
	// Client, when set, makes the clients of every hop (the user's, A's
	// and B's) over base (nil for the user's: net/http's default) instead
	// of zero retryhttp.Transports: for other libraries.
	Client func(base http.RoundTripper) http.RoundTripper
	// Transport, when set, is called with each hop's retryhttp.Transport
	// before its first request, to change its settings: hop is "user",
	// "A" (A's client, which calls B) or "B".
	Transport func(hop string, tr *retryhttp.Transport)
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
		c.Workers = 5
	}
	if c.Work == 0 {
		c.Work = 100 * time.Millisecond
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
	// second wholly inside the fault; ServedShare is Served / Users.
	Mean, Worst, ServedShare float64
	// Worked is the calls C's workers finished during the fault (an
	// Overload), Wasted those of them whose caller had gone by then.
	Worked, Wasted int64
}

// Result is a run's outcome.
type Result struct {
	Seconds []Second
	Fault   Summary
	// HealthyServed is the share of the user requests started before the
	// fault that succeeded: below 1, the machine could not carry the load,
	// and the figures do not describe heed.
	HealthyServed float64
}

// Usable reports whether the run measured heed rather than a machine too
// busy to carry the load: at least 95% of the user requests before the
// fault succeeded.
func (r *Result) Usable() bool { return r.HealthyServed >= 0.95 }

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
	var start time.Time
	sec := func(d time.Duration) int { return min(max(int(d/time.Second), 0), nsec-1) }
	inFault := func(d time.Duration) bool { return d >= cfg.Healthy && d < cfg.Healthy+cfg.FaultFor }

	var mu sync.Mutex
	rnd := rand.New(rand.NewPCG(cfg.Seed, 1))
	fail := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return rnd.Float64() < cfg.ErrorRate
	}
	var worked, wasted atomic.Int64
	// C's pool in an Overload: workers take calls from jobs in the order
	// they came (channel senders wait in order), each keeping its own
	// schedule, so that the pool serves exactly Workers/Work calls a second
	// whatever the handoffs cost.
	type job struct {
		ctx  context.Context
		done chan bool // true: served; false: dropped, its caller gone
	}
	jobs := make(chan job)
	if cfg.Fault == Overload {
		defer close(jobs)
		for range cfg.Workers {
			go func() {
				free := time.Now()
				for j := range jobs {
					if j.ctx.Err() != nil {
						j.done <- false
						continue
					}
					if inFault(time.Since(start)) { // its turn came before the fault ended
						free = later(free, time.Now()).Add(cfg.Work)
						time.Sleep(time.Until(free))
					}
					worked.Add(1)
					if j.ctx.Err() != nil {
						wasted.Add(1)
					}
					j.done <- true
				}
			}()
		}
	}
	cHandler := deadline.Middleware{}.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if cfg.Fault == Overload {
			if !inFault(time.Since(start)) {
				io.WriteString(w, "ok")
				return
			}
			j := job{r.Context(), make(chan bool, 1)}
			select {
			case jobs <- j:
			case <-r.Context().Done():
				http.Error(w, "C dropped the call: its caller went away", http.StatusServiceUnavailable)
				return
			}
			if !<-j.done {
				http.Error(w, "C dropped the call: its caller went away", http.StatusServiceUnavailable)
				return
			}
			io.WriteString(w, "ok")
			return
		}
		if inFault(time.Since(start)) && cfg.Fault != Refused && fail() {
			if cfg.Fault == BlackHole {
				<-r.Context().Done()
				panic(http.ErrAbortHandler) // never answer, even late
			}
			http.Error(w, "C is down", http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "ok")
	}))
	c := httptest.NewUnstartedServer(cHandler)
	if cfg.Fault == Refused {
		c.Config.SetKeepAlivesEnabled(false)
	}
	c.Start()
	defer c.Close()
	// One registry per run: budgets do not carry over between runs that
	// happen to get the same ports.
	reg := &budget.Registry{}
	transport := func(hop string, base http.RoundTripper) http.RoundTripper {
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
		attempts[sec(time.Since(start))].Add(1)
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

	n := int(cfg.Rate * total.Seconds())
	gap := time.Duration(float64(time.Second) / cfg.Rate)
	var wg sync.WaitGroup
	start = time.Now()
	for i := range n {
		// Open-loop pacing: the i-th user arrives at start + i × gap,
		// whatever happened to the others.
		if d := time.Until(start.Add(time.Duration(i) * gap)); d > 0 {
			time.Sleep(d)
		}
		wg.Go(func() {
			began := time.Since(start)
			k := sec(began)
			users[k].Add(1)
			ctx, cancel := context.WithTimeout(context.Background(), cfg.Deadline)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, "GET", a.URL, nil)
			resp, err := user.RoundTrip(req)
			if err != nil {
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				good[k].Add(1)
			}
		})
	}
	wg.Wait()

	var res Result
	for k := range nsec {
		res.Seconds = append(res.Seconds, Second{Users: users[k].Load(), Attempts: attempts[k].Load(), Served: good[k].Load()})
	}
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
	f.Worked, f.Wasted = worked.Load(), wasted.Load()
	if f.Users > 0 {
		f.Mean = float64(f.Attempts) / float64(f.Users)
		f.ServedShare = float64(f.Served) / float64(f.Users)
	}
	return res
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
