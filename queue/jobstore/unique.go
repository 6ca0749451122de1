package jobstore

import "github.com/heed-go/heed/queue/internal/check"

// defaultUniqueStates are the states in which a job holds its unique key
// unless [JobInsert].UniqueStates (queue's UniqueOptions.ByState) says
// otherwise.
var defaultUniqueStates = []State{StateAvailable, StateRunning}

// KeyStates returns the states in which the job holds its unique key:
// in.UniqueStates, or defaultUniqueStates when nil.
func (in *JobInsert) KeyStates() []State {
	if in.UniqueStates == nil {
		return defaultUniqueStates
	}
	return in.UniqueStates
}

// uniqueStates validates states (nil is the default) and returns them in
// the stored order, without duplicates.
func uniqueStates(field string, states []State) ([]State, error) {
	out, why := check.UniqueStates(states, State.Valid)
	if why != "" {
		return nil, &InputError{field, why}
	}
	return out, nil
}
