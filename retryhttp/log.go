package retryhttp

import (
	"context"
	"log/slog"
	"net/url"
	"time"

	"github.com/heed-go/heed/internal/attemptlog"
	"github.com/heed-go/heed/internal/redact"
	"github.com/heed-go/heed/retry"
)

// RedactURL returns u as a string fit for logs and errors: user
// information, the values of query parameters and fragment pairs whose
// names look secret (token, access_token, api_key, key, secret, password,
// pass, pwd, jwt, bearer, auth, authorization, signature, sig, session,
// code and any name ending in one of them, such as X-Amz-Signature), and
// path segments or values that look like credentials (16 bytes or more of
// a token alphabet, changing between digits, lower- and upper-case letters
// at least once every four bytes, as webhook tokens do; long hex IDs are
// hidden too) are replaced by "REDACTED". The rules are heed's one set,
// shared by its logs, job histories, command and metrics.
func RedactURL(u *url.URL) string { return redact.URL(u) }

// attemptLog is what one slog record says about an attempt.
type attemptLog struct {
	op, method, host, url, keyHash string
	class                          attemptClass
	status                         int
	err                            error
	prog                           *progress
	d                              retry.Decision
	duration                       time.Duration
}

// logAttempt writes the record of one attempt: Debug for a success, Info
// for a retry, Warn for a give-up.
func logAttempt(ctx context.Context, l *slog.Logger, a *attemptLog, u *url.URL) {
	level := attemptlog.Level(a.d.Action == retry.Retry, a.d.Action == retry.GiveUp)
	if !l.Enabled(ctx, level) {
		return
	}
	attrs := make([]slog.Attr, 0, 16)
	attrs = append(attrs,
		slog.String("op", a.op),
		slog.String("method", a.method),
		slog.String("host", a.host),
		slog.String("url", a.url),
		slog.Int("attempt", a.d.Attempt),
		slog.String("class", a.class.String()),
	)
	if a.status != 0 {
		attrs = append(attrs, slog.Int("status", a.status))
	}
	if a.err != nil {
		attrs = append(attrs, slog.String("error_kind", errKind(a.err)), slog.String("error", redact.Cut(redact.ErrorText(redact.Cut(a.err.Error(), redact.MaxLogError), u), redact.MaxLogError)))
	}
	if a.prog != nil {
		attrs = append(attrs, slog.String("progress", a.prog.String()))
	}
	if a.keyHash != "" {
		attrs = append(attrs, slog.String("idempotency_key_hash", a.keyHash))
	}
	attrs = attemptlog.Decision{Elapsed: a.d.Elapsed, Duration: a.duration, Action: a.d.Action.String(), Reason: a.d.Reason.Key(), Delay: a.d.Delay}.Append(attrs)
	l.LogAttrs(ctx, level, "http attempt", attrs...)
}
