//go:build unix

package cmdrun

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// groupStop is how an attempt's process group is stopped when its context
// ends: SIGTERM to the group, then SIGKILL after killAfter, as GNU timeout
// -k does.
type groupStop struct {
	cmd       *exec.Cmd
	killAfter time.Duration
	tty       int // the terminal given to the group as its foreground, or -1

	mu         sync.Mutex
	terminated bool        // SIGTERM sent
	killed     bool        // SIGKILL sent by the timer
	timer      *time.Timer // of the SIGKILL
}

// ownProcessGroup makes cmd the leader of a new process group and makes the
// cancellation of its context (the attempt's timeout, or heed ending) stop
// the whole group: SIGTERM, then SIGKILL after killAfter. With tty >= 0 (a
// terminal heed has in the foreground) the group gets the terminal while it
// runs, so that COMMAND can read it and gets its Ctrl-C. Call done after
// cmd.Wait.
func ownProcessGroup(cmd *exec.Cmd, killAfter time.Duration, tty int, sig syscall.Signal) *groupStop {
	g := &groupStop{cmd: cmd, killAfter: killAfter, tty: tty}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if tty >= 0 {
		cmd.SysProcAttr.Foreground = true
		cmd.SysProcAttr.Ctty = tty
	}
	cmd.Cancel = func() error {
		// The group's id is the leader's pid.
		pid := cmd.Process.Pid
		err := syscall.Kill(-pid, sig)
		if errors.Is(err, syscall.ESRCH) {
			return os.ErrProcessDone
		}
		g.mu.Lock()
		g.terminated = true
		g.timer = time.AfterFunc(killAfter, func() {
			g.mu.Lock()
			g.killed = true
			g.mu.Unlock()
			syscall.Kill(-pid, syscall.SIGKILL)
		})
		g.mu.Unlock()
		return err
	}
	// Past the SIGKILL, exec's own delay: for output pipes that a process
	// that escaped the group keeps open.
	cmd.WaitDelay = killAfter + waitDelay
	return g
}

// done ends what stopping the group started, after cmd.Wait: it cancels
// the pending SIGKILL (the leader is gone), kills what is left of a group
// that was told to stop, and takes the terminal back. It reports whether
// SIGTERM and SIGKILL were sent.
func (g *groupStop) done() (terminated, killed bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.timer != nil {
		g.timer.Stop()
	}
	if g.terminated && g.cmd.Process != nil {
		syscall.Kill(-g.cmd.Process.Pid, syscall.SIGKILL) // stragglers of the group
	}
	if g.tty >= 0 && g.cmd.Process != nil {
		takeTerminal(g.tty)
	}
	return g.terminated, g.killed
}

// takeTerminal makes heed's process group the foreground of tty again. A
// background group that sets it is sent SIGTTOU unless it ignores it, so
// heed ignores it for the call (and not while COMMAND runs: an ignored
// signal stays ignored across exec).
func takeTerminal(tty int) {
	signal.Ignore(syscall.SIGTTOU)
	defer signal.Reset(syscall.SIGTTOU)
	unix.IoctlSetPointerInt(tty, unix.TIOCSPGRP, syscall.Getpgrp())
}

// foregroundTTY returns f's descriptor when f is a terminal whose
// foreground process group is heed's own (heed was not started in the
// background), else -1.
func foregroundTTY(f *os.File) int {
	fd := int(f.Fd())
	pgrp, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP)
	if err != nil || pgrp != syscall.Getpgrp() {
		return -1
	}
	return fd
}

// signalOf returns the number of the signal that ended a process.
func signalOf(ps *os.ProcessState) (int, bool) {
	ws, ok := ps.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() {
		return 0, false
	}
	return int(ws.Signal()), true
}

// interruptSignal reports whether sig is one the terminal sends on Ctrl-C
// or Ctrl-\.
func interruptSignal(sig int) bool {
	return sig == int(syscall.SIGINT) || sig == int(syscall.SIGQUIT)
}

// signals are the names ParseSignal takes, as GNU timeout's -s does.
var signals = map[string]syscall.Signal{
	"HUP": syscall.SIGHUP, "INT": syscall.SIGINT, "QUIT": syscall.SIGQUIT, "KILL": syscall.SIGKILL,
	"USR1": syscall.SIGUSR1, "USR2": syscall.SIGUSR2, "ALRM": syscall.SIGALRM, "TERM": syscall.SIGTERM,
}

// ParseSignal returns the signal named s: a name with or without "SIG"
// (TERM, SIGINT, kill) or a number (15).
func ParseSignal(s string) (syscall.Signal, error) {
	if n, err := strconv.Atoi(s); err == nil && n > 0 && n < 65 {
		return syscall.Signal(n), nil
	}
	if sig, ok := signals[strings.TrimPrefix(strings.ToUpper(s), "SIG")]; ok {
		return sig, nil
	}
	return 0, fmt.Errorf("%q is not a signal: a name (TERM, INT, HUP, KILL, QUIT, USR1, USR2, ALRM) or a number", s)
}

// SignalName is sig as "SIGTERM", or "signal N".
func SignalName(sig syscall.Signal) string {
	for n, s := range signals {
		if s == sig {
			return "SIG" + n
		}
	}
	return "signal " + strconv.Itoa(int(sig))
}
