package queue

import (
	"errors"
	"testing"

	"github.com/heed-go/heed/queue/jobstore"
)

func TestPruneParamsValidate(t *testing.T) {
	for _, tc := range []struct {
		p    jobstore.PruneParams
		want string // "" for valid
	}{
		{jobstore.PruneParams{State: StateSucceeded, Limit: 1}, ""},
		{jobstore.PruneParams{State: StateDead, Limit: 100}, ""},
		{jobstore.PruneParams{State: StateCancelled, Limit: 1}, ""},
		{jobstore.PruneParams{State: StateAvailable, Limit: 1}, `queue: state is "available", not a finished state`},
		{jobstore.PruneParams{State: StateRunning, Limit: 0}, `queue: state is "running", not a finished state`},
		{jobstore.PruneParams{State: StateSucceeded, Limit: 0}, `queue: limit is 0, must be at least 1`},
	} {
		err := tc.p.Validate()
		if tc.want == "" {
			if err != nil {
				t.Errorf("%+v: %v", tc.p, err)
			}
			continue
		}
		if err == nil || err.Error() != tc.want || !errors.Is(err, ErrInvalid) {
			t.Errorf("%+v: %v, want %q matching ErrInvalid", tc.p, err, tc.want)
		}
	}
}
