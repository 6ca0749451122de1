package jobstore

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
