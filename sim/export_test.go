package sim

// Format is format, for the external tests.
func (s Spread) Format(f string) string { return s.format(f) }
