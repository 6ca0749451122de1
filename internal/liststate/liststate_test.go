package liststate

import (
	"testing"

	"github.com/heed-go/heed/queue/jobstore"
)

func TestLastError(t *testing.T) {
	failed := []jobstore.Attempt{
		{Attempt: 1, Outcome: "transient", Action: "retry", Error: "connection refused"},
		{Attempt: 2, Outcome: "transient", Action: "retry", Error: "i/o timeout"},
	}
	requeued := append(append([]jobstore.Attempt{}, failed...), jobstore.Attempt{Outcome: "requeued", Action: jobstore.ActionRequeue})
	succeeded := append(append([]jobstore.Attempt{}, failed...), jobstore.Attempt{Attempt: 3, Outcome: "success", Action: "done"})
	for _, tc := range []struct {
		name    string
		state   jobstore.State
		history []jobstore.Attempt
		want    string
	}{
		{"new", jobstore.StateAvailable, nil, ""},
		{"retrying", jobstore.StateAvailable, failed, "i/o timeout"},
		{"running after failures", jobstore.StateRunning, failed, "i/o timeout"},
		{"dead", jobstore.StateDead, failed, "i/o timeout"},
		{"requeued after dying", jobstore.StateAvailable, requeued, "i/o timeout"},
		// The errors of a succeeded job are its earlier attempts': not
		// what the job is now.
		{"succeeded after failures", jobstore.StateSucceeded, succeeded, ""},
	} {
		j := &jobstore.Job{State: tc.state, History: tc.history}
		if got := LastError(j); got != tc.want {
			t.Errorf("%s: LastError = %q, want %q", tc.name, got, tc.want)
		}
	}
}
