package sim

import (
	"encoding/csv"
	"fmt"
	"io"
	"math/bits"
	"strconv"
	"time"
)

// Result is what one run of a scenario with one chain produced. It is a
// plain value, not changed after Run returns.
type Result struct {
	// Scenario and Chain name the run; Seed is the run's seed.
	Scenario, Chain string
	Seed            uint64
	// Interval is the width of each point of Series.
	Interval time.Duration
	// Series has one point per interval, from time 0 to the horizon.
	Series []Point
	// Summary sums the run up.
	Summary Summary
	// Events is the number of events the simulator processed: user
	// requests arriving, attempts starting and ending at every layer (an
	// attempt of the last layer is work at the bottom service), service
	// completions, backoffs ending and outages starting. Timers that
	// outlived their attempt are not counted.
	Events int64
}

// Point is one interval of a run's time series. Counts are of things that
// happened in the interval; Queue and InFlight are read at its end.
type Point struct {
	// At is the start of the interval.
	At time.Duration
	// UserRequests arrived at the top of the chain.
	UserRequests int64
	// Attempts reached the bottom service: the load on it.
	Attempts int64
	// Goodput is the user requests that finished with success.
	Goodput int64
	// Errors is the user requests that finished with a failure: every
	// layer's retries spent or refused, or the user's deadline passed.
	Errors int64
	// Queue is the attempts waiting for a worker of the bottom service.
	Queue int
	// InFlight is the attempts the bottom service holds, in service or
	// queued.
	InFlight int
	// P50 and P99 are the latency of the user requests that finished in
	// the interval, successful or not (to about 3%); zero when none did.
	P50, P99 time.Duration
}

// Summary sums up a run.
type Summary struct {
	// UserRequests is the number of user requests that arrived; Succeeded
	// and Failed finished; Open were still running at the horizon.
	UserRequests, Succeeded, Failed, Open int64
	// Attempts is the number of attempts that reached the bottom service.
	Attempts int64
	// AttemptsPerRequest is Attempts / UserRequests.
	AttemptsPerRequest float64
	// PeakAmplification is the peak load on the bottom service against
	// the normal load: the attempts reaching it in the busiest interval,
	// divided by the user requests an interval brings at Load.Rate (so a
	// spike to twice the rate alone counts as 2). PeakAt is the start of
	// that interval.
	PeakAmplification float64
	PeakAt            time.Duration
	// SuccessRate is Succeeded / UserRequests.
	SuccessRate float64
	// P50 and P99 are the latency of every finished user request.
	P50, P99 time.Duration
	// Orphaned is the attempts the bottom service finished after their
	// caller had stopped waiting (wasted work).
	Orphaned int64
	// GiveUps counts the failed user requests by the reason the top layer
	// gave up, keyed by retry.Reason.Key ("attempts", "budget",
	// "deadline", ...).
	GiveUps map[string]int64
	// FaultEnd is when the last fault ends (clamped to the horizon), or
	// zero for a scenario without faults.
	FaultEnd time.Duration
	// Fault sums up the user requests that arrived while a fault was
	// active, and the attempts that reached the bottom service then: what
	// users get during an incident, and what it costs the dependency.
	Fault FaultSummary
	// Recovered reports whether the system was healthy from some time
	// after FaultEnd to the horizon; RecoveryTime is how long after
	// FaultEnd that began. Without faults, Recovered is true and
	// RecoveryTime zero. An interval is healthy when at least
	// Scenario.RecoverAt of the user requests finishing in it succeed.
	Recovered    bool
	RecoveryTime time.Duration
}

