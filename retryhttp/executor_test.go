package retryhttp_test

import (
	"context"
	"crypto/x509"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heed-go/heed/budget"
	"github.com/heed-go/heed/retry"
	"github.com/heed-go/heed/retry/executortest"
	"github.com/heed-go/heed/retryhttp"
)

// httpExecutor runs the conformance cases through a retryhttp.Transport
// whose base answers as the script says, in virtual time.
type httpExecutor struct{}

func (httpExecutor) Durable() bool { return false }

type scripted struct {
	c  executortest.Case
	mu sync.Mutex // hedges call at the same time
	n  int
}

func (s *scripted) RoundTrip(req *http.Request) (*http.Response, error) {
	s.mu.Lock()
	s.n++
	st := s.c.Step(s.n)
	s.mu.Unlock()
	if err := executortest.Take(req.Context(), st); err != nil {
		return nil, err
	}
	resp := &http.Response{StatusCode: http.StatusOK, Status: "200 OK", Header: http.Header{},
		Body: io.NopCloser(strings.NewReader("")), Request: req}
	switch st.Kind {
	case executortest.Transient:
		resp.StatusCode, resp.Status = 503, "503 Service Unavailable"
	case executortest.Permanent:
		return nil, x509.UnknownAuthorityError{}
	case executortest.Timeout:
		<-req.Context().Done()
		return nil, req.Context().Err()
	case executortest.Pushback:
		resp.StatusCode, resp.Status = 429, "429 Too Many Requests"
		resp.Header.Set("Retry-After", strconv.Itoa(int(st.Wait/time.Second)))
	}
	return resp, nil
}

func (httpExecutor) Run(t *testing.T, c executortest.Case) []retry.Decision {
	var ds []retry.Decision
	synctest.Test(t, func(t *testing.T) {
		p := c.Policy(time.Now())
		p.Observe = func(_ context.Context, e retry.Event) { ds = append(ds, e.Decision) }
		tr := &retryhttp.Transport{Policy: p, Base: &scripted{c: c}, Budget: budget.Config{Ratio: -1}}
		ctx := context.Background()
		if c.Deadline > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, c.Deadline)
			defer cancel()
		}
		req, _ := http.NewRequestWithContext(ctx, "GET", "http://service.test/", nil)
		if resp, err := tr.RoundTrip(req); err == nil {
			resp.Body.Close()
		}
	})
	return ds
}

func TestConformance(t *testing.T) { executortest.Run(t, httpExecutor{}) }

func TestConformanceHedge(t *testing.T) { executortest.RunHedge(t, httpExecutor{}) }

// slowBase answers every request in 2 s, unless its context ends first.
type slowBase struct{ requests int }

func (b *slowBase) RoundTrip(r *http.Request) (*http.Response, error) {
	b.requests++
	select {
	case <-time.After(2 * time.Second):
		return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Header: http.Header{}, Request: r}, nil
	case <-r.Context().Done():
		return nil, r.Context().Err()
	}
}

// TestSlowServerNotCut: a server that answers in 2 s, under a caller's
// 3 s deadline, answers the first request of a zero Transport; with an
// AttemptShare of 0.5 the same request is cut at 1.5 s, again at 0.75 s,
// and fails after 3 requests.
func TestSlowServerNotCut(t *testing.T) {
	for _, tt := range []struct {
		share    float64
		requests int
		ok       bool
	}{{0, 1, true}, {0.5, 3, false}} {
		synctest.Test(t, func(t *testing.T) {
			base := &slowBase{}
			tr := &retryhttp.Transport{Base: base, AttemptShare: tt.share, Budget: budget.Config{Ratio: -1}}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, "GET", "http://slow.internal/", nil)
			resp, err := tr.RoundTrip(req)
			if err == nil {
				resp.Body.Close()
			}
			if (err == nil) != tt.ok || base.requests != tt.requests {
				t.Errorf("AttemptShare %v: %v after %d requests, want success %v after %d", tt.share, err, base.requests, tt.ok, tt.requests)
			}
		})
	}
}
