//go:build !unix

package enginetest

import "time"

// CPUTime is the process's CPU time so far: 0 where it is not read.
func CPUTime() time.Duration { return 0 }