// FaultSummary sums up the time during which faults were active (see
// Summary.Fault). Its zero value is a scenario without faults.
type FaultSummary struct {
	// UserRequests arrived while a fault was active; Succeeded of them
	// succeeded (those still open at the horizon did not).
	UserRequests, Succeeded int64
	// Attempts reached the bottom service while a fault was active.
	Attempts int64
	// SuccessRate is Succeeded / UserRequests: the users served.
	SuccessRate float64
	// AttemptsPerRequest is Attempts / UserRequests: the mean load on
	// the bottom service per user request during the faults.
	AttemptsPerRequest float64
	// PeakAttemptsPerRequest is the highest attempts / user requests of
	// an interval wholly inside the faults: the worst interval's load per
	// user request.
	PeakAttemptsPerRequest float64
}

// RecoveryString describes the recovery in words: "no fault",
// "recovered 4s after the faults ended" or "did not recover within the
// horizon".
func (s *Summary) RecoveryString() string {
	switch {
	case s.FaultEnd == 0:
		return "no fault"
	case !s.Recovered:
		return "did not recover within the horizon"
	case s.RecoveryTime == 0:
		return "recovered when the faults ended"
	}
	return fmt.Sprintf("recovered %v after the faults ended", s.RecoveryTime)
}

// csvHeader is the header row that [WriteCSV] writes.
var csvHeader = []string{"policy", "t_s", "user_requests", "attempts", "goodput", "errors",
	"queue", "in_flight", "p50_ms", "p99_ms"}

// WriteCSV writes the time series of results as CSV: a header row
// (policy, t_s, user_requests, attempts, goodput, errors, queue, in_flight,
// p50_ms, p99_ms), then one row per policy and interval. Times are in seconds, latencies in
// milliseconds. The output depends only on the results, so equal results
// give equal bytes.
func WriteCSV(w io.Writer, results ...*Result) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(csvHeader); err != nil {
		return err
	}
	row := make([]string, len(csvHeader))
	for _, r := range results {
		for _, p := range r.Series {
			row[0] = r.Chain
			row[1] = strconv.FormatFloat(p.At.Seconds(), 'f', -1, 64)
			row[2] = strconv.FormatInt(p.UserRequests, 10)
			row[3] = strconv.FormatInt(p.Attempts, 10)
			row[4] = strconv.FormatInt(p.Goodput, 10)
			row[5] = strconv.FormatInt(p.Errors, 10)
			row[6] = strconv.Itoa(p.Queue)
			row[7] = strconv.Itoa(p.InFlight)
			row[8] = ms(p.P50)
			row[9] = ms(p.P99)
			if err := cw.Write(row); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

func ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 3, 64)
}

// hist is a log-linear histogram of durations: 16 buckets per power of
// two, so a bucket's midpoint is within about 3% of any value in it.
type hist struct {
	n int64
	c [histBuckets]int32
}

const (
	histSub     = 16
	histBuckets = (63 - 3) * histSub // exponents 4..62, after 16 exact values
)

func histIndex(v int64) int {
	if v < histSub {
		if v < 0 {
			return 0
		}
		return int(v)
	}
	e := bits.Len64(uint64(v)) - 1 // 4..62
	sub := int(v>>(e-4)) & (histSub - 1)
	return (e-3)*histSub + sub
}

// histValue returns the midpoint of bucket i.
func histValue(i int) time.Duration {
	if i < histSub {
		return time.Duration(i)
	}
	e := i/histSub + 3
	sub := int64(i % histSub)
	lo := (histSub + sub) << (e - 4)
	return time.Duration(lo + (int64(1)<<(e-4))/2)
}

func (h *hist) add(v int64) {
	i := histIndex(v)
	if h.c[i] < 1<<31-1 {
		h.c[i]++
		h.n++
	}
}

// quantile returns the q-quantile (0 < q <= 1), or 0 for an empty
// histogram.
func (h *hist) quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := int64(q*float64(h.n) + 0.5)
	rank = max(rank, 1)
	var seen int64
	for i, c := range h.c {
		seen += int64(c)
		if seen >= rank {
			return histValue(i)
		}
	}
	return histValue(len(h.c) - 1)
}

func (h *hist) reset() {
	if h.n != 0 {
		*h = hist{}
	}
}
