package admit

import (
	"testing"
	"time"
)

// rec is a Waker that records its answers.
type rec struct{ got []uint8 }

func (r *rec) Wake(reason uint8) { r.got = append(r.got, reason) }

// The Core's decisions on a virtual clock, as sim runs it: below the limit
// a first attempt is admitted without serialisation; at the limit it
// waits, a retry is refused at once (and below the limit too while the
// Core is refusing), a deadline that cannot cover a place freeing plus the
// no-queue latency is refused at once, a full queue refuses; a release
// hands the place to the waiter.
func TestCoreDecisions(t *testing.T) {
	ms := time.Millisecond
	c := New(Config{Limit: 2, MaxQueue: 1})
	now := t0
	n1, timed, ok := c.TryFast()
	if !ok || n1 != 1 || !timed { // no baseline yet: timed
		t.Fatalf("first: %d, %v, %v; want admitted at once, timed", n1, timed, ok)
	}
	if out := c.Arrive(now, false, time.Time{}); !out.Admitted || out.Inflight != 2 {
		t.Fatalf("second: %+v, want admitted", out)
	}
	c.Release(now.Add(100*ms), 100*ms, 1, Sampled) // baseline 100ms
	if out := c.Arrive(now.Add(100*ms), false, time.Time{}); !out.Admitted {
		t.Fatalf("after a release: %+v, want admitted", out)
	}
	now = now.Add(100 * ms)
	if _, _, ok := c.TryFast(); ok {
		t.Fatal("TryFast at the limit admitted")
	}
	tests := []struct {
		name     string
		retry    bool
		deadline time.Duration // from now; 0: none
		want     uint8
		queued   bool
	}{
		{"retry at the limit", true, 0, Retry, false},
		{"deadline below the no-queue latency", false, 50 * ms, Deadline, false},
		{"first attempt waits", false, time.Second, None, true},
		{"queue full", false, time.Second, QueueFull, false},
	}
	var w Waiter
	r := &rec{}
	for _, tt := range tests {
		var dl time.Time
		if tt.deadline > 0 {
			dl = now.Add(tt.deadline)
		}
		out := c.Arrive(now, tt.retry, dl)
		if out.Admitted || out.Reason != tt.want || (tt.want != None) != (out.RetryAfter > 0) {
			t.Errorf("%s: %+v, want reason %d", tt.name, out, tt.want)
		}
		if tt.queued {
			if out.Wait <= 0 || out.Expire != QueueTime {
				t.Errorf("%s: wait %v, expire %d; want a positive wait ending in QueueTime", tt.name, out.Wait, out.Expire)
			}
			c.Queue(&w, now, dl, r)
		}
	}
	// While the Core is refusing, a retry is refused even below the limit.
	c.Release(now.Add(ms), 0, 0, Unsampled) // the place goes to the waiter
	if len(r.got) != 1 || r.got[0] != None {
		t.Fatalf("waiter told %v, want admitted", r.got)
	}
	if _, left := c.Leave(&w, now.Add(ms), QueueTime); left {
		t.Error("Leave after the waiter was answered: left, want false")
	}
	c.Release(now.Add(2*ms), 0, 0, Unsampled)
	if lim, in, q, _ := c.Stats(); in != 1 || q != 0 || lim != 2 {
		t.Fatalf("stats: limit %d, %d in flight, %d queued; want 2, 1, 0", lim, in, q)
	}
	if out := c.Arrive(now.Add(3*ms), true, time.Time{}); out.Reason != Retry {
		t.Errorf("a retry below the limit while refusing: %+v, want refused", out)
	}
	if out := c.Arrive(now.Add(2*time.Second), true, time.Time{}); !out.Admitted {
		t.Errorf("a retry below the limit a second after the last refusal: %+v, want admitted", out)
	}
}

// A waiter whose wait ends leaves the queue, and the Core no longer hands
// it a place; the state word's waiters bit follows the queue, so that
// TryFast works again once it is empty.
func TestCoreLeave(t *testing.T) {
	ms := time.Millisecond
	c := New(Config{Limit: 1})
	if _, _, ok := c.TryFast(); !ok {
		t.Fatal("first not admitted")
	}
	out := c.Arrive(t0, false, time.Time{})
	if out.Admitted || out.Reason != None {
		t.Fatalf("at the limit: %+v, want to wait", out)
	}
	var w Waiter
	r := &rec{}
	c.Queue(&w, t0, time.Time{}, r)
	if c.TryFastRelease() {
		t.Fatal("TryFastRelease with a waiter: released without handing the place on")
	}
	if ra, left := c.Leave(&w, t0.Add(out.Wait), out.Expire); !left || ra <= 0 {
		t.Fatalf("Leave: %v, %v; want left with a retry-after", ra, left)
	}
	c.Release(t0.Add(out.Wait+ms), 0, 0, Unsampled)
	if len(r.got) != 0 {
		t.Errorf("a waiter that left was told %v", r.got)
	}
	if _, _, ok := c.TryFast(); !ok {
		t.Error("TryFast with the queue empty again: not admitted")
	}
	if !c.TryFastRelease() {
		t.Error("TryFastRelease with nobody waiting: not released")
	}
}

func TestRetryAfterSeconds(t *testing.T) {
	for _, tt := range []struct {
		d    time.Duration
		want int64
	}{{0, 1}, {time.Millisecond, 1}, {time.Second, 1}, {time.Second + 1, 2}, {2500 * time.Millisecond, 3}} {
		if got := RetryAfterSeconds(tt.d); got != tt.want {
			t.Errorf("RetryAfterSeconds(%v) = %d, want %d", tt.d, got, tt.want)
		}
	}
}
