//go:build unix

package enginetest

import (
	"syscall"
	"time"
)

// CPUTime is the process's CPU time so far (user and system).
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
