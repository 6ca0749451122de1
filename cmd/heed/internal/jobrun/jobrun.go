// Package jobrun runs a job worker for the heed command (heed jobs work,
// heed demo): the built-in kinds, a line per decision, a summary every
// while, a graceful shutdown that a second signal cuts short, and the
// worker's own log lines.
package jobrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heed-go/heed/cmd/heed/internal/jobkinds"
	"github.com/heed-go/heed/cmd/heed/internal/signals"
	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/queue/jobstore"
)

// StoreLogger logs the worker's own warnings (store errors) to w, and not
// its per-job records, which the decision lines already show.
func StoreLogger(w io.Writer) *slog.Logger {
	return slog.New(&noJobRecords{slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelWarn})})
}

type noJobRecords struct{ slog.Handler }

func (h *noJobRecords) Handle(ctx context.Context, r slog.Record) error {
	if strings.HasPrefix(r.Message, "job ") {
		return nil
	}
	return h.Handler.Handle(ctx, r)
}

func (h *noJobRecords) WithAttrs(as []slog.Attr) slog.Handler {
	return &noJobRecords{h.Handler.WithAttrs(as)}
}

func (h *noJobRecords) WithGroup(n string) slog.Handler { return &noJobRecords{h.Handler.WithGroup(n)} }

// Runner runs a worker with the built-in kinds, printing a line per
// decision and a summary every while, for heed jobs work and heed demo.
// Set the fields, then call [Runner.Worker] and [Runner.Run].
type Runner struct {
	Store   jobstore.Store
	Config  queue.WorkerConfig
	Kinds   jobkinds.Config
	Out     io.Writer                // decision lines; nil for none
	Stamp   func(time.Time) string   // each line's prefix
	Drain   *queue.DrainOptions      // stop when the worker's queues are empty (Worker.WaitEmpty); nil: do not
	Drained *queue.DrainResult       // what the drain left, once it stopped the worker
	OnEvent func(queue.Event)        // called for every event, after printing
	Line    func(queue.Event) string // an event's line, "" for none (with Out)

	SummaryOut   io.Writer     // where summary lines go
	SummaryEvery time.Duration // how often; 0: never

	mu     sync.Mutex // serialises lines
	counts [16]atomic.Int64
}

// Worker returns the worker of r.Config on r.Store, observed by r, with
// the built-in kinds registered.
func (r *Runner) Worker() (*queue.Worker, error) {
	r.Config.Observe = r.observe
	w, err := queue.NewWorker(r.Store, r.Config)
	if err != nil {
		return nil, err
	}
	jobkinds.Register(w, r.Kinds)
	return w, nil
}

func (r *Runner) observe(_ context.Context, e queue.Event) {
	if int(e.Kind) < len(r.counts) {
		r.counts[e.Kind].Add(1)
	}
	if r.Out != nil {
		if line := r.Line(e); line != "" {
			now := time.Now()
			r.mu.Lock()
			fmt.Fprintf(r.Out, "%s job %d %s: %s\n", r.Stamp(now), e.Job.ID, e.Job.Kind, line)
			r.mu.Unlock()
		}
	}
	if r.OnEvent != nil {
		r.OnEvent(e)
	}
}

// Count returns how many events of kind k the worker had.
func (r *Runner) Count(k queue.EventKind) int64 { return r.counts[k].Load() }

// since describes the events since the counts in last, and updates last.
func (r *Runner) since(last *[16]int64) string {
	var d [16]int64
	for i := range r.counts {
		n := r.counts[i].Load()
		d[i], last[i] = n-last[i], n
	}
	return fmt.Sprintf("%d attempts: %d succeeded, %d retried, %d dead, %d snoozed, %d released, %d rescued (lost)",
		d[queue.EventStarted], d[queue.EventSucceeded], d[queue.EventRetried], d[queue.EventDead],
		d[queue.EventSnoozed], d[queue.EventReleased], d[queue.EventLost])
}

// Summary counts the worker's attempts and their ends.
func (r *Runner) Summary() string {
	return fmt.Sprintf("%d attempts: %d succeeded, %d retried, %d dead, %d snoozed, %d released, %d rescued (lost)",
		r.Count(queue.EventStarted), r.Count(queue.EventSucceeded), r.Count(queue.EventRetried), r.Count(queue.EventDead),
		r.Count(queue.EventSnoozed), r.Count(queue.EventReleased), r.Count(queue.EventLost))
}

// Run runs w until ctx ends or, with r.Drain, its queues have no live job;
// stopping is called when it starts to shut down. A second signal (see
// signals.Again) during the shutdown grace ends it at once:
// [ErrInterruptedAgain].
func (r *Runner) Run(ctx context.Context, w *queue.Worker, stopping func()) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() {
		<-ctx.Done()
		if stopping != nil {
			stopping()
		}
	})
	if r.SummaryEvery > 0 {
		wg.Go(func() {
			t := time.NewTicker(r.SummaryEvery)
			defer t.Stop()
			var last [len(r.counts)]int64
			for {
				select {
				case <-ctx.Done():
					return
				case now := <-t.C:
					line := r.since(&last)
					r.mu.Lock()
					fmt.Fprintf(r.SummaryOut, "%s summary of the last %v: %s\n", r.Stamp(now), r.SummaryEvery, line)
					r.mu.Unlock()
				}
			}
		})
	}
	err := w.Start(ctx)
	if err == nil && r.Drain != nil {
		wg.Go(func() {
			if res, err := w.WaitEmpty(ctx, *r.Drain); err == nil {
				r.Drained = &res
				cancel()
			}
		})
	}
	if err == nil {
		<-ctx.Done()
		// A second signal (see signals.Again) ends the grace at once:
		// running jobs are cancelled and released.
		sctx, stop := context.WithTimeoutCause(context.WithoutCancel(ctx), r.Config.ShutdownGrace, errGraceOver)
		defer stop()
		again := signals.Again(ctx)
		go func() {
			select {
			case <-again:
				stop()
			case <-sctx.Done():
			}
		}()
		err = w.Shutdown(sctx)
		if err != nil && context.Cause(sctx) != errGraceOver {
			err = fmt.Errorf("%w: %d running jobs were released", ErrInterruptedAgain, r.Count(queue.EventReleased))
		}
	}
	cancel()
	wg.Wait()
	if errors.Is(err, context.DeadlineExceeded) {
		err = fmt.Errorf("the shutdown grace ran out: %d running jobs were released", r.Count(queue.EventReleased))
	}
	return err
}

// errGraceOver is the cause of the end of a shutdown grace that ran out.
var errGraceOver = errors.New("the shutdown grace ran out")

// ErrInterruptedAgain is returned by [Runner.Run] when a second signal
// ended the shutdown grace.
var ErrInterruptedAgain = errors.New("interrupted again: stopped at once")

// ParseQueues parses a worker's queues, "a,b=5", into a map of queue to
// concurrency: def for a queue without its own.
func ParseQueues(list string, def int) (map[string]int, error) {
	qs := map[string]int{}
	for part := range strings.SplitSeq(list, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, n, hasN := strings.Cut(part, "=")
		c := def
		if hasN {
			v, err := strconv.Atoi(n)
			if err != nil || v < 1 {
				return nil, fmt.Errorf("queue %q: concurrency %q must be a whole number of at least 1", name, n)
			}
			c = v
		}
		if name == "" {
			return nil, fmt.Errorf("empty queue name in %q", list)
		}
		qs[name] = c
	}
	if len(qs) == 0 {
		return nil, errors.New("no queue named")
	}
	return qs, nil
}
