package jobstore

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/heed-go/heed/internal/redact"
)

// Validate reports the first invalid field of in, naming it, or nil.
// Stores call it before writing, so that a JobInsert built by hand cannot
// corrupt the table. Errors match ErrInvalid.
func (in *JobInsert) Validate() error {
	if err := validName("JobInsert.Kind", in.Kind, MaxName); err != nil {
		return err
	}
	if err := validName("JobInsert.Queue", in.Queue, MaxName); err != nil {
		return err
	}
	if err := validOptionalName("JobInsert.UniqueKey", in.UniqueKey, MaxUniqueKey); err != nil {
		return err
	}
	if err := validArgs("JobInsert.Args", len(in.Args)); err != nil {
		return err
	}
	if in.UniqueStates != nil {
		if in.UniqueKey == "" {
			return &InputError{"JobInsert.UniqueStates", "is set without a UniqueKey"}
		}
		st, err := uniqueStates("JobInsert.UniqueStates", in.UniqueStates)
		if err != nil {
			return err
		}
		if st != nil && !slices.Equal(st, in.UniqueStates) {
			return &InputError{"JobInsert.UniqueStates", "is not in the order available, running, succeeded, dead without duplicates"}
		}
	}
	switch {
	case len(in.Args) == 0 || !json.Valid(in.Args):
		return &InputError{"JobInsert.Args", fmt.Sprintf("is not valid JSON: %.40q", redact.Text(string(in.Args)))}
	case in.MaxAttempts < -1:
		return &InputError{"JobInsert.MaxAttempts", fmt.Sprintf("is %d, must be at least -1", in.MaxAttempts)}
	case in.AvailableAt.IsZero():
		return &InputError{"JobInsert.AvailableAt", "is zero"}
	case in.CreatedAt.IsZero():
		return &InputError{"JobInsert.CreatedAt", "is zero"}
	}
	return in.Policy.validate("JobInsert.Policy")
}

// Validate reports the first invalid field of t, naming it, or nil.
// Stores call it before writing. Errors match ErrInvalid.
func (t *Transition) Validate() error {
	switch {
	case t.LeaseToken == "":
		return &InputError{"Transition.LeaseToken", "is empty"}
	case t.Attempt < 0:
		return &InputError{"Transition.Attempt", fmt.Sprintf("is %d, must not be negative", t.Attempt)}
	}
	switch t.State {
	case StateAvailable:
		if t.AvailableAt.IsZero() {
			return &InputError{"Transition.AvailableAt", "is zero for state available"}
		}
		if !t.FinishedAt.IsZero() || t.DeadReason != "" {
			return &InputError{"Transition.FinishedAt", "or DeadReason is set for state available"}
		}
	case StateSucceeded, StateDead:
		if t.FinishedAt.IsZero() {
			return &InputError{"Transition.FinishedAt", "is zero for state " + string(t.State)}
		}
		if (t.State == StateDead) != (t.DeadReason != "") {
			return &InputError{"Transition.DeadReason", fmt.Sprintf("is %q for state %s", t.DeadReason, t.State)}
		}
	default:
		return &InputError{"Transition.State", fmt.Sprintf("is %q, must be available, succeeded or dead", t.State)}
	}
	return nil
}

// Validate reports the first invalid field of p, or nil. Errors match
// ErrInvalid.
func (p *ClaimParams) Validate() error {
	if err := validName("ClaimParams.Queue", p.Queue, MaxName); err != nil {
		return err
	}
	if err := validOptionalName("ClaimParams.Worker", p.Worker, MaxName); err != nil {
		return err
	}
	switch {
	case p.Limit < 1:
		return &InputError{"ClaimParams.Limit", fmt.Sprintf("is %d, must be at least 1", p.Limit)}
	case p.Now.IsZero():
		return &InputError{"ClaimParams.Now", "is zero"}
	case !p.LeaseUntil.After(p.Now):
		return &InputError{"ClaimParams.LeaseUntil", "is not after Now"}
	}
	return nil
}

// Validate reports the first invalid field of p, or nil. Errors match
// ErrInvalid.
func (p *RescueParams) Validate() error {
	switch {
	case p.Limit < 1:
		return &InputError{"RescueParams.Limit", fmt.Sprintf("is %d, must be at least 1", p.Limit)}
	case p.Now.IsZero():
		return &InputError{"RescueParams.Now", "is zero"}
	case !p.LeaseUntil.After(p.Now):
		return &InputError{"RescueParams.LeaseUntil", "is not after Now"}
	}
	return nil
}

// Validate reports the first invalid field of p, or nil: a state that is
// not finished, or a limit under 1. Errors match ErrInvalid.
func (p *PruneParams) Validate() error {
	switch {
	case !p.State.Finished():
		return &InputError{"state", fmt.Sprintf("is %q, not a finished state", p.State)}
	case p.Limit < 1:
		return &InputError{"limit", fmt.Sprintf("is %d, must be at least 1", p.Limit)}
	}
	return nil
}

// Validate reports the first invalid field of f, or nil. Errors match
// ErrInvalid.
func (f *JobFilter) Validate() error {
	if err := validOptionalName("JobFilter.Kind", f.Kind, MaxName); err != nil {
		return err
	}
	if err := validOptionalName("JobFilter.Queue", f.Queue, MaxName); err != nil {
		return err
	}
	switch {
	case f.State != "" && !f.State.Valid():
		return &InputError{"JobFilter.State", fmt.Sprintf("is %q, not a state", f.State)}
	case f.Limit < 0:
		return &InputError{"JobFilter.Limit", fmt.Sprintf("is %d, must not be negative", f.Limit)}
	case f.AfterID < 0:
		return &InputError{"JobFilter.AfterID", fmt.Sprintf("is %d, must not be negative", f.AfterID)}
	case f.BeforeID < 0:
		return &InputError{"JobFilter.BeforeID", fmt.Sprintf("is %d, must not be negative", f.BeforeID)}
	}
	return nil
}
