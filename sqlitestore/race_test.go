//go:build race

package sqlitestore_test

// raceOn: the race detector slows SQLite down about 30 times (an outage
// of the over-time suite: 5 s of real time without it, 150 s with it).
const raceOn = true
