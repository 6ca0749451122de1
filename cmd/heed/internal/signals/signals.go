// Package signals catches SIGINT and SIGTERM from the moment the heed
// binary starts, before the slow initialisation of its larger dependencies
// (database drivers, telemetry): a signal sent in the first few hundred
// milliseconds must stop heed gracefully, as a later one does, and not kill
// it with the default action.
//
// It works by package initialisation order: Go initialises packages in
// import-path order as soon as their imports are, and this package imports
// only os/signal and its dependencies, so its init runs among the first.
// cmd/heed imports it; nothing else should. A package whose path sorts
// before it and whose imports are ready first still runs before it:
// codeberg.org/go-latex's symbol tables (gonum's plot, for heed sim
// --chart), 0.35 ms at best on a 2-core machine. Measured with
// GODEBUG=inittrace=1 (heed version, 30-40 runs at load average 10-16):
// the handler is in place 5 ms after the process starts at best, 23-35 ms
// at the median, and as late without the chart's dependencies; what
// delays it is the start of the runtime and, under load, the scheduler,
// not an init.
//
// Most callers want [NotifyContext], then [Again] to learn of a second
// signal.
package signals

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// caught receives SIGINT and SIGTERM from init on. Two slots: the first
// signal and a second, hurried one.
var caught = make(chan os.Signal, 2)

func init() { catch() }

// catch sends SIGINT and SIGTERM to caught.
func catch() { signal.Notify(caught, os.Interrupt, syscall.SIGTERM) }

type againKey struct{}

// NotifyContext returns a context that is cancelled on the first SIGINT or
// SIGTERM the process received since it started (including one received
// before NotifyContext was called), and whose [Again] channel is closed on
// the second. stop releases its resources and restores the default action
// of the signals. It is meant to be called once, by main.
func NotifyContext(parent context.Context) (ctx context.Context, stop context.CancelFunc) {
	catch() // again, after an earlier stop
	again := make(chan struct{})
	ctx, cancel := context.WithCancel(context.WithValue(parent, againKey{}, (<-chan struct{})(again)))
	quit := make(chan struct{}) // closed by stop
	done := make(chan struct{})
	go func() {
		defer close(done)
		select {
		case <-caught:
			cancel()
		case <-ctx.Done():
			return
		case <-quit:
			return
		}
		select {
		case <-caught:
			close(again)
		case <-quit:
		}
	}()
	return ctx, func() {
		cancel()
		close(quit)
		<-done
		signal.Stop(caught)
	}
}

// Again returns a channel closed when the process receives a second
// SIGINT or SIGTERM, for a context made by [NotifyContext] (or derived
// from one), or nil (a channel that never closes) for any other context.
func Again(ctx context.Context) <-chan struct{} {
	ch, _ := ctx.Value(againKey{}).(<-chan struct{})
	return ch
}
