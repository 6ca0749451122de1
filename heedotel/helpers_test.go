package heedotel_test

import (
	"context"
	"testing"

	"github.com/heed-go/heed/heedotel"
	"github.com/heed-go/heed/internal/leakcheck"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

func TestMain(m *testing.M) {
	leakcheck.Main(m)
}

// newMetrics returns a Metrics over a real SDK meter provider whose
// in-memory reader the test collects from.
func newMetrics(t testing.TB) (*heedotel.Metrics, *sdkmetric.ManualReader) {
	t.Helper()
	r := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	t.Cleanup(func() { mp.Shutdown(context.Background()) })
	m, err := heedotel.New(mp)
	if err != nil {
		t.Fatal(err)
	}
	return m, r
}

// collected is one collection of a reader.
type collected struct {
	t  testing.TB
	rm metricdata.ResourceMetrics
}

func collect(t testing.TB, r *sdkmetric.ManualReader) *collected {
	t.Helper()
	c := &collected{t: t}
	if err := r.Collect(context.Background(), &c.rm); err != nil {
		t.Fatal(err)
	}
	return c
}

func (c *collected) metric(name string) (metricdata.Metrics, bool) {
	for _, sm := range c.rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == name {
				return m, true
			}
		}
	}
	return metricdata.Metrics{}, false
}

// matches reports whether set has every one of kv.
func matches(set attribute.Set, kv []attribute.KeyValue) bool {
	for _, want := range kv {
		got, ok := set.Value(want.Key)
		if !ok || got != want.Value {
			return false
		}
	}
	return true
}

// sum adds the values of counter name's points that have every one of kv
// (0 when the instrument has no points).
func (c *collected) sum(name string, kv ...attribute.KeyValue) int64 {
	c.t.Helper()
	m, ok := c.metric(name)
	if !ok {
		return 0
	}
	s, ok := m.Data.(metricdata.Sum[int64])
	if !ok {
		c.t.Fatalf("%s is a %T, not an int64 sum", name, m.Data)
	}
	if !s.IsMonotonic {
		c.t.Errorf("%s is not monotonic", name)
	}
	var n int64
	for _, p := range s.DataPoints {
		if matches(p.Attributes, kv) {
			n += p.Value
		}
	}
	return n
}

// hist returns the count and sum of histogram name's points that have every
// one of kv.
func (c *collected) hist(name string, kv ...attribute.KeyValue) (count uint64, sum float64) {
	c.t.Helper()
	m, ok := c.metric(name)
	if !ok {
		return 0, 0
	}
	h, ok := m.Data.(metricdata.Histogram[float64])
	if !ok {
		c.t.Fatalf("%s is a %T, not a float64 histogram", name, m.Data)
	}
	for _, p := range h.DataPoints {
		if matches(p.Attributes, kv) {
			count += p.Count
			sum += p.Sum
		}
	}
	return count, sum
}

// gauge returns the value of int64 gauge name's one point that has every
// one of kv, and whether there is one.
func (c *collected) gauge(name string, kv ...attribute.KeyValue) (int64, bool) {
	c.t.Helper()
	m, ok := c.metric(name)
	if !ok {
		return 0, false
	}
	g, ok := m.Data.(metricdata.Gauge[int64])
	if !ok {
		c.t.Fatalf("%s is a %T, not an int64 gauge", name, m.Data)
	}
	var (
		v     int64
		found int
	)
	for _, p := range g.DataPoints {
		if matches(p.Attributes, kv) {
			v = p.Value
			found++
		}
	}
	if found > 1 {
		c.t.Fatalf("%s: %d points match %v", name, found, kv)
	}
	return v, found == 1
}

// attrValues returns every value of attribute key in instrument name's
// points.
func (c *collected) attrValues(name string, key attribute.Key) map[string]bool {
	c.t.Helper()
	vals := map[string]bool{}
	m, ok := c.metric(name)
	if !ok {
		return vals
	}
	each := func(set attribute.Set) {
		if v, ok := set.Value(key); ok {
			vals[v.Emit()] = true
		}
	}
	switch d := m.Data.(type) {
	case metricdata.Sum[int64]:
		for _, p := range d.DataPoints {
			each(p.Attributes)
		}
	case metricdata.Histogram[float64]:
		for _, p := range d.DataPoints {
			each(p.Attributes)
		}
	case metricdata.Gauge[int64]:
		for _, p := range d.DataPoints {
			each(p.Attributes)
		}
	}
	return vals
}

// allAttrs returns every attribute of every point of every instrument.
func (c *collected) allAttrs() []attribute.KeyValue {
	var all []attribute.KeyValue
	for _, sm := range c.rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					all = append(all, p.Attributes.ToSlice()...)
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					all = append(all, p.Attributes.ToSlice()...)
				}
			case metricdata.Gauge[int64]:
				for _, p := range d.DataPoints {
					all = append(all, p.Attributes.ToSlice()...)
				}
			}
		}
	}
	return all
}

func (c *collected) wantSum(name string, want int64, kv ...attribute.KeyValue) {
	c.t.Helper()
	if got := c.sum(name, kv...); got != want {
		c.t.Errorf("%s%v = %d, want %d", name, kv, got, want)
	}
}

func (c *collected) wantCount(name string, want uint64, kv ...attribute.KeyValue) {
	c.t.Helper()
	if got, _ := c.hist(name, kv...); got != want {
		c.t.Errorf("%s%v: count %d, want %d", name, kv, got, want)
	}
}
