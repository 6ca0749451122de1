package retryhttp

import (
	"net/http"

	"github.com/heed-go/heed/deadline"
	"github.com/heed-go/heed/retry"
)

// Handler wraps next in the server side of heed's wire formats: m (see
// deadline.Middleware) adopts a trusted peer's Timeout-Remaining as the
// request's deadline, clamped to m.Limit, answers 504 when too little time
// is left and 400 for malformed values, and, when the request carries
// Retry-Attempt, marks its context with retry.WithUpstreamOwner, so heed
// clients called while handling it make a single attempt: the caller owns
// the retries. Ownership is on unless m.IgnoreRetryAttempt is set; m.Owner,
// when set, replaces retry.WithUpstreamOwner.
//
// It lives here rather than in deadline because deadline, a core package
// that retry may import, cannot import retry.
func Handler(next http.Handler, m deadline.Middleware) http.Handler {
	if m.Owner == nil {
		m.Owner = retry.WithUpstreamOwner
	}
	return m.Wrap(next)
}
