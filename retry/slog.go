package retry

import (
	"context"
	"log/slog"
)

// LogObserver returns a function for Policy.Observe that writes one record
// per attempt to l, with the operation name op and the attributes op,
// attempt, outcome, elapsed, duration, decision, reason and delay, plus
// error when the attempt failed. A success is logged at Debug, a retry at
// Info and a give-up at Warn.
//
// The error's message is logged as is: errors that may hold secrets (URLs
// with tokens, for example) should be redacted before they are returned.
func LogObserver(l *slog.Logger, op string) func(context.Context, Event) {
	return func(ctx context.Context, e Event) {
		level := slog.LevelDebug
		switch e.Action {
		case Retry:
			level = slog.LevelInfo
		case GiveUp:
			level = slog.LevelWarn
		}
		if !l.Enabled(ctx, level) {
			return
		}
		attrs := [...]slog.Attr{
			slog.String("op", op),
			slog.Int("attempt", e.Attempt),
			slog.String("outcome", e.Outcome.String()),
			slog.Duration("elapsed", e.Elapsed),
			slog.Duration("duration", e.Duration),
			slog.String("decision", e.Action.String()),
			slog.String("reason", e.Reason.String()),
			slog.Duration("delay", e.Delay),
			{},
		}
		n := len(attrs) - 1
		if e.Err != nil {
			attrs[n] = slog.String("error", e.Err.Error())
			n++
		}
		l.LogAttrs(ctx, level, "retry attempt", attrs[:n]...)
	}
}
