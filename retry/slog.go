package retry

import (
	"context"
	"log/slog"

	"github.com/heed-go/heed/internal/attemptlog"
	"github.com/heed-go/heed/internal/redact"
)

// LogObserver returns a function for Policy.Observe that writes one record
// per attempt to l, with the operation name op and the attributes op,
// attempt, outcome, elapsed, duration, decision, reason and delay, plus
// error when the attempt failed. A success is logged at Debug, a retry at
// Info and a give-up at Warn.
//
// The error's message is logged cut at 8 KiB and redacted, as every log of
// heed is: the values of secret keys (token=, "password": ...), credentials
// after Bearer, and the secrets of URLs (user information, fragments,
// secret query values) read "REDACTED". Redacting costs only when a record
// is written.
func LogObserver(l *slog.Logger, op string) func(context.Context, Event) {
	return func(ctx context.Context, e Event) {
		level := attemptlog.Level(e.Action == Retry, e.Action == GiveUp)
		if !l.Enabled(ctx, level) {
			return
		}
		var buf [9]slog.Attr
		attrs := append(buf[:0],
			slog.String("op", op),
			slog.Int("attempt", e.Attempt),
			slog.String("outcome", e.Outcome.String()),
		)
		attrs = attemptlog.Decision{Elapsed: e.Elapsed, Duration: e.Duration, Action: e.Action.String(), Reason: e.Reason.String(), Delay: e.Delay}.Append(attrs)
		if e.Err != nil {
			attrs = append(attrs, slog.String("error", redact.Error(e.Err)))
		}
		l.LogAttrs(ctx, level, "retry attempt", attrs...)
	}
}
