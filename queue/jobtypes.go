package queue

import "github.com/heed-go/heed/queue/jobstore"

// The types a user names that stores share. They are defined in
// queue/jobstore, the package store implementers read, so that a store
// needs nothing of this package; these aliases are the same types, and
// their fields and methods are documented there.

// Job is a job as stored: what a handler receives, and what [Client.Job],
// [Client.Jobs] and [Client.Dead] return. See [jobstore.Job].
type Job = jobstore.Job

// Attempt is one entry of a job's history ([Job].History): an attempt and
// the decision taken after it, or an operator's change. See
// [jobstore.Attempt].
type Attempt = jobstore.Attempt

// JobPolicy overrides parts of the worker's policy for one job
// ([EnqueueOptions].Policy) or kind ([KindPolicy].Policy). See
// [jobstore.JobPolicy].
type JobPolicy = jobstore.JobPolicy

// JobFilter selects jobs for [Client.Jobs], [Client.Cancel],
// [Client.RunNow] and [Client.Delete]; the zero JobFilter selects every
// job. See [jobstore.JobFilter].
type JobFilter = jobstore.JobFilter

// Stats counts a store's jobs per queue and state ([Client.Stats]). See
// [jobstore.Stats].
type Stats = jobstore.Stats

// Limit caps one queue's jobs across every worker of every process that
// shares the store ([Client.SetLimit]). See [jobstore.Limit].
type Limit = jobstore.Limit

// InputError reports bad input, naming the field. It matches
// [ErrInvalid]. See [jobstore.InputError].
type InputError = jobstore.InputError

// ItemError reports an invalid item of a batch ([Client.EnqueueMany]),
// naming it by its index; it unwraps to the item's error, which matches
// [ErrInvalid]. See [jobstore.ItemError].
type ItemError = jobstore.ItemError

// State is where a job is in its life. See [jobstore.State].
type State = jobstore.State

// The states of a job (see [jobstore.State]): available (possibly for
// later), running, then succeeded, dead or cancelled.
const (
	StateAvailable = jobstore.StateAvailable // waiting for AvailableAt, then for a worker
	StateRunning   = jobstore.StateRunning   // leased to one worker
	StateSucceeded = jobstore.StateSucceeded // done
	StateDead      = jobstore.StateDead      // given up: in the dead-letter, see Job.DeadReason
	StateCancelled = jobstore.StateCancelled // cancelled by an operator ([Client.Cancel])
)

// Errors of the Client and the stores; they match with errors.Is.
var (
	// ErrNotFound: no job has the ID asked for.
	ErrNotFound = jobstore.ErrNotFound
	// ErrInvalid is matched by every error about bad input (an
	// [*InputError] names the field). Nothing was written.
	ErrInvalid = jobstore.ErrInvalid
)
