//go:build !race

package overload_test

// raceOn: the race detector slows loopback HTTP down several times.
const raceOn = false
