package heedgrpc

import (
	"context"
	"log/slog"

	"google.golang.org/grpc/codes"

	"github.com/heed-go/heed/internal/attemptlog"
	"github.com/heed-go/heed/internal/redact"
	"github.com/heed-go/heed/retry"
)

// logAttempt writes the record of one attempt: Debug for a success, Info
// for a retry, Warn for a give-up. The rules are retryhttp's: no metadata
// value is logged, the idempotency key only as its hash, the error text
// cut and with anything that looks like a credential or a URL's secret
// removed (redact.Text), and a target host label that looks like a
// credential replaced.
func logAttempt(ctx context.Context, l *slog.Logger, cs *call, code codes.Code, e retry.Event) {
	level := attemptlog.Level(e.Action == retry.Retry, e.Action == retry.GiveUp)
	if !l.Enabled(ctx, level) {
		return
	}
	attrs := make([]slog.Attr, 0, 14)
	attrs = append(attrs,
		slog.String("target", redact.Text(redact.Host(cs.target))),
		slog.String("method", cs.method),
		slog.Int("attempt", e.Attempt),
		slog.String("code", code.String()),
	)
	if e.Err != nil {
		attrs = append(attrs, slog.String("error", redact.Error(e.Err)))
	}
	if cs.key != "" {
		attrs = append(attrs, slog.String("idempotency_key_hash", redact.KeyHash(cs.key)))
	}
	attrs = attemptlog.Decision{Elapsed: e.Elapsed, Duration: e.Duration, Action: e.Action.String(), Reason: e.Reason.Key(), Delay: e.Delay}.Append(attrs)
	l.LogAttrs(ctx, level, "grpc attempt", attrs...)
}
