package ui_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/queue/jobstore"
	"github.com/heed-go/heed/sqlitestore"
	"github.com/heed-go/heed/ui"
)

// chromium returns the path of a Chromium (or Chrome) binary:
// $HEED_CHROMIUM, else the first of the usual names on $PATH.
func chromium(t *testing.T) string {
	if p := os.Getenv("HEED_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no Chromium: the browser tests need chromium (apt-get install chromium) or $HEED_CHROMIUM; skipped")
	return ""
}

// browser starts a headless Chromium for the test, which it closes at the
// end, and collects the page's console errors, uncaught exceptions and
// browser log errors (Content-Security-Policy violations among them).
func browser(t *testing.T) (context.Context, func() []string) {
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(t)),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.WindowSize(1280, 860),
	)
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancelB := chromedp.NewContext(actx)
	ctx, cancelC := context.WithTimeout(bctx, 2*time.Minute)
	var (
		mu   sync.Mutex
		errs []string
		wg   sync.WaitGroup
	)
	messages := chromedp.Console(ctx)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				mu.Lock()
				errs = append(errs, m.String()+" ("+m.URL+")")
				mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		cancelC()
		cancelB()
		cancelA()
		wg.Wait()
	})
	return ctx, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), errs...)
	}
}

// traffic fills the last hour with finished jobs, so that the overview's
// charts have something to draw.
func traffic(t *testing.T, s jobstore.Store, now time.Time) {
	start := now.Add(-58 * time.Minute)
	for i := range 240 {
		base := start.Add(time.Duration(i) * 14 * time.Second)
		q := []string{"mail", "billing", "reports"}[i%3]
		kind := map[string]string{"mail": "email", "billing": "charge", "reports": "report"}[q]
		var steps []step
		at := time.Duration(0)
		// Bursts of trouble around minute 20 and 45.
		m := int(base.Sub(start) / time.Minute)
		retries := 0
		if (m > 18 && m < 24) || (m > 42 && m < 46) || i%7 == 0 {
			retries = 1 + i%3
		}
		for r := range retries {
			d := time.Duration(1<<r) * time.Second
			steps = append(steps, step{at: at, took: 40 * time.Millisecond, outcome: "transient", action: "retry", reason: "transient", delay: d,
				err: fmt.Sprintf("dial tcp 10.1.0.%d:443: connection reset by peer", i%9)})
			at += 40*time.Millisecond + d
		}
		last := step{at: at, took: 60 * time.Millisecond, outcome: "ok", action: "done"}
		if m > 42 && m < 46 && q == "billing" {
			last = step{at: at, took: 60 * time.Millisecond, outcome: "transient", action: "give_up", reason: "attempts",
				err: fmt.Sprintf("POST https://pay.example.com/charges/%d: 503 Service Unavailable", 9000+i)}
		}
		steps = append(steps, last)
		script(t, s, base, kind, q, fmt.Sprintf(`{"n":%d}`, i), queue.JobPolicy{}, steps...)
	}
}

