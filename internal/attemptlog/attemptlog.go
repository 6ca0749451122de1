// Package attemptlog holds the one mapping from a retry decision to a log
// record that retry's LogObserver, retryhttp and heedgrpc share: the level
// of the record and the attributes that close it. It does not import retry
// (retry imports it), so callers pass the decision's parts.
package attemptlog

import (
	"log/slog"
	"time"
)

// Level returns the level of an attempt's record: Debug for a success,
// Info for a retry, Warn for a give-up.
func Level(retrying, givingUp bool) slog.Level {
	switch {
	case retrying:
		return slog.LevelInfo
	case givingUp:
		return slog.LevelWarn
	}
	return slog.LevelDebug
}

// Decision is what every attempt record says about the decision taken
// after the attempt, in this order.
type Decision struct {
	Elapsed, Duration time.Duration
	Action, Reason    string
	Delay             time.Duration
}

// Append appends d's attributes to attrs: elapsed, duration, decision,
// reason and delay.
func (d Decision) Append(attrs []slog.Attr) []slog.Attr {
	return append(attrs,
		slog.Duration("elapsed", d.Elapsed),
		slog.Duration("duration", d.Duration),
		slog.String("decision", d.Action),
		slog.String("reason", d.Reason),
		slog.Duration("delay", d.Delay),
	)
}
