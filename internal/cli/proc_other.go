//go:build !unix

package cli

import (
	"os"
	"os/exec"
)

// ownProcessGroup leaves cmd as it is: without Unix process groups, a
// cancelled attempt kills only the command's own process.
func ownProcessGroup(cmd *exec.Cmd) {}

// signalOf reports no signal: only Unix ends processes with signals.
func signalOf(ps *os.ProcessState) (int, bool) { return 0, false }
