//go:build unix

package signals

import (
	"context"
	"syscall"
	"testing"
	"time"
)

// A SIGTERM that arrives before NotifyContext is called (while the rest of
// the program initialises) is not lost and does not kill the process: the
// context NotifyContext returns is cancelled at once. A second signal
// closes Again.
func TestSignalBeforeNotifyContext(t *testing.T) {
	catch() // as init did (again for -count > 1, after stop)
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	ctx, stop := NotifyContext(context.Background())
	defer stop()
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the early SIGTERM did not cancel the context")
	}
	again := Again(ctx)
	if again == nil {
		t.Fatal("Again is nil for a NotifyContext context")
	}
	select {
	case <-again:
		t.Fatal("Again closed after one signal")
	default:
	}
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-again:
	case <-time.After(10 * time.Second):
		t.Fatal("the second signal did not close Again")
	}
	if Again(context.Background()) != nil {
		t.Error("Again of another context is not nil")
	}
}
