package jobstore

import (
	"context"
	"fmt"
	"math"
	"time"
)

// Limit caps one queue's jobs across every worker of every process that
// shares the store (a global limit, as River Pro's GlobalLimit, DBOS's
// queue concurrency and rateLimit, Sidekiq Enterprise's limiters): jobs
// are clients too, and a thousand workers must not overload the API their
// jobs call. The store enforces it when workers claim: a job held back by
// a limit stays available, unwritten and without a history entry, until a
// claim finds room for it. Set it with [queue.Client.SetLimit]; it is kept in
// the database beside the queue's pause, so that every process enforces
// the same number. The zero Limit limits nothing.
type Limit struct {
	// Concurrency is the most jobs of the queue running at once, across
	// all workers and machines; 0: no limit. A job whose worker died
	// keeps its place until its lease expires and a rescue takes it
	// (WorkerConfig.Lease, RescueInterval): a worker that is only slow
	// to renew may still be running it.
	Concurrency int
	// Rate is the most jobs of the queue started per RatePeriod, across
	// all workers and machines; 0: no limit. Starts take tokens from a
	// bucket of Rate tokens that refills at Rate per RatePeriod and
	// starts full, so any interval of length T sees at most
	// Rate × (1 + T/RatePeriod) starts: at 50 a second, at most 3,050 in
	// a minute (50.8/s). Retries are starts too.
	Rate int
	// RatePeriod is the period of Rate (default: one second; at least a
	// millisecond, at most a day).
	RatePeriod time.Duration
}

// IsZero reports whether l limits nothing.
func (l Limit) IsZero() bool { return l.Concurrency == 0 && l.Rate == 0 }

// Validate returns an error matching ErrInvalid, naming the field, for a
// negative limit or a period out of range.
func (l Limit) Validate() error {
	switch {
	case l.Concurrency < 0:
		return &InputError{Field: "Limit.Concurrency", Reason: fmt.Sprintf("is %d, must be 0 (no limit) or more", l.Concurrency)}
	case l.Rate < 0:
		return &InputError{Field: "Limit.Rate", Reason: fmt.Sprintf("is %d, must be 0 (no limit) or more", l.Rate)}
	case l.RatePeriod != 0 && (l.RatePeriod < time.Millisecond || l.RatePeriod > 24*time.Hour):
		return &InputError{Field: "Limit.RatePeriod", Reason: fmt.Sprintf("is %v, must be 0 (one second) or from 1ms to 24h", l.RatePeriod)}
	}
	return nil
}

// period is RatePeriod with its default.
func (l Limit) period() time.Duration {
	if l.RatePeriod == 0 {
		return time.Second
	}
	return l.RatePeriod
}

// String describes l, as in "at most 10 running, 50 starts per 1s", or
// "no limit".
func (l Limit) String() string {
	switch {
	case l.IsZero():
		return "no limit"
	case l.Rate == 0:
		return fmt.Sprintf("at most %d running", l.Concurrency)
	case l.Concurrency == 0:
		return fmt.Sprintf("at most %d starts per %v", l.Rate, l.period())
	}
	return fmt.Sprintf("at most %d running, %d starts per %v", l.Concurrency, l.Rate, l.period())
}

// QueueLimit is a queue's [Limit], as [queue.Client.Limits] lists it.
type QueueLimit struct {
	Queue string // the queue's name
	Limit        // its limits
}

// RateBucket is the state of a limited queue's rate: Tokens left at At. A store keeps it beside the limit,
// starts it full ([Limit.FullBucket]) when the rate is set or changed,
// and moves it only when a claim starts jobs ([Limit.Took]).
type RateBucket struct {
	Tokens float64   // starts left, fractions included
	At     time.Time // when Tokens was counted
}

// FullBucket is a bucket of l.Rate tokens at now.
func (l Limit) FullBucket(now time.Time) RateBucket {
	return RateBucket{Tokens: float64(l.Rate), At: now}
}

// refill is b with the tokens earned from b.At to now, at most l.Rate. A
// now before b.At (a claimer whose clock is behind another's) earns
// nothing and keeps b.At.
func (l Limit) refill(b RateBucket, now time.Time) RateBucket {
	if now.After(b.At) {
		b.Tokens += float64(l.Rate) * float64(now.Sub(b.At)) / float64(l.period())
		b.At = now
	}
	b.Tokens = min(b.Tokens, float64(l.Rate))
	return b
}

// Claimable is how many of want jobs a claim at
// now may start: want, at most Concurrency minus running (the queue's
// running jobs, counted atomically with the claim), and at most the
// whole tokens of the bucket b. It is never negative.
func (l Limit) Claimable(want, running int, b RateBucket, now time.Time) int {
	n := want
	if l.Concurrency > 0 {
		n = min(n, l.Concurrency-running)
	}
	if l.Rate > 0 {
		// A hair of slack, so that 3 × (1/3) token counts as 1.
		n = min(n, int(math.Floor(l.refill(b, now).Tokens+1e-9)))
	}
	return max(n, 0)
}

// Took is the bucket b after a claim at now
// started n jobs.
func (l Limit) Took(b RateBucket, now time.Time, n int) RateBucket {
	b = l.refill(b, now)
	b.Tokens -= float64(n)
	return b
}

// HeldClaimer is implemented by stores whose
// claims say when a queue's [Limit] held due jobs back. A [queue.Worker] whose
// store has it claims again for such a queue as soon as one of its own
// jobs of the queue ends (which frees a place under a concurrency limit),
// instead of at its next poll: one worker process under a limit of 10
// runs 10 at a time, not 10 per poll interval.
type HeldClaimer interface {
	// JobClaimHeld is [Store.JobClaim] that also reports whether the
	// queue's limit (or another claim holding it) left due jobs behind.
	JobClaimHeld(ctx context.Context, p ClaimParams) (jobs []*Job, held bool, err error)
}
