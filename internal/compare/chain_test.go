package compare

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/failsafe-go/failsafe-go/failsafehttp"
	"github.com/hashicorp/go-retryablehttp"

	"github.com/heed-go/heed/budget"
	"github.com/heed-go/heed/internal/chaintest"
	"github.com/heed-go/heed/internal/wire"
	"github.com/heed-go/heed/retryhttp"
)

// chainClient is one way of making the clients of the chain's hops.
type chainClient struct {
	name string
	cfg  func(*chaintest.Config)
}

// chainClients are the clients compared on internal/chaintest's chain of
// three services: heed's defaults at every hop, heed with its attempt
// share's alternatives at the user's hop (the only one that retries, the
// others being owned), and the other libraries at every hop with their
// defaults.
//
//   - heed: zero retryhttp.Transports.
//   - heed-share-0.5: AttemptShare 0.5 set at every hop (the old default).
//   - heed-share-off: AttemptShare -1 at every hop.
//   - heed-until-headers: AttemptShare off, and the user's attempt cut at
//     half the time left only while no response headers have arrived (a
//     base under the user's Transport does it: the cut looks to retryhttp
//     like a transport timeout, which it retries).
//   - heed-hedge: AttemptShare off, and at half the time left a second
//     copy of the user's attempt sent beside the first, when the
//     destination's retry budget allows a retry; the first answer wins.
//   - naive: 3 attempts, retried at once on any error or 5xx.
//   - failsafe-go: failsafehttp's retry policy with its defaults (3
//     attempts, no delay).
//   - go-retryablehttp: its defaults (5 attempts, 1 s to 30 s backoff).
func chainClients() []chainClient {
	share := func(v float64) func(*chaintest.Config) {
		return func(c *chaintest.Config) {
			c.Transport = func(_ string, tr *retryhttp.Transport) { tr.AttemptShare = v }
		}
	}
	userBase := func(wrap func(base http.RoundTripper, reg *budget.Registry) http.RoundTripper) func(*chaintest.Config) {
		return func(c *chaintest.Config) {
			reg := &budget.Registry{}
			c.Transport = func(hop string, tr *retryhttp.Transport) {
				tr.AttemptShare = -1
				if hop == "user" {
					tr.Base = wrap(http.DefaultTransport, reg)
				}
			}
		}
	}
	client := func(f func(base http.RoundTripper) http.RoundTripper) func(*chaintest.Config) {
		return func(c *chaintest.Config) { c.Client = f }
	}
	return []chainClient{
		{"heed", func(*chaintest.Config) {}},
		{"heed-share-0.5", share(0.5)},
		{"heed-share-off", share(-1)},
		{"heed-until-headers", userBase(func(base http.RoundTripper, _ *budget.Registry) http.RoundTripper {
			return untilHeaders{base}
		})},
		{"heed-hedge", userBase(func(base http.RoundTripper, reg *budget.Registry) http.RoundTripper {
			return hedge{base, reg}
		})},
		{"naive", client(func(base http.RoundTripper) http.RoundTripper { return naive{orDefault(base)} })},
		{"failsafe-go", client(func(base http.RoundTripper) http.RoundTripper {
			return failsafehttp.NewRoundTripper(orDefault(base), failsafehttp.NewRetryPolicyBuilder().Build())
		})},
		{"go-retryablehttp", client(func(base http.RoundTripper) http.RoundTripper {
			rc := retryablehttp.NewClient()
			rc.HTTPClient = &http.Client{Transport: orDefault(base)}
			rc.Logger = nil
			return &retryablehttp.RoundTripper{Client: rc}
		})},
	}
}

func orDefault(rt http.RoundTripper) http.RoundTripper {
	if rt == nil {
		return http.DefaultTransport.(*http.Transport).Clone()
	}
	return rt
}

// naive repeats a request up to 3 times at once on any error or 5xx.
type naive struct{ base http.RoundTripper }

func (n naive) RoundTrip(r *http.Request) (*http.Response, error) {
	for i := 1; ; i++ {
		resp, err := n.base.RoundTrip(r)
		if i == 3 || r.Context().Err() != nil || err == nil && resp.StatusCode < 500 {
			return resp, err
		}
		if err == nil {
			resp.Body.Close()
		}
	}
}

// halfLeft returns half the time left before r's deadline, when r is not
// its call's last attempt (retryhttp's Retry-Attempt below 3, its default
// attempts), and false otherwise.
func halfLeft(r *http.Request) (time.Duration, bool) {
	dl, ok := r.Context().Deadline()
	n, _ := strconv.Atoi(r.Header.Get(wire.RetryAttemptHeader))
	if !ok || n == 0 || n >= 3 {
		return 0, false
	}
	return time.Until(dl) / 2, true
}

// cutError is the error of an attempt cut while no headers had come.
type cutError struct{}

func (cutError) Error() string   { return "no response headers in half the time left" }
func (cutError) Timeout() bool   { return true }
func (cutError) Temporary() bool { return true }

var _ net.Error = cutError{}

// untilHeaders cuts an attempt at half the time left if its response
// headers have not arrived by then.
type untilHeaders struct{ base http.RoundTripper }

