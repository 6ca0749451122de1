package jobstore

// Wakes reports whether t makes its job due by t.Now, so that a store
// that notifies ([Notifier]) should wake idle workers: t leaves the job available, with AvailableAt at or
// before t.Now.
func (t *Transition) Wakes() bool {
	return t.State == StateAvailable && !t.Now.IsZero() && !t.AvailableAt.After(t.Now)
}
