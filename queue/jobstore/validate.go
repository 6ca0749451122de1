package jobstore

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/heed-go/heed/internal/redact"
	"github.com/heed-go/heed/queue/internal/check"
)

// Validate reports the first invalid field of in, naming it, or nil.
// Stores call it before writing, so that a JobInsert built by hand cannot
// corrupt the table. Errors match ErrInvalid.
func (in *JobInsert) Validate() error {
	if err := check.Name("JobInsert.Kind", in.Kind, MaxName); err != nil {
		return err
	}
	if err := check.Name("JobInsert.Queue", in.Queue, MaxName); err != nil {
		return err
	}
	if err := check.OptionalName("JobInsert.UniqueKey", in.UniqueKey, MaxUniqueKey); err != nil {
		return err
	}
	if err := check.Args("JobInsert.Args", len(in.Args), MaxArgs); err != nil {
		return err
	}
	if in.UniqueStates != nil {
		if in.UniqueKey == "" {
			return &InputError{Field: "JobInsert.UniqueStates", Reason: "is set without a UniqueKey"}
		}
		st, err := check.UniqueStates("JobInsert.UniqueStates", in.UniqueStates, State.Valid)
		if err != nil {
			return err
		}
		if st != nil && !slices.Equal(st, in.UniqueStates) {
			return &InputError{Field: "JobInsert.UniqueStates", Reason: "is not in the order available, running, succeeded, dead without duplicates"}
		}
	}
	switch {
	case len(in.Args) == 0 || !json.Valid(in.Args):
		return &InputError{Field: "JobInsert.Args", Reason: fmt.Sprintf("is not valid JSON: %.40q", redact.Text(string(in.Args)))}
	case in.MaxAttempts < -1:
		return &InputError{Field: "JobInsert.MaxAttempts", Reason: fmt.Sprintf("is %d, must be at least -1", in.MaxAttempts)}
	case in.AvailableAt.IsZero():
		return &InputError{Field: "JobInsert.AvailableAt", Reason: "is zero"}
	case in.CreatedAt.IsZero():
		return &InputError{Field: "JobInsert.CreatedAt", Reason: "is zero"}
	}
	return check.Policy("JobInsert.Policy", in.Policy.Backoff)
}

// Validate reports the first invalid field of t, naming it, or nil.
// Stores call it before writing. Errors match ErrInvalid.
func (t *Transition) Validate() error {
	switch {
	case t.LeaseToken == "":
		return &InputError{Field: "Transition.LeaseToken", Reason: "is empty"}
	case t.Attempt < 0:
		return &InputError{Field: "Transition.Attempt", Reason: fmt.Sprintf("is %d, must not be negative", t.Attempt)}
	}
	switch t.State {
	case StateAvailable:
		if t.AvailableAt.IsZero() {
			return &InputError{Field: "Transition.AvailableAt", Reason: "is zero for state available"}
		}
		if !t.FinishedAt.IsZero() || t.DeadReason != "" {
			return &InputError{Field: "Transition.FinishedAt", Reason: "or DeadReason is set for state available"}
		}
	case StateSucceeded, StateDead:
		if t.FinishedAt.IsZero() {
			return &InputError{Field: "Transition.FinishedAt", Reason: "is zero for state " + string(t.State)}
		}
		if (t.State == StateDead) != (t.DeadReason != "") {
			return &InputError{Field: "Transition.DeadReason", Reason: fmt.Sprintf("is %q for state %s", t.DeadReason, t.State)}
		}
	default:
		return &InputError{Field: "Transition.State", Reason: fmt.Sprintf("is %q, must be available, succeeded or dead", t.State)}
	}
	return nil
}

// Validate reports the first invalid field of p, or nil. Errors match
// ErrInvalid.
func (p *ClaimParams) Validate() error {
	if err := check.Name("ClaimParams.Queue", p.Queue, MaxName); err != nil {
		return err
	}
	if err := check.OptionalName("ClaimParams.Worker", p.Worker, MaxName); err != nil {
		return err
	}
	switch {
	case p.Limit < 1:
		return &InputError{Field: "ClaimParams.Limit", Reason: fmt.Sprintf("is %d, must be at least 1", p.Limit)}
	case p.Now.IsZero():
		return &InputError{Field: "ClaimParams.Now", Reason: "is zero"}
	case !p.LeaseUntil.After(p.Now):
		return &InputError{Field: "ClaimParams.LeaseUntil", Reason: "is not after Now"}
	}
	return nil
}

// Validate reports the first invalid field of p, or nil. Errors match
// ErrInvalid.
func (p *RescueParams) Validate() error {
	switch {
	case p.Limit < 1:
		return &InputError{Field: "RescueParams.Limit", Reason: fmt.Sprintf("is %d, must be at least 1", p.Limit)}
	case p.Now.IsZero():
		return &InputError{Field: "RescueParams.Now", Reason: "is zero"}
	case !p.LeaseUntil.After(p.Now):
		return &InputError{Field: "RescueParams.LeaseUntil", Reason: "is not after Now"}
	}
	return nil
}

// Validate reports the first invalid field of p, or nil: a state that is
// not finished, or a limit under 1. Errors match ErrInvalid.
func (p *PruneParams) Validate() error {
	switch {
	case !p.State.Finished():
		return &InputError{Field: "state", Reason: fmt.Sprintf("is %q, not a finished state", p.State)}
	case p.Limit < 1:
		return &InputError{Field: "limit", Reason: fmt.Sprintf("is %d, must be at least 1", p.Limit)}
	}
	return nil
}

// Validate reports the first invalid field of f, or nil. Errors match
// ErrInvalid.
func (f *JobFilter) Validate() error {
	if err := check.OptionalName("JobFilter.Kind", f.Kind, MaxName); err != nil {
		return err
	}
	if err := check.OptionalName("JobFilter.Queue", f.Queue, MaxName); err != nil {
		return err
	}
	switch {
	case f.State != "" && !f.State.Valid():
		return &InputError{Field: "JobFilter.State", Reason: fmt.Sprintf("is %q, not a state", f.State)}
	case f.Limit < 0:
		return &InputError{Field: "JobFilter.Limit", Reason: fmt.Sprintf("is %d, must not be negative", f.Limit)}
	case f.AfterID < 0:
		return &InputError{Field: "JobFilter.AfterID", Reason: fmt.Sprintf("is %d, must not be negative", f.AfterID)}
	case f.BeforeID < 0:
		return &InputError{Field: "JobFilter.BeforeID", Reason: fmt.Sprintf("is %d, must not be negative", f.BeforeID)}
	}
	return nil
}
