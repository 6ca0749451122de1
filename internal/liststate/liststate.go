// Package liststate names the states job lists are filtered by, for the
// two lists heed draws (heed jobs ls --state, the dashboard's jobs page):
// the stored states, with available split as [jobstore.Stats] counts it;
// and the error both lists show for a job ([LastError]). It is heed's own
// vocabulary of lists, not a store's: stores see only the
// [jobstore.JobFilter] it sets.
package liststate

import (
	"fmt"
	"strings"
	"time"

	"github.com/heed-go/heed/queue/jobstore"
)

// Names are the list states: available (due now), scheduled (due later),
// retrying (waiting after an attempt, due now or later), running,
// succeeded, dead and cancelled.
var Names = []string{"available", "scheduled", "retrying", "running", "succeeded", "dead", "cancelled"}

// Select sets f to select the jobs in the list state name (one of Names;
// "" selects any) at now. It returns an error matching jobstore.ErrInvalid
// naming the states for another name.
func Select(f *jobstore.JobFilter, name string, now time.Time) error {
	f.State, f.AvailableBy, f.AvailableAfter, f.Retried = "", time.Time{}, time.Time{}, false
	switch name {
	case "":
	case "available":
		f.State, f.AvailableBy = jobstore.StateAvailable, now
	case "scheduled":
		f.State, f.AvailableAfter = jobstore.StateAvailable, now
	case "retrying":
		f.State, f.Retried = jobstore.StateAvailable, true
	default:
		f.State = jobstore.State(name)
		if !f.State.Valid() {
			f.State = ""
			return &jobstore.InputError{Field: "state", Reason: fmt.Sprintf("%q is not %s", name, strings.Join(Names, ", "))}
		}
	}
	return nil
}

// LastError is the error a job list shows for j: the latest error of its
// history, or "" for a succeeded job. The errors of a succeeded job are
// those of the attempts before the one that succeeded, not its state: a
// list that showed them would show a healthy job as failing. The job's own
// page (heed jobs show, the dashboard's) keeps them, each on its attempt.
func LastError(j *jobstore.Job) string {
	if j.State == jobstore.StateSucceeded {
		return ""
	}
	for i := len(j.History) - 1; i >= 0; i-- {
		if e := j.History[i].Error; e != "" {
			return e
		}
	}
	return ""
}
