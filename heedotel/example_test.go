package heedotel_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/heed-go/heed/backoff"
	"github.com/heed-go/heed/heedotel"
	"github.com/heed-go/heed/retry"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// Wire heed's metrics into an application's meter provider: here an SDK
// provider with an in-memory reader, which stands for the application's
// exporter (OTLP, Prometheus, ...). A call that fails twice and then
// succeeds makes 3 attempts and 2 retries, and gives up on nothing.
func Example() {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())

	m, err := heedotel.New(mp)
	if err != nil {
		panic(err)
	}
	policy := retry.Policy{
		Backoff: backoff.Schedule{Base: time.Millisecond}, // short for the example
		Observe: m.RetryObserver("charge"),                // once per operation
	}
	calls := 0
	err = retry.Do(context.Background(), policy, func(ctx context.Context) error {
		if calls++; calls < 3 {
			return retry.Transient(errors.New("connection reset"))
		}
		return nil
	})
	fmt.Println("err:", err)

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		panic(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, mt := range sm.Metrics {
			if sum, ok := mt.Data.(metricdata.Sum[int64]); ok {
				printSum(mt.Name, sum)
			}
		}
	}
	// Output:
	// err: <nil>
	// heed.retry.attempts{heed.operation=charge,heed.retry.outcome=success} 1
	// heed.retry.attempts{heed.operation=charge,heed.retry.outcome=transient} 2
	// heed.retry.retries{heed.operation=charge,heed.retry.reason=transient} 2
}

// printSum prints a counter's points, one line each, in a stable order.
func printSum(name string, sum metricdata.Sum[int64]) {
	var lines []string
	for _, p := range sum.DataPoints {
		var attrs []string
		for _, kv := range p.Attributes.ToSlice() {
			attrs = append(attrs, string(kv.Key)+"="+kv.Value.Emit())
		}
		lines = append(lines, fmt.Sprintf("%s{%s} %d", name, strings.Join(attrs, ","), p.Value))
	}
	slices.Sort(lines)
	for _, l := range lines {
		fmt.Println(l)
	}
}