// screenshot saves a full-page PNG of the current page under docs/ when
// $HEED_UI_SCREENSHOTS is set, and checks that one was taken.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Fatalf("screenshot %s: not a PNG", name)
	}
	if os.Getenv("HEED_UI_SCREENSHOTS") != "" {
		if err := os.WriteFile(filepath.Join("..", "docs", name), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// run runs actions that return nothing, failing the test with what.
func run(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// value runs one action and returns its value.
func value[T any](t *testing.T, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// TestBrowser drives the dashboard in headless Chromium: sign in, the
// overview, a dead job's timeline, requeueing a dead-letter group, live
// updates, an action without the token refused, and no console error on
// any page (scripts run under the strict Content-Security-Policy).
func TestBrowser(t *testing.T) {
	ctx, consoleErrors := browser(t)
	s, err := sqlitestore.Open(context.Background(), filepath.Join(t.TempDir(), "heed.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	traffic(t, s, time.Now().UTC())
	e := newEnv(t, s, ui.Config{Token: token, Refresh: 100 * time.Millisecond}, 4)
	u := e.srv.URL
	type css = chromedp.CSS

	// Sign in.
	run(t, ctx, "sign in",
		chromedp.Navigate(u+"/login"),
		chromedp.SendKeys(css(`input[name=token]`), token),
		chromedp.Submit(css(`input[name=token]`)),
		chromedp.WaitVisible(css(`tr[data-queue="mail"]`)),
	)
	if title := value(t, ctx, "title", chromedp.Title()); !strings.HasPrefix(title, "Overview") {
		t.Errorf("after sign-in: title %q", title)
	}

	// The overview: counts and charts.
	dead := value(t, ctx, "dead count", chromedp.Text(css(`#dead-size .n`)))
	lines := value(t, ctx, "charts", chromedp.Evaluate[int](`document.querySelectorAll("td.chart svg rect").length`))
	st, _ := e.client.Stats(context.Background())
	if dead != fmt.Sprint(st.Dead) || lines == 0 {
		t.Errorf("overview: dead %q (store: %d), %d chart lines", dead, st.Dead, lines)
	}
	screenshot(t, ctx, "ui-overview.png")

	// A queue's scheduled count links to its scheduled jobs.
	later, _, err := e.client.Enqueue(context.Background(), "report", nil, queue.EnqueueOptions{Queue: "later", In: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	run(t, ctx, "scheduled jobs",
		chromedp.Navigate(u+"/"),
		chromedp.Click(css(`tr[data-queue="later"] a[href*="state=scheduled"]`)),
		chromedp.WaitVisible(css(fmt.Sprintf(`a[href="/jobs/%d"]`, later.ID))),
	)
	if sel := value(t, ctx, "state filter", chromedp.Evaluate[string](`document.querySelector("select[name=state]").value`)); sel != "scheduled" {
		t.Errorf("the scheduled jobs' page filters by %q", sel)
	}

	// A dead job's decision timeline, opened from the jobs list.
	run(t, ctx, "open a dead job",
		chromedp.Navigate(u+"/jobs?state=dead&kind=charge&q=429"),
		chromedp.Click(css(fmt.Sprintf(`a[href="/jobs/%d"]`, e.sd.budget.ID))),
		chromedp.WaitVisible(css(`table.attempts`)),
	)
	rows := value(t, ctx, "timeline rows", chromedp.Evaluate[int](`document.querySelectorAll("table.attempts tbody tr").length`))
	why := value(t, ctx, "last row", chromedp.Text(css(`table.attempts tbody tr:last-child`)))
	bars := value(t, ctx, "bars", chromedp.Evaluate[int](`document.querySelectorAll("figure.timeline svg.tl-wide rect.bar").length`))
	if rows != 5 || bars != 5 || !strings.Contains(why, "give up") || !strings.Contains(why, "no retry fits in the time budget left") {
		t.Errorf("timeline: %d rows, %d bars, last %q", rows, bars, why)
	}
	screenshot(t, ctx, "ui-timeline.png")

	// Requeue a dead-letter group: the confirmation states how many, and
	// the dead-letter's count drops by as many.
	gid := ui.GroupID("email", "attempts", "dial tcp <addr>: i/o timeout")
	run(t, ctx, "dead-letter", chromedp.Navigate(u+"/dead"), chromedp.WaitVisible(css(`tr[data-group="`+gid+`"]`)))
	screenshot(t, ctx, "ui-dead-letter.png")
	run(t, ctx, "requeue a group",
		chromedp.Click(css(`tr[data-group="`+gid+`"] button[value=requeue]`)),
		chromedp.WaitVisible(css(`#confirm`)),
	)
	confirm := value(t, ctx, "confirmation", chromedp.Text(css(`h1`)))
	run(t, ctx, "confirm", chromedp.Click(css(`#confirm`)), chromedp.WaitVisible(css(`.flash`)))
	flash := value(t, ctx, "flash", chromedp.Text(css(`.flash`)))
	run(t, ctx, "overview", chromedp.Navigate(u+"/"), chromedp.WaitVisible(css(`#dead-size`)))
	after := value(t, ctx, "dead count", chromedp.Text(css(`#dead-size .n`)))
	if confirm != "Requeue 5 dead jobs?" || flash != "Requeued 5 jobs." || after != fmt.Sprint(st.Dead-5) {
		t.Errorf("requeue a group: confirm %q, flash %q, dead %s -> %s", confirm, flash, dead, after)
	}

	// Pause a queue from the overview: the queue says so.
	run(t, ctx, "pause",
		chromedp.Click(css(`tr[data-queue="reports"] button`)),
		chromedp.WaitVisible(css(`tr[data-queue="reports"] .badge.paused`)),
	)
	if flash := value(t, ctx, "flash", chromedp.Text(css(`.flash`))); flash != `Queue "reports" paused.` {
		t.Errorf("pause: flash %q", flash)
	}
	if p, _ := e.client.Paused(context.Background()); len(p) != 1 || p[0].Queue != "reports" {
		t.Errorf("paused queues %+v, want reports", p)
	}

	// Live updates: a change in the store shows on the open overview
	// without a reload.
	n, err := e.client.DeleteDead(context.Background(), queue.DeadFilter{IDs: []int64{e.sd.permanent[0].ID}})
	if err != nil || n != 1 {
		t.Fatalf("DeleteDead: %d, %v", n, err)
	}
	want := fmt.Sprint(st.Dead - 6)
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelector("#dead-size .n").textContent === "`+want+`"`,
		chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		t.Errorf("live update: the overview did not show %s dead jobs: %v", want, err)
	}

	// Signed out, an action is refused by the server, not only by the
	// missing button.
	run(t, ctx, "sign out", chromedp.Click(css(`header button.link`)), chromedp.WaitVisible(css(`a[href^="/login"]`)))
	status := value(t, ctx, "POST without the token", chromedp.Evaluate[int](
		fmt.Sprintf(`fetch("/jobs/%d/requeue", {method: "POST"}).then(r => r.status)`, e.sd.permanent[1].ID), chromedp.EvalAwaitPromise))
	if status != 403 {
		t.Errorf("requeue without the token: status %d, want 403", status)
	}
	if j, _ := e.client.Job(context.Background(), e.sd.permanent[1].ID); j.State != queue.StateDead {
		t.Errorf("a refused requeue changed job %d: %s", j.ID, j.State)
	}

	// Dark theme and a phone's width: the same page, no sideways scroll.
	if _, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
		Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}}); err != nil {
		t.Fatal(err)
	}
	run(t, ctx, "phone",
		chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile),
		chromedp.Navigate(fmt.Sprintf("%s/jobs/%d", u, e.sd.budget.ID)),
		chromedp.WaitVisible(css(`table.attempts`)),
	)
	screenshot(t, ctx, "ui-timeline-phone-dark.png")
	if value(t, ctx, "overflow", chromedp.Evaluate[bool](`document.documentElement.scrollWidth > window.innerWidth + 1`)) {
		t.Errorf("on a phone's width the job page scrolls sideways (only its tables should)")
	}

	var errs []string
	for _, m := range consoleErrors() {
		// The refused request above is logged by the browser: expected.
		if !strings.Contains(m, "status of 403") || !strings.Contains(m, fmt.Sprintf("/jobs/%d/requeue", e.sd.permanent[1].ID)) {
			errs = append(errs, m)
		}
	}
	if len(errs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
	}
}
