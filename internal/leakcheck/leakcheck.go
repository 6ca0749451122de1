// Package leakcheck is a test harness: it fails a test binary (Main) or one
// test (Check) that leaves goroutines behind. It does the little that heed's
// tests used go.uber.org/goleak for, with the standard library only, so that
// no module of heed needs a third-party module to test.
//
// A goroutine counts as left behind when it was not running when the check
// started, is not one the testing package or the runtime runs, and is still
// there after a few seconds of polling: a goroutine that is on its way out
// (a closed server's, a cancelled worker's) gets time to finish.
package leakcheck

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// patience is how long a check waits for goroutines to finish before it calls
// them leaked. Polling, not one sleep: a clean run returns at once. A
// variable for this package's own test.
var patience = 5 * time.Second

// Main runs the tests of m and then, if they passed, fails the binary when
// goroutines remain. Call it from TestMain: func TestMain(m *testing.M) {
// leakcheck.Main(m) }.
func Main(m *testing.M) { os.Exit(Run(m)) }

// Run is [Main] without the exit: it returns the code Main would exit
// with, for a TestMain that has work left after the tests (removing what
// they built), which then calls os.Exit with it.
func Run(m *testing.M) int {
	before := ids(goroutines())
	code := m.Run()
	if code == 0 {
		if leaked := wait(before); len(leaked) > 0 {
			fmt.Fprintf(os.Stderr, "leakcheck: %d goroutine(s) left behind after the tests:\n\n%s\n", len(leaked), strings.Join(leaked, "\n\n"))
			code = 1
		}
	}
	return code
}

// Check fails t when goroutines started after this call are still running
// once t and its cleanups registered after this call are done. Call it
// first in the test, so that it runs after the other cleanups.
func Check(t testing.TB) {
	t.Helper()
	before := ids(goroutines())
	t.Cleanup(func() {
		if leaked := wait(before); len(leaked) > 0 {
			t.Errorf("%d goroutine(s) left behind:\n\n%s", len(leaked), strings.Join(leaked, "\n\n"))
		}
	})
}

// wait polls until every goroutine is in before or is the runtime's or the
// testing package's, and returns the stacks of those that are not once its
// patience runs out.
func wait(before map[string]bool) []string {
	deadline := time.Now().Add(patience)
	pause := time.Millisecond
	for {
		var leaked []string
		for _, g := range goroutines() {
			if !before[g.id] && !background(g) {
				leaked = append(leaked, g.stack)
			}
		}
		if len(leaked) == 0 || time.Now().After(deadline) {
			return leaked
		}
		time.Sleep(pause)
		pause = min(2*pause, 100*time.Millisecond)
	}
}

// goroutine is one goroutine of a runtime.Stack dump.
type goroutine struct {
	id    string // "17"
	state string // "chan receive", "select, 2 minutes", "syscall"
	funcs []string
	stack string
}

// goroutines returns every goroutine but the caller's.
func goroutines() []goroutine {
	buf := make([]byte, 1<<16)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var gs []goroutine
	for i, block := range bytes.Split(buf, []byte("\n\n")) {
		if i == 0 {
			continue // the first is the caller's own
		}
		if g, ok := parse(string(block)); ok {
			gs = append(gs, g)
		}
	}
	return gs
}

// parse reads one goroutine's block: "goroutine 17 [chan receive]:" and
// then pairs of lines, a function call and its file:line.
func parse(block string) (goroutine, bool) {
	lines := strings.Split(strings.TrimSpace(block), "\n")
	head, ok := strings.CutPrefix(lines[0], "goroutine ")
	if !ok {
		return goroutine{}, false
	}
	id, rest, ok := strings.Cut(head, " [")
	if _, err := strconv.Atoi(id); !ok || err != nil {
		return goroutine{}, false
	}
	g := goroutine{id: id, state: strings.TrimSuffix(rest, "]:"), stack: block}
	for _, l := range lines[1:] {
		if strings.HasPrefix(l, "\t") {
			continue // file:line
		}
		if f, ok := strings.CutPrefix(l, "created by "); ok {
			l, _, _ = strings.Cut(f, " in goroutine ")
		}
		if i := strings.LastIndex(l, "("); i > 0 && strings.HasSuffix(l, ")") {
			l = l[:i] // the arguments
		}
		g.funcs = append(g.funcs, l)
	}
	return g, len(g.funcs) > 0
}

// background reports whether g is one the testing package or the runtime
// runs for its own purposes (the list goleak keeps).
func background(g goroutine) bool {
	switch g.funcs[0] {
	case "testing.RunTests", "testing.(*T).Run", "testing.(*T).Parallel", "testing.runFuzzing", "testing.runFuzzTests":
		return strings.HasPrefix(g.state, "chan receive") // a test runner waiting for its tests
	case "os/signal.signal_recv", "os/signal.loop":
		return true // started by importing os/signal
	}
	if slices.Contains(g.funcs, "runtime.ensureSigM") {
		return true // started by signal.Notify
	}
	if slices.Contains(g.funcs, "runtime.goexit") && strings.HasPrefix(g.state, "syscall") {
		return true // cgo's background threads
	}
	return slices.Contains(g.funcs, "runtime.ReadTrace") // go test -trace
}

func ids(gs []goroutine) map[string]bool {
	m := make(map[string]bool, len(gs))
	for _, g := range gs {
		m[g.id] = true
	}
	return m
}
