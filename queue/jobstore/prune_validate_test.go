package jobstore

import (
	"errors"
	"testing"
)

func TestPruneParamsValidate(t *testing.T) {
	for _, tc := range []struct {
		p    PruneParams
		want string // "" for valid
	}{
		{PruneParams{State: StateSucceeded, Limit: 1}, ""},
		{PruneParams{State: StateDead, Limit: 100}, ""},
		{PruneParams{State: StateCancelled, Limit: 1}, ""},
		{PruneParams{State: StateAvailable, Limit: 1}, `queue: state is "available", not a finished state`},
		{PruneParams{State: StateRunning, Limit: 0}, `queue: state is "running", not a finished state`},
		{PruneParams{State: StateSucceeded, Limit: 0}, `queue: limit is 0, must be at least 1`},
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
