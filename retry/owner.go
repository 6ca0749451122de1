package retry

import (
	"context"

	"github.com/heed-go/heed/deadline"
)

// WithUpstreamOwner returns a context that says a caller further up the
// chain owns retries for this work (for example, the request arrived with a
// Retry-Attempt header from a client that retries). heed's executors called
// under it make a single attempt and give up with ReasonUpstreamOwns, so a
// chain of services that all retry makes (1 + r) attempts, not
// (1 + r)^layers. It is the mark deadline.Middleware sets
// (deadline.WithUpstreamOwner).
func WithUpstreamOwner(ctx context.Context) context.Context {
	return deadline.WithUpstreamOwner(ctx)
}

// UpstreamOwns reports whether ctx was marked by [WithUpstreamOwner] (or by
// deadline.Middleware for a request that carried Retry-Attempt).
func UpstreamOwns(ctx context.Context) bool { return deadline.UpstreamOwns(ctx) }
