package corecheck

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The core module's go.mod requires nothing: a user's module graph holds
// every requirement of the go.mod of each module it requires, test-only
// ones included, so one require line here would be in every user's.
func TestCoreGoModRequiresNothing(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		if f := strings.Fields(line); len(f) > 0 && (f[0] == "require" || f[0] == "replace" || f[0] == "toolchain" || f[0] == "tool") {
			t.Errorf("go.mod of the core: %q; the core module must require nothing", strings.TrimSpace(line))
		}
	}
}

// A program that imports retry and retryhttp (the measure) has
// heed and nothing else in its module graph: go list -m all in a module of
// its own, outside the workspace, with heed replaced by this checkout.
func TestRetryProgramModuleGraph(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	gocmd, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("the go command is not on PATH, so the module graph cannot be listed: %v", err)
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/user\n\ngo 1.26.0\n\n"+
		"require github.com/heed-go/heed v0.0.0-00010101000000-000000000000\n\n"+
		"replace github.com/heed-go/heed => "+root+"\n")
	// Blank imports: the graph depends on what is imported, not on names
	// (which may change).
	write("main.go", `package main

import (
	_ "github.com/heed-go/heed/retry"
	_ "github.com/heed-go/heed/retryhttp"
)

func main() {}
`)
	run := func(args ...string) string {
		cmd := exec.Command(gocmd, args...)
		cmd.Dir = dir
		// Outside any workspace and free to write go.sum: a user's module.
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "GOPROXY=off")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
		}
		return string(out)
	}
	run("build", "-o", os.DevNull, ".")
	var mods []string
	for sc := bufio.NewScanner(strings.NewReader(run("list", "-m", "all"))); sc.Scan(); {
		mods = append(mods, sc.Text())
	}
	want := []string{"example.com/user", "github.com/heed-go/heed v0.0.0-00010101000000-000000000000 => " + root}
	if strings.Join(mods, "\n") != strings.Join(want, "\n") {
		t.Errorf("go list -m all of a program importing retry and retryhttp:\n%s\nwant only:\n%s", strings.Join(mods, "\n"), strings.Join(want, "\n"))
	}
}
