package sim

import (
	"testing"
	"time"
)

// tenMinutes is the performance target of the simulator: 10 minutes of
// 1,000 user requests/s through 3 layers, with a 20 s outage, under the
// "layers" scenario's policy of one retry owner with a retry budget.
func tenMinutes(policy int) Scenario {
	s, _ := Builtin("layers")
	s.Horizon = 10 * time.Minute
	s.Load.Rate = 1000
	s.Service.Concurrency = 100
	s.Service.QueueLimit = 5000
	s.Faults[0].Start, s.Faults[0].End = 5*time.Minute, 5*time.Minute+20*time.Second
	s.Chains = s.Chains[policy : policy+1]
	return s
}

func benchmarkRun(b *testing.B, s Scenario) {
	b.ReportAllocs()
	var events int64
	start := time.Now()
	for b.Loop() {
		rs, err := Run(s, Options{})
		if err != nil {
			b.Fatal(err)
		}
		events += rs[0].Events
	}
	b.ReportMetric(float64(events)/time.Since(start).Seconds(), "events/s")
	b.ReportMetric(float64(events)/float64(b.N), "events/op")
}

// BenchmarkTenMinutes runs 10 minutes at 1,000 user requests/s through 3
// layers; one op is one whole run (target: under 2 s).
func BenchmarkTenMinutes(b *testing.B) {
	b.Run("owner+budget", func(b *testing.B) { benchmarkRun(b, tenMinutes(2)) })
	b.Run("every-layer", func(b *testing.B) { benchmarkRun(b, tenMinutes(0)) })
}

// BenchmarkSpike runs the "spike" scenario's naive policy: a collapse with
// thousands of requests in flight.
func BenchmarkSpike(b *testing.B) {
	s, _ := Builtin("spike-naive")
	benchmarkRun(b, s)
}
