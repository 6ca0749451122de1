package retryhttp

// Names the external tests use, unexported because no user needs them.
const (
	DefaultHeaderMargin = defaultHeaderMargin
	MaxRetryAfter       = maxRetryAfter
)
