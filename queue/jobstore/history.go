package jobstore

// sameRun reports whether the deferral e continues the run of deferrals
// that last (the history's last entry) is or ends: a deferral of the same
// attempt for the same reason.
func sameRun(last, e Attempt) bool {
	return last.Outcome == OutcomeDeferred && e.Outcome == OutcomeDeferred &&
		last.Attempt == e.Attempt && last.Reason == e.Reason
}

// joinRun returns the one entry of the run of deferrals last and then e:
// e's, counting both, since last's start.
func joinRun(last, e Attempt) Attempt {
	e.StartedAt, e.Count = last.StartedAt, max(last.Count, 1)+max(e.Count, 1)
	return e
}

// CompactHistory returns h with every run of consecutive deferrals of one
// attempt for one reason as the one entry with a count that a worker now
// writes ([Attempt].Count): the stores' migration 10 rewrites histories
// written before counts with it, and a worker joins a new deferral to the
// last entry with it. It reuses h's array; a history without such runs is
// returned as it is.
func CompactHistory(h []Attempt) []Attempt {
	out := h[:0]
	for _, e := range h {
		if n := len(out); n > 0 && sameRun(out[n-1], e) {
			out[n-1] = joinRun(out[n-1], e)
			continue
		}
		out = append(out, e)
	}
	return out
}
