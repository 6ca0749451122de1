package retry

import "context"

type upstreamKey struct{}

// WithUpstreamOwner returns a context that says a caller further up the
// chain owns retries for this work (for example, the request arrived with a
// Retry-Attempt header from a client that retries). heed's executors called
// under it make a single attempt and give up with ReasonUpstreamOwns, so a
// chain of services that all retry makes (1 + r) attempts, not
// (1 + r)^layers.
func WithUpstreamOwner(ctx context.Context) context.Context {
	return context.WithValue(ctx, upstreamKey{}, true)
}

// UpstreamOwns reports whether ctx was marked by [WithUpstreamOwner].
func UpstreamOwns(ctx context.Context) bool {
	v, _ := ctx.Value(upstreamKey{}).(bool)
	return v
}
