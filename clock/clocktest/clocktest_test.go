package clocktest_test

import (
	"testing"
	"time"

	"github.com/heed-go/heed/clock/clocktest"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func fired(tm interface{ C() <-chan time.Time }) (time.Time, bool) {
	select {
	case at := <-tm.C():
		return at, true
	default:
		return time.Time{}, false
	}
}

func TestTimerFiresWhenDue(t *testing.T) {
	c := clocktest.New(t0)
	tm := c.NewTimer(time.Second)
	c.Advance(999 * time.Millisecond)
	if _, ok := fired(tm); ok {
		t.Fatal("fired early")
	}
	c.Advance(time.Millisecond)
	at, ok := fired(tm)
	if !ok || !at.Equal(t0.Add(time.Second)) {
		t.Fatalf("fired = %v at %v", ok, at)
	}
	if c.Timers() != 0 {
		t.Errorf("%d timers left", c.Timers())
	}
}

func TestStopAndReset(t *testing.T) {
	c := clocktest.New(t0)
	tm := c.NewTimer(time.Second)
	if !tm.Stop() {
		t.Error("Stop of an active timer returned false")
	}
	c.Advance(time.Hour)
	if _, ok := fired(tm); ok {
		t.Fatal("stopped timer fired")
	}
	if tm.Reset(time.Minute) {
		t.Error("Reset of a stopped timer returned true")
	}
	c.Advance(time.Minute)
	if at, ok := fired(tm); !ok || !at.Equal(t0.Add(time.Hour+time.Minute)) {
		t.Fatalf("reset timer: %v %v", ok, at)
	}
	if tm.Stop() {
		t.Error("Stop of a fired timer returned true")
	}
}

func TestZeroTimerFiresAtOnce(t *testing.T) {
	c := clocktest.New(t0)
	if _, ok := fired(c.NewTimer(0)); !ok {
		t.Fatal("zero timer did not fire")
	}
}

func TestSetNeverGoesBack(t *testing.T) {
	c := clocktest.New(t0)
	c.Set(t0.Add(-time.Hour))
	if !c.Now().Equal(t0) {
		t.Fatalf("Now = %v", c.Now())
	}
	c.Set(t0.Add(time.Hour))
	if !c.Now().Equal(t0.Add(time.Hour)) {
		t.Fatalf("Now = %v", c.Now())
	}
}

func TestBlockUntil(t *testing.T) {
	c := clocktest.New(t0)
	done := make(chan struct{})
	go func() {
		<-c.NewTimer(time.Minute).C()
		close(done)
	}()
	c.BlockUntil(1)
	c.Advance(time.Minute)
	<-done
}
