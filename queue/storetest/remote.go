package storetest

import (
	"context"
	"sync"
	"time"

	"github.com/heed-go/heed/queue/jobstore"
)

// remote runs a store's calls on goroutines outside a testing/synctest
// bubble, for a store that talks to a server over the network
// (PostgreSQL), whose connections and listener cannot live in a bubble.
// Code in the bubble reaches it through [remote.store]: each call is
// handed to a goroutine outside and waited for on a channel made outside
// the bubble, which does not count as durably blocked, so the bubble's
// clock stands still while the server works: a store call takes no
// virtual time, as it takes none over SQLite in the bubble.
//
// Make it outside the bubble with newRemote, call store inside it, and
// stop it outside once the bubble has ended.
type remote struct {
	s     jobstore.Store
	calls chan func()        // made outside the bubble
	free  chan chan struct{} // reply channels, made outside the bubble
	wg    sync.WaitGroup
}

const (
	// remoteServers is how many store calls run at once.
	remoteServers = 8
	// remoteReplies bounds the calls waiting at once; more wait for a
	// reply channel.
	remoteReplies = 256
	// remoteTimeout bounds one store call, in real time (the contexts of
	// the bubble's calls are the bubble's, and stay there).
	remoteTimeout = time.Minute
)

// newRemote starts the goroutines that run s's calls. Call it outside the
// bubble.
func newRemote(s jobstore.Store) *remote {
	r := &remote{s: s, calls: make(chan func()), free: make(chan chan struct{}, remoteReplies)}
	for range remoteReplies {
		r.free <- make(chan struct{}, 1)
	}
	for range remoteServers {
		r.wg.Go(func() {
			for f := range r.calls {
				f()
			}
		})
	}
	return r
}

// stop ends the goroutines; no call may be made after it. Call it outside
// the bubble.
func (r *remote) stop() {
	close(r.calls)
	r.wg.Wait()
}

// do runs f outside the bubble, with a context of its own, and returns
// when it has.
func (r *remote) do(f func(ctx context.Context)) {
	done := <-r.free
	r.calls <- func() {
		ctx, cancel := context.WithTimeout(context.Background(), remoteTimeout)
		defer cancel()
		f(ctx)
		done <- struct{}{}
	}
	<-done
	r.free <- done
}

// store returns the store as code in the bubble uses it. Its Notifier is
// its own, in the bubble: it wakes the worker for the jobs inserted and
// the transitions that make a job due through it, as sqlitestore does,
// instead of the server's notifications, which arrive outside. Its Close
// does nothing: the store is closed outside.
func (r *remote) store() *remoteStore {
	return &remoteStore{r: r, queues: map[int64]string{}, subs: map[chan string]struct{}{}}
}

type remoteStore struct {
	r *remote

	mu     sync.Mutex
	queues map[int64]string // job ID → queue, for wake-ups
	subs   map[chan string]struct{}
}

var (
	_ jobstore.Store             = (*remoteStore)(nil)
	_ jobstore.TransitionBatcher = (*remoteStore)(nil)
	_ jobstore.Notifier          = (*remoteStore)(nil)
)

// JobNotify implements jobstore.Notifier in the bubble.
func (s *remoteStore) JobNotify(ctx context.Context) (<-chan string, error) {
	ch := make(chan string, 1)
	s.mu.Lock()
	s.subs[ch] = struct{}{}
	s.mu.Unlock()
	go func() {
		<-ctx.Done()
		s.mu.Lock()
		delete(s.subs, ch)
		s.mu.Unlock()
		close(ch)
	}()
	return ch, nil
}

// wake notifies the subscribers of jobs due in q.
func (s *remoteStore) wake(q string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for ch := range s.subs {
		select {
		case ch <- q:
		default:
		}
	}
}

// remember records the queues of jobs.
func (s *remoteStore) remember(jobs ...*jobstore.Job) {
	s.mu.Lock()
	for _, j := range jobs {
		if j != nil {
			s.queues[j.ID] = j.Queue
		}
	}
	s.mu.Unlock()
}

// wakeFor wakes the queue of a transition that makes its job due.
func (s *remoteStore) wakeFor(t jobstore.Transition) {
	if !t.Wakes() {
		return
	}
	s.mu.Lock()
	q, ok := s.queues[t.ID]
	s.mu.Unlock()
	if ok {
		s.wake(q)
	}
}

func (s *remoteStore) JobInsert(ctx context.Context, in jobstore.JobInsert) (job *jobstore.Job, inserted bool, err error) {
	s.r.do(func(ctx context.Context) { job, inserted, err = s.r.s.JobInsert(ctx, in) })
	if err == nil && inserted {
		s.remember(job)
		s.wake(job.Queue)
	}
	return job, inserted, err
}

func (s *remoteStore) JobGet(ctx context.Context, id int64) (job *jobstore.Job, err error) {
	s.r.do(func(ctx context.Context) { job, err = s.r.s.JobGet(ctx, id) })
	return job, err
}

func (s *remoteStore) JobList(ctx context.Context, f jobstore.JobFilter) (jobs []*jobstore.Job, err error) {
	s.r.do(func(ctx context.Context) { jobs, err = s.r.s.JobList(ctx, f) })
	return jobs, err
}

