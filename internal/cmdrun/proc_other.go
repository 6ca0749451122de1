//go:build !unix

package cmdrun

import (
	"os"
	"os/exec"
	"time"
)

// groupStop is what stops an attempt. Without Unix process groups and
// signals, a cancelled attempt kills only the command's own process.
type groupStop struct{}

// ownProcessGroup leaves cmd as it is but for its wait delay.
func ownProcessGroup(cmd *exec.Cmd, killAfter time.Duration, tty int) *groupStop {
	cmd.WaitDelay = waitDelay
	return &groupStop{}
}

// done reports that no signal was sent.
func (*groupStop) done() (terminated, killed bool) { return false, false }

// foregroundTTY returns -1: terminals are passed as they are.
func foregroundTTY(f *os.File) int { return -1 }

// signalOf reports no signal: only Unix ends processes with signals.
func signalOf(ps *os.ProcessState) (int, bool) { return 0, false }

// interruptSignal reports false: no signals.
func interruptSignal(sig int) bool { return false }
