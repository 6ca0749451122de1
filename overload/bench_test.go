package overload

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// BenchmarkWrap is the middleware's cost on a request that is not
// overloaded: admitted at once, its latency sampled on release. The
// handler does nothing; compare BenchmarkBare.
func BenchmarkWrap(b *testing.B) {
	l, _ := New(Config{})
	h := l.Wrap(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	w := httptest.NewRecorder()
	r := httptest.NewRequest("GET", "/", nil)
	r.Header.Set("Retry-Attempt", "1")
	b.ReportAllocs()
	for b.Loop() {
		h.ServeHTTP(w, r)
	}
}

// BenchmarkWrapParallel is BenchmarkWrap from every processor at once.
func BenchmarkWrapParallel(b *testing.B) {
	l, _ := New(Config{MaxLimit: 10000, InitialLimit: 10000})
	h := l.Wrap(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		w := httptest.NewRecorder()
		r := httptest.NewRequest("GET", "/", nil)
		for pb.Next() {
			h.ServeHTTP(w, r)
		}
	})
}

// BenchmarkBare is the same request straight to the handler.
func BenchmarkBare(b *testing.B) {
	h := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	w := httptest.NewRecorder()
	r := httptest.NewRequest("GET", "/", nil)
	b.ReportAllocs()
	for b.Loop() {
		h.ServeHTTP(w, r)
	}
}