func (s *remoteStore) JobClaim(ctx context.Context, p jobstore.ClaimParams) (jobs []*jobstore.Job, err error) {
	s.r.do(func(ctx context.Context) { jobs, err = s.r.s.JobClaim(ctx, p) })
	s.remember(jobs...)
	return jobs, err
}

func (s *remoteStore) JobLeaseExtend(ctx context.Context, p jobstore.LeaseParams) (err error) {
	s.r.do(func(ctx context.Context) { err = s.r.s.JobLeaseExtend(ctx, p) })
	return err
}

func (s *remoteStore) JobTransition(ctx context.Context, t jobstore.Transition) (err error) {
	s.r.do(func(ctx context.Context) { err = s.r.s.JobTransition(ctx, t) })
	if err == nil {
		s.wakeFor(t)
	}
	return err
}

// JobTransitions implements jobstore.TransitionBatcher, with the store's own
// batches when it has them.
func (s *remoteStore) JobTransitions(ctx context.Context, ts []jobstore.Transition) (errs []error, err error) {
	s.r.do(func(ctx context.Context) {
		if b, ok := s.r.s.(jobstore.TransitionBatcher); ok {
			errs, err = b.JobTransitions(ctx, ts)
			return
		}
		errs = make([]error, len(ts))
		for i, t := range ts {
			errs[i] = s.r.s.JobTransition(ctx, t)
		}
	})
	if err == nil {
		for i, t := range ts {
			if errs[i] == nil {
				s.wakeFor(t)
			}
		}
	}
	return errs, err
}

func (s *remoteStore) JobRescue(ctx context.Context, p jobstore.RescueParams) (jobs []*jobstore.Job, err error) {
	s.r.do(func(ctx context.Context) { jobs, err = s.r.s.JobRescue(ctx, p) })
	s.remember(jobs...)
	return jobs, err
}

func (s *remoteStore) DeadRequeue(ctx context.Context, p jobstore.OpParams) (n int, err error) {
	s.r.do(func(ctx context.Context) { n, err = s.r.s.DeadRequeue(ctx, p) })
	return n, err
}

func (s *remoteStore) DeadDelete(ctx context.Context, f jobstore.JobFilter) (n int, err error) {
	s.r.do(func(ctx context.Context) { n, err = s.r.s.DeadDelete(ctx, f) })
	return n, err
}

func (s *remoteStore) Stats(ctx context.Context, now time.Time) (st jobstore.Stats, err error) {
	s.r.do(func(ctx context.Context) { st, err = s.r.s.Stats(ctx, now) })
	return st, err
}

func (s *remoteStore) Migrate(ctx context.Context) (err error) {
	s.r.do(func(ctx context.Context) { err = s.r.s.Migrate(ctx) })
	return err
}

// Close does nothing: the store is closed outside the bubble.
func (s *remoteStore) Close() error { return nil }

func (s *remoteStore) JobCancel(ctx context.Context, p jobstore.OpParams) (n int, err error) {
	s.r.do(func(ctx context.Context) { n, err = s.r.s.JobCancel(ctx, p) })
	return n, err
}

func (s *remoteStore) JobRunNow(ctx context.Context, p jobstore.OpParams) (n int, err error) {
	s.r.do(func(ctx context.Context) { n, err = s.r.s.JobRunNow(ctx, p) })
	return n, err
}

func (s *remoteStore) JobDelete(ctx context.Context, f jobstore.JobFilter) (n int, err error) {
	s.r.do(func(ctx context.Context) { n, err = s.r.s.JobDelete(ctx, f) })
	return n, err
}

func (s *remoteStore) JobPrune(ctx context.Context, p jobstore.PruneParams) (n int, err error) {
	s.r.do(func(ctx context.Context) { n, err = s.r.s.JobPrune(ctx, p) })
	return n, err
}

func (s *remoteStore) QueuePause(ctx context.Context, q string, now time.Time) (changed bool, err error) {
	s.r.do(func(ctx context.Context) { changed, err = s.r.s.QueuePause(ctx, q, now) })
	return changed, err
}

func (s *remoteStore) QueueResume(ctx context.Context, q string) (changed bool, err error) {
	s.r.do(func(ctx context.Context) { changed, err = s.r.s.QueueResume(ctx, q) })
	return changed, err
}

func (s *remoteStore) QueuesPaused(ctx context.Context) (ps []jobstore.PausedQueue, err error) {
	s.r.do(func(ctx context.Context) { ps, err = s.r.s.QueuesPaused(ctx) })
	return ps, err
}

func (s *remoteStore) QueueLimit(ctx context.Context, q string, l jobstore.Limit, now time.Time) (err error) {
	s.r.do(func(ctx context.Context) { err = s.r.s.QueueLimit(ctx, q, l, now) })
	return err
}

func (s *remoteStore) QueuesLimited(ctx context.Context) (ls []jobstore.QueueLimit, err error) {
	s.r.do(func(ctx context.Context) { ls, err = s.r.s.QueuesLimited(ctx) })
	return ls, err
}
