package heedotel_test

import (
	"context"
	"testing"

	"github.com/heed-go/heed/heedotel"
	"github.com/heed-go/heed/overload"
)

// A limiter's refusals by reason, its admitted requests' queue time, and
// its limit, in flight and queued.
func TestOverload(t *testing.T) {
	m, r := newMetrics(t)
	lim, err := overload.New(overload.Config{Limit: 1, MaxQueue: -1, Observe: m.OverloadObserver("api")})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := m.ObserveOverload("api", lim)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Unregister()
	p, err := lim.Acquire(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	lim.Acquire(context.Background(), 2) // a retry at the limit
	lim.Acquire(context.Background(), 1) // the queue is off
	c := collect(t, r)
	name := heedotel.KeyOverload.String("api")
	c.wantSum("heed.overload.refused", 1, name, heedotel.KeyOverloadReason.String("retry"))
	c.wantSum("heed.overload.refused", 1, name, heedotel.KeyOverloadReason.String("queue_full"))
	c.wantCount("heed.overload.queue.duration", 1, name)
	for g, want := range map[string]int64{"heed.overload.limit": 1, "heed.overload.in_flight": 1, "heed.overload.queued": 0} {
		if got, ok := c.gauge(g, name); !ok || got != want {
			t.Errorf("%s = %d (%v), want %d", g, got, ok, want)
		}
	}
	p.Release()
}
