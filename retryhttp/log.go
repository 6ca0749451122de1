package retryhttp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/heed-go/heed/retry"
)

// secretWords are the parts of query parameter names whose values are
// redacted in logs.
var secretWords = []string{"token", "key", "secret", "sig", "password", "passwd", "pwd", "auth", "credential", "session", "code"}

// RedactURL returns u as a string fit for logs: without user info, and with
// the values of query parameters whose names look like tokens, keys,
// secrets, signatures, passwords or credentials replaced by "REDACTED".
func RedactURL(u *url.URL) string {
	if u == nil {
		return ""
	}
	c := *u
	c.User = nil
	if c.RawQuery != "" {
		q, err := url.ParseQuery(c.RawQuery)
		if err != nil {
			c.RawQuery = "REDACTED"
		} else {
			changed := false
			for name, vs := range q {
				if secretName(name) {
					for i := range vs {
						vs[i] = "REDACTED"
					}
					changed = true
				}
			}
			if changed {
				c.RawQuery = q.Encode()
			}
		}
	}
	return c.String()
}

func secretName(name string) bool {
	n := strings.ToLower(name)
	for _, w := range secretWords {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// KeyHash returns the short hash under which an idempotency key appears in
// logs: the first 8 hex digits of its SHA-256.
func KeyHash(key string) string {
	if key == "" {
		return ""
	}
	s := sha256.Sum256([]byte(key))
	return hex.EncodeToString(s[:4])
}

// redactErr returns err's message with the raw URL replaced by its redacted
// form, in case an error quotes it.
func redactErr(err error, raw, safe string) string {
	msg := err.Error()
	if raw != safe && raw != "" {
		msg = strings.ReplaceAll(msg, raw, safe)
	}
	return msg
}

// attemptLog is what one slog record says about an attempt.
type attemptLog struct {
	op, method, host, url, keyHash string
	class                          Class
	status                         int
	err                            error
	prog                           *progress
	d                              retry.Decision
	duration                       time.Duration
}

// logAttempt writes the record of one attempt: Debug for a success, Info
// for a retry, Warn for a give-up.
func logAttempt(ctx context.Context, l *slog.Logger, a *attemptLog, rawURL string) {
	level := slog.LevelDebug
	switch a.d.Action {
	case retry.Retry:
		level = slog.LevelInfo
	case retry.GiveUp:
		level = slog.LevelWarn
	}
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
		attrs = append(attrs, slog.String("error_kind", errKind(a.err)), slog.String("error", redactErr(a.err, rawURL, a.url)))
	}
	if a.prog != nil {
		attrs = append(attrs, slog.String("progress", a.prog.String()))
	}
	if a.keyHash != "" {
		attrs = append(attrs, slog.String("idempotency_key_hash", a.keyHash))
	}
	attrs = append(attrs,
		slog.Duration("elapsed", a.d.Elapsed),
		slog.Duration("duration", a.duration),
		slog.String("decision", a.d.Action.String()),
		slog.String("reason", a.d.Reason.Key()),
		slog.Duration("delay", a.d.Delay),
	)
	l.LogAttrs(ctx, level, "http attempt", attrs...)
}
