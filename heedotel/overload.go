package heedotel

import (
	"context"

	"github.com/heed-go/heed/overload"
	"go.opentelemetry.io/otel/metric"
)

// numOverloadReasons counts overload.Reason values, "unknown" included.
const numOverloadReasons = int(overload.ReasonGone) + 2

// OverloadObserver returns a function for overload.Config.Observe that
// counts heed.overload.refused by reason and records
// heed.overload.queue.duration for the requests admitted, under name, a
// fixed name from the program ("api"). Recording allocates nothing.
func (m *Metrics) OverloadObserver(name string) func(overload.Event) {
	var sets [numOverloadReasons]opts
	for i := range sets {
		sets[i] = newOpts(keyOverload.String(name), keyOverloadReason.String(overload.Reason(i).Key()))
	}
	admitted := newOpts(keyOverload.String(name))
	return func(e overload.Event) {
		if e.Reason == overload.ReasonNone {
			m.overloadWait.Record(context.Background(), e.Waited.Seconds(), admitted.rec...)
			return
		}
		m.overloadRefused.Add(context.Background(), 1, sets[min(int(e.Reason), numOverloadReasons-1)].add...)
	}
}

// ObserveOverload reports l's limit, requests in flight and requests
// queued as heed.overload.limit, heed.overload.in_flight and
// heed.overload.queued under name, read with l.Stats() at collection time.
// It returns the callback's registration: Unregister it when l is no
// longer used.
func (m *Metrics) ObserveOverload(name string, l *overload.Limiter) (metric.Registration, error) {
	o := newOpts(keyOverload.String(name))
	return m.meter.RegisterCallback(func(_ context.Context, obs metric.Observer) error {
		st := l.Stats()
		obs.ObserveInt64(m.overloadLimit, int64(st.Limit), o.obs...)
		obs.ObserveInt64(m.overloadInFlight, int64(st.InFlight), o.obs...)
		obs.ObserveInt64(m.overloadQueued, int64(st.Queued), o.obs...)
		return nil
	}, m.overloadLimit, m.overloadInFlight, m.overloadQueued)
}
