package queue

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/heed-go/heed/retry"
)

// BenchmarkDecide measures the queue's decision after one attempt (the
// call protocol resumed from the job's history, then the transition and
// its history entry): a success, and a transient failure that is retried.
func BenchmarkDecide(b *testing.B) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := &retry.Policy{Budget: nil}
	job := &Job{ID: 1, Attempt: 2, LeaseToken: "tok", StartedAt: t0, CreatedAt: t0,
		History: []Attempt{{Attempt: 1, StartedAt: t0, FinishedAt: t0, Outcome: "transient", Action: "retry", Reason: "transient", Delay: time.Second}}}
	r := rand.NewPCG(1, 2)
	for _, c := range []struct {
		name string
		err  error
	}{{"success", nil}, {"transient", retry.Transient(errors.New("connection reset"))}} {
		b.Run(c.name, func(b *testing.B) {
			res := result{err: c.err, started: t0.Add(time.Second), worker: "w1"}
			now := t0.Add(2 * time.Second)
			b.ReportAllocs()
			for b.Loop() {
				decide(p, job, res, now, r)
			}
		})
	}
}
