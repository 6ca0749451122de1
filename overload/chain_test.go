package overload_test

import (
	"testing"
	"time"

	"github.com/heed-go/heed/internal/chaintest"
	"github.com/heed-go/heed/overload"
)

// TestChainHalfCapacity is the overload promise, measured: three real
// services on loopback (a user's client calls A, A calls B, B calls C,
// every client a zero retryhttp.Transport, every server a zero
// deadline.Middleware), C a pool of 24 workers of 200 ms (120 calls/s)
// whose capacity halves for 20 s under 100 users/s with a 5 s deadline.
// Behind a zero Limiter, C serves at least 95% of its capacity during the
// fault, the users served wait at most 500 ms at p99, at most 5% of its
// finished work is for callers who had gone, the load on C stays within
// 1.25× the users, and every user is served again within 1 s of the
// fault's end. The same run without the limiter, and with the queue
// served in arrival order (LIFOOff), are logged beside it
// (go test -run TestChainHalfCapacity -v ./overload).
func TestChainHalfCapacity(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three 30 s loads")
	}
	if raceOn {
		t.Skip("100 users/s through three services is more than the race detector lets a busy machine carry")
	}
	t.Log("| C | served/s (capacity) | p50 / p99 | C's work for callers gone | load at C | recovered after |")
	rows := []struct {
		name string
		cfg  *overload.Config
	}{
		{"without overload", nil},
		{"overload.Config{}", &overload.Config{}},
		{"overload.Config{LIFOOff: true}", &overload.Config{LIFOOff: true}},
	}
	for _, row := range rows {
		protect := row.cfg != nil
		cfg := chaintest.Config{
			Fault: chaintest.HalfCapacity, Rate: 100, Deadline: 5 * time.Second,
			Healthy: 5 * time.Second, FaultFor: 20 * time.Second, After: 5 * time.Second,
			Overload: row.cfg,
		}
		r := chaintest.Run(t, cfg)
		p, f := r.Pool, r.Fault
		wasted := 0.0
		if p.Finished > 0 {
			wasted = float64(p.Wasted) / float64(p.Finished)
		}
		name := row.name
		t.Logf("| %s | %.1f (%.0f) | %v / %v | %.1f%% | %.2f× | %v |", name, p.ServedRate, p.Capacity,
			p.P50.Round(time.Millisecond), p.P99.Round(time.Millisecond), 100*wasted, f.Mean, p.RecoveredAfter)
		if protect && !r.Usable() {
			t.Skipf("the machine could not carry the load through three services (%.0f%% served before the fault): no measurement", 100*r.HealthyServed)
		}
		if !protect || row.cfg.LIFOOff {
			continue // measured only
		}
		if p.ServedRate < 0.95*p.Capacity {
			t.Errorf("served %.1f users/s during the fault, want at least 95%% of C's %.0f/s", p.ServedRate, p.Capacity)
		}
		if p.P99 > 500*time.Millisecond {
			t.Errorf("p99 of the users served %v, want at most 500ms", p.P99)
		}
		if wasted > 0.05 {
			t.Errorf("%.1f%% of C's finished work was for callers who had gone, want at most 5%%", 100*wasted)
		}
		if f.Mean > 1.25 {
			t.Errorf("load at C %.2f× the users, want at most 1.25×", f.Mean)
		}
		if p.RecoveredAfter < 0 || p.RecoveredAfter > time.Second {
			t.Errorf("recovered %v after the fault, want within 1s", p.RecoveredAfter)
		}
	}
}
