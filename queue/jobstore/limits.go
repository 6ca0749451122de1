package jobstore

// Limits on what a job keeps, so that no input (a handler's 10 MB error, a
// job retried forever, a huge payload) grows a store or a log without
// bound. Text over a limit is cut, with the cut marked, as in
// "connection reset by peer ... [9.9 MB cut]".
const (
	// MaxErrorText is the most of an attempt's error text that is stored
	// in its history entry: 8 KiB. The text is also redacted (URL secrets
	// and credential-like words, as in retryhttp.RedactURL).
	MaxErrorText = 8 << 10
	// MaxPanicText is the most of a panic's stack stored in its history
	// entry: 64 KiB (the innermost frames come first, and are kept).
	MaxPanicText = 64 << 10
	// MaxHistory is how many of a job's most recent history entries
	// stores keep beside its first: once a job has more, each new entry
	// drops the oldest but the first, and an entry with Outcome
	// [OutcomeCut] after the first says how many were dropped.
	MaxHistory = 100
	// MaxArgs is the largest job arguments accepted at enqueue: 1 MiB.
	// Larger payloads belong in a blob store; pass a reference.
	MaxArgs = 1 << 20
	// MaxName is the longest kind, queue or worker name, in bytes.
	MaxName = 255
	// MaxUniqueKey is the longest unique key, in bytes.
	MaxUniqueKey = 1024
)
