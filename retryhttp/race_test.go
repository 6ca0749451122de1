//go:build race

package retryhttp_test

// raceOn: the race detector slows loopback HTTP down several times.
const raceOn = true
