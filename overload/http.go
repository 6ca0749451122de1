package overload

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/heed-go/heed/internal/admit"
	"github.com/heed-go/heed/internal/wire"
)

// Wrap returns a handler that admits each request through l (see
// [Limiter.Acquire]) before calling next, and answers a refused one 503
// Service Unavailable with Retry-After at once, without calling next. A
// request's attempt number is its Retry-Attempt header (a malformed one
// counts as a first attempt; deadline.Middleware refuses it from trusted
// peers). Put it inside deadline.Middleware, so that the request's context
// carries the caller's deadline.
func (l *Limiter) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		attempt := 0
		if v := r.Header[wire.RetryAttemptHeader]; len(v) > 0 {
			attempt, _ = wire.ParseRetryAttempt(v[0])
		}
		p, err := l.Acquire(r.Context(), attempt)
		if err != nil {
			refuse(w, err)
			return
		}
		defer p.Release()
		next.ServeHTTP(w, r)
	})
}

// refuse answers a refusal from [Limiter.Acquire]: 503 Service Unavailable
// with Retry-After, the error's RetryAfter in whole seconds rounded up (at
// least 1: the header's unit), and a one-line plain-text body.
func refuse(w http.ResponseWriter, err error) {
	secs := int64(1)
	var re *RefusedError
	if errors.As(err, &re) {
		secs = admit.RetryAfterSeconds(re.RetryAfter)
	}
	h := w.Header()
	h.Set("Retry-After", strconv.FormatInt(secs, 10))
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusServiceUnavailable)
	w.Write([]byte(err.Error() + "\n"))
}
