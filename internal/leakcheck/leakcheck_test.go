package leakcheck

import (
	"strings"
	"testing"
	"time"
)

func TestWaitFindsALeakAndNotTheRest(t *testing.T) {
	defer func(p time.Duration) { patience = p }(patience)
	patience = 50 * time.Millisecond

	before := ids(goroutines())
	stop := make(chan struct{})
	started := make(chan struct{})
	go leaky(started, stop)
	<-started
	leaked := wait(before)
	if len(leaked) != 1 || !strings.Contains(leaked[0], "leakcheck.leaky") {
		t.Errorf("leaked = %q, want the one goroutine in leaky", leaked)
	}

	close(stop) // it ends: waiting sees it go
	patience = 5 * time.Second
	if leaked := wait(before); len(leaked) != 0 {
		t.Errorf("after the goroutine ended: %q", leaked)
	}
}

func leaky(started, stop chan struct{}) {
	close(started)
	<-stop
}

func TestParse(t *testing.T) {
	block := "goroutine 17 [chan receive, 2 minutes]:\n" +
		"testing.(*T).Run(0xc000003a00, {0x5b1d3e, 0x4}, 0x5c4f18)\n" +
		"\t/usr/local/go/src/testing/testing.go:1750 +0x3ab\n" +
		"created by testing.runTests in goroutine 1\n" +
		"\t/usr/local/go/src/testing/testing.go:2100 +0x44"
	g, ok := parse(block)
	if !ok || g.id != "17" || g.state != "chan receive, 2 minutes" {
		t.Fatalf("parse = %+v, %v", g, ok)
	}
	if want := []string{"testing.(*T).Run", "testing.runTests"}; strings.Join(g.funcs, ",") != strings.Join(want, ",") {
		t.Errorf("funcs = %q, want %q", g.funcs, want)
	}
	if !background(g) {
		t.Error("a test runner waiting for its test counts as a leak")
	}
	if _, ok := parse("not a goroutine"); ok {
		t.Error("parsed a block that is not a goroutine")
	}
}

func TestCheckPassesACleanTest(t *testing.T) {
	Check(t)
	done := make(chan struct{})
	go func() { close(done) }()
	<-done
}
