package overload

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// Retry-After is whole seconds, rounded up, at least 1.
func TestRefuseRetryAfter(t *testing.T) {
	for _, tt := range []struct {
		after time.Duration
		want  string
	}{
		{0, "1"}, {time.Millisecond, "1"}, {time.Second, "1"}, {1001 * time.Millisecond, "2"}, {20 * time.Second, "20"},
	} {
		w := httptest.NewRecorder()
		refuse(w, &RefusedError{Reason: ReasonQueueFull, RetryAfter: tt.after})
		if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") != tt.want {
			t.Errorf("RetryAfter %v: %d, Retry-After %q; want 503, %q", tt.after, w.Code, w.Header().Get("Retry-After"), tt.want)
		}
	}
}

// A handler that panics (as net/http's ErrAbortHandler asks) still gives
// its place back.
func TestWrapReleasesOnPanic(t *testing.T) {
	l := mustNew(t, Config{Limit: 1})
	h := l.Wrap(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic(http.ErrAbortHandler) }))
	func() {
		defer func() {
			if r := recover(); !errors.Is(r.(error), http.ErrAbortHandler) {
				t.Errorf("recovered %v", r)
			}
		}()
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	}()
	if st := l.Stats(); st.InFlight != 0 {
		t.Errorf("in flight after a panic: %d, want 0", st.InFlight)
	}
}
