//go:build !unix

package cmdrun

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"
)

// groupStop is what stops an attempt. Without Unix process groups and
// signals, a cancelled attempt kills only the command's own process.
type groupStop struct{}

// ownProcessGroup leaves cmd as it is but for its wait delay.
func ownProcessGroup(cmd *exec.Cmd, killAfter time.Duration, tty int, sig syscall.Signal) *groupStop {
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

// ParseSignal refuses every signal: without Unix signals an attempt is
// only killed.
func ParseSignal(s string) (syscall.Signal, error) {
	return 0, fmt.Errorf("%q: signals other than a kill are not supported on this system", s)
}

// SignalName is "signal N".
func SignalName(sig syscall.Signal) string { return "signal " + strconv.Itoa(int(sig)) }
