package sqlitestore

// ParsePath returns the file path that [Open] reads from dsn ("heed.db",
// "sqlite:heed.db", "sqlite:///var/lib/heed.db", "file:heed.db?mode=rw"),
// without opening anything, or the error Open would return for it. Callers
// that must name or remove the file before opening it (a read-only tool, a
// reset) use it instead of parsing dsn themselves.
func ParsePath(dsn string) (string, error) {
	path, _, err := parseDSN(dsn)
	return path, err
}
