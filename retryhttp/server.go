package retryhttp

import (
	"net/http"

	"github.com/heed-go/heed/deadline"
)

// Handler wraps next in the server side of heed's wire formats: it is
// m.Wrap(next) (see deadline.Middleware), which adopts a trusted peer's
// Timeout-Remaining as the request's deadline, clamped to m.Limit, answers
// 504 when too little time is left and 400 for malformed values, marks the
// context of a request that carries Retry-Attempt so that heed clients
// called while handling it make a single attempt, and adds
// Upstream-Breaker: open to the response when such a client's breaker
// refused a call.
func Handler(next http.Handler, m deadline.Middleware) http.Handler { return m.Wrap(next) }
