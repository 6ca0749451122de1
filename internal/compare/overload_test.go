package compare

// The cost of server-side overload control when the server is not
// overloaded: a no-op handler behind heed's overload.Limiter (its zero
// Config: adaptive) and behind failsafe-go's adaptivelimiter (its
// defaults), through each library's own http.Handler middleware, and
// through failsafe-go's permit API by hand (its cheapest path). One op is
// one request on an httptest recorder, from one goroutine and from
// every processor at once:
//
//	go test -run '^$' -bench Overload -cpu 2 -count 5 .
//
// The bare handler is the baseline; subtract it.

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/failsafe-go/failsafe-go/adaptivelimiter"
	"github.com/failsafe-go/failsafe-go/failsafehttp"

	"github.com/heed-go/heed/overload"
)

func overloadHandlers(b *testing.B) []struct {
	name string
	h    http.Handler
} {
	noop := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	lim, err := overload.New(overload.Config{})
	if err != nil {
		b.Fatal(err)
	}
	fs := adaptivelimiter.NewWithDefaults[*http.Response]()
	fsPermit := adaptivelimiter.NewWithDefaults[*http.Response]()
	return []struct {
		name string
		h    http.Handler
	}{
		{"bare", noop},
		{"heed", lim.Wrap(noop)},
		{"failsafe-go-handler", failsafehttp.NewHandler(noop, fs)},
		{"failsafe-go-permit", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			p, err := fsPermit.AcquirePermit(r.Context())
			if err != nil {
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			defer p.Record()
			noop.ServeHTTP(w, r)
		})},
	}
}

func BenchmarkOverload(b *testing.B) {
	for _, c := range overloadHandlers(b) {
		b.Run(c.name, func(b *testing.B) {
			w := httptest.NewRecorder()
			r := httptest.NewRequest("GET", "/", nil)
			b.ReportAllocs()
			for b.Loop() {
				c.h.ServeHTTP(w, r)
			}
		})
	}
}

func BenchmarkOverloadParallel(b *testing.B) {
	for _, c := range overloadHandlers(b) {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				w := httptest.NewRecorder()
				r := httptest.NewRequest("GET", "/", nil)
				for pb.Next() {
					c.h.ServeHTTP(w, r)
				}
			})
		})
	}
}