func (u untilHeaders) RoundTrip(r *http.Request) (*http.Response, error) {
	d, ok := halfLeft(r)
	if !ok {
		return u.base.RoundTrip(r)
	}
	ctx, cancel := context.WithCancel(r.Context())
	t := time.AfterFunc(d, cancel)
	resp, err := u.base.RoundTrip(r.WithContext(ctx))
	if !t.Stop() {
		// It fired: the headers had not come.
		if err == nil {
			resp.Body.Close()
		}
		return nil, cutError{}
	}
	if err != nil {
		cancel()
		return nil, err
	}
	resp.Body = &cancelBody{resp.Body, cancel}
	return resp, nil
}

// cancelBody releases an attempt's context when its body is closed.
type cancelBody struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

// hedge sends a second copy of an attempt at half the time left if no
// headers have come and the destination's retry budget allows a retry.
type hedge struct {
	base http.RoundTripper
	reg  *budget.Registry
}

func (h hedge) RoundTrip(r *http.Request) (*http.Response, error) {
	d, ok := halfLeft(r)
	if !ok {
		return h.base.RoundTrip(r)
	}
	b, _ := h.reg.For(r.URL.Host, budget.Config{})
	b.Request()
	type result struct {
		resp *http.Response
		err  error
		i    int
	}
	ctx, cancel := context.WithCancel(r.Context())
	ctxs := [2]context.Context{ctx, nil}
	cancels := [2]context.CancelFunc{cancel, nil}
	out := make(chan result, 2)
	send := func(i int) {
		resp, err := h.base.RoundTrip(r.Clone(ctxs[i]))
		out <- result{resp, err, i}
	}
	go send(0)
	t := time.NewTimer(d)
	defer t.Stop()
	pending := 1
	for {
		select {
		case <-t.C:
			if b.AllowRetry() {
				ctxs[1], cancels[1] = context.WithCancel(r.Context())
				go send(1)
				pending++
			}
		case res := <-out:
			pending--
			if res.err != nil && pending > 0 {
				continue // the other may still answer
			}
			for i, c := range cancels {
				if c != nil && i != res.i {
					c()
				}
			}
			if res.err != nil {
				cancels[res.i]()
				return nil, res.err
			}
			res.resp.Body = &cancelBody{res.resp.Body, cancels[res.i]}
			return res.resp, nil
		}
	}
}

// TestChainOverload measures the clients on the chain whose bottom
// service, C, serves half of the load: 100 users a second with a 5 s
// deadline, C a FIFO pool of 5 workers taking 100 ms a call (50 a
// second) for 15 s. The users served are those who came in the first
// 10 s of the overload, whose deadline ends before it does. Set
// HEED_COMPARE_CHAIN=1 to run it (about 25 s a client);
// HEED_COMPARE_CLIENTS=a,b picks clients by name.
func TestChainOverload(t *testing.T) {
	chainRuns(t, chaintest.Config{Rate: 100, Deadline: 5 * time.Second, Fault: chaintest.FIFO,
		Workers: 5, Service: 100 * time.Millisecond, Healthy: 2 * time.Second, FaultFor: 15 * time.Second, After: time.Second},
		func(t *testing.T, r chaintest.Result, fault time.Duration) {
			var users, served int64
			for _, s := range r.Seconds[2:12] {
				users += s.Users
				served += s.Served
			}
			f := r.Fault
			t.Logf("served %.1f users/s (%.1f%% of %d), %.2f attempts at C per user, C worked %d, %.0f%% of it for callers gone; healthy %.0f%%",
				float64(served)/10, 100*float64(served)/float64(users), users, f.Mean, r.Pool.Finished, 100*float64(r.Pool.Wasted)/float64(max(r.Pool.Finished, 1)), 100*r.HealthyServed)
		})
}

// TestChainBlackHole measures the clients on the chain whose bottom
// service accepts calls and never answers for 8 s: 100 users a second, a
// 2 s deadline. It reports the load on C per user and the users served in
// the first second after C heals, and the users of the last 2 s of the
// black hole that were served after all.
func TestChainBlackHole(t *testing.T) {
	chainRuns(t, chaintest.Config{Rate: 100, Fault: chaintest.BlackHole},
		func(t *testing.T, r chaintest.Result, fault time.Duration) {
			heal := int((2*time.Second + fault) / time.Second)
			s := r.Seconds[heal]
			late := r.Seconds[heal-1].Served + r.Seconds[heal-2].Served
			t.Logf("fault: %.2f× mean, %.2f× worst; first second after the heal: %.2f× load, %.0f%% served; users of the black hole's last 2 s served: %d; healthy %.0f%%",
				r.Fault.Mean, r.Fault.Worst, float64(s.Attempts)/float64(max(s.Users, 1)), 100*float64(s.Served)/float64(max(s.Users, 1)), late, 100*r.HealthyServed)
		})
}

func chainRuns(t *testing.T, cfg chaintest.Config, report func(*testing.T, chaintest.Result, time.Duration)) {
	if os.Getenv("HEED_COMPARE_CHAIN") == "" {
		t.Skip("set HEED_COMPARE_CHAIN=1 to run the chain's loads")
	}
	pick := os.Getenv("HEED_COMPARE_CLIENTS")
	for _, c := range chainClients() {
		if pick != "" && !strings.Contains(","+pick+",", ","+c.name+",") {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			run := cfg
			c.cfg(&run)
			r := chaintest.Run(t, run)
			fault := run.FaultFor
			if fault == 0 {
				fault = 8 * time.Second
			}
			report(t, r, fault)
		})
	}
}
