package ui_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/heed-go/heed/clock/clocktest"
	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/queue/jobstore"
	"github.com/heed-go/heed/sqlitestore"
	"github.com/heed-go/heed/ui"
)

// TestBrowserOperations drives what an operator of a large queue does in
// headless Chromium: the dead-letter's causes over 3,500 dead jobs, a
// bulk retry of a selection from a filtered list, live updates of the
// jobs list that keep the filter and the scroll position and wait while
// a box is ticked, and a phone's width that keeps the state, dead and lag
// columns on screen.
func TestBrowserOperations(t *testing.T) {
	ctx, consoleErrors := browser(t)
	s, err := sqlitestore.Open(context.Background(), filepath.Join(t.TempDir(), "heed.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	now := time.Now().UTC()
	killMany(t, s, now.Add(-time.Hour), 1000, "charge", "billing", func(i int) string {
		return fmt.Sprintf("POST https://pay.example.com/charges/%d: 402 card declined", i)
	})
	killMany(t, s, now.Add(-time.Minute), 2500, "notify", "mail", func(i int) string {
		return fmt.Sprintf("smtp 550: mailbox user%d@example.com unavailable", i)
	})
	hour := now.Truncate(time.Hour)
	in, err := queue.NewJobInsert("report", nil, queue.EnqueueOptions{Queue: "cron", At: hour}, hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.JobInsertTick(context.Background(), in, hour); err != nil {
		t.Fatal(err)
	}
	if err := s.JobScheduleRecord(context.Background(), jobstore.PeriodicSchedule{Kind: "report", Queue: "cron", Schedule: "cron 0 * * * *",
		NextTick: hour.Add(time.Hour), SeenAt: hour}); err != nil {
		t.Fatal(err)
	}
	// The pages are rendered at now, the time the jobs and the schedule
	// above were made at, however long the run takes: the cron job's next
	// tick, the next full hour after now, is always ahead of the page's
	// time (with the wall clock it passed whenever the run crossed a full
	// hour). TestPeriodic shows a tick that passes as "overdue".
	clk := clocktest.New(now)
	e := newEnv(t, s, ui.Config{Token: token, Refresh: 100 * time.Millisecond, Clock: clk}, 60)
	u := e.srv.URL
	type css = chromedp.CSS
	run(t, ctx, "sign in",
		chromedp.Navigate(u+"/login?next=%2Fdead"),
		chromedp.SendKeys(css(`input[name=token]`), token),
		chromedp.Submit(css(`input[name=token]`)),
		chromedp.WaitVisible(css(`table.groups`)),
	)

	// The dead-letter: both causes, counted in full.
	counts := value(t, ctx, "group counts", chromedp.Evaluate[[]string](
		`Array.from(document.querySelectorAll("table.groups tbody tr")).map(r => r.cells[0].textContent.trim() + " " + r.cells[1].textContent)`))
	if len(counts) < 2 || counts[0] != "2,500 notify" || counts[1] != "1,000 charge" {
		t.Errorf("dead-letter groups: %q, want 2,500 notify and 1,000 charge first", counts)
	}
	screenshot(t, ctx, "ui-dead-causes.png")

	// A bulk retry of two ticked jobs of a filtered list: confirmed with
	// its count, back on the same filter.
	run(t, ctx, "filtered list",
		chromedp.Navigate(u+"/jobs?state=dead&kind=notify"),
		chromedp.WaitVisible(css(`input[name=id]`)),
		chromedp.Click(css(`tbody tr:nth-child(1) input[name=id]`)),
		chromedp.Click(css(`tbody tr:nth-child(2) input[name=id]`)),
		chromedp.Click(css(`button[value=retry]`)),
		chromedp.WaitVisible(css(`#confirm`)),
	)
	if h1 := value(t, ctx, "confirmation", chromedp.Text(css(`h1`))); h1 != "Retry 2 jobs?" {
		t.Errorf("bulk confirmation: %q", h1)
	}
	screenshot(t, ctx, "ui-bulk-confirm.png")
	run(t, ctx, "confirm", chromedp.Click(css(`#confirm`)), chromedp.WaitVisible(css(`.flash`)))
	flash := value(t, ctx, "flash", chromedp.Text(css(`.flash`)))
	state := value(t, ctx, "filter", chromedp.Evaluate[string](`document.querySelector("select[name=state]").value + " " + document.querySelector("input[name=kind]").value`))
	if flash != "Requeued 2 jobs." || state != "dead notify" {
		t.Errorf("after the bulk retry: flash %q, filter %q", flash, state)
	}
	if st, _ := e.client.Stats(context.Background()); st.Dead != 3508-2 {
		t.Errorf("after the bulk retry: %d dead, want %d", st.Dead, 3508-2)
	}

	// The periodic jobs: schedule, ticks, a link to the jobs.
	run(t, ctx, "periodic", chromedp.Navigate(u+"/periodic"), chromedp.WaitVisible(css(`tr[data-periodic="report/cron"]`)))
	row := value(t, ctx, "periodic row", chromedp.Text(css(`tr[data-periodic="report/cron"]`)))
	next := value(t, ctx, "periodic next", chromedp.Evaluate[string](`document.querySelector('tr[data-periodic="report/cron"]').cells[4].textContent`))
	if !strings.Contains(row, "cron 0 * * * *") || !strings.HasPrefix(next, "in ") || strings.Contains(row, "overdue") {
		t.Errorf("periodic page: row %q, next tick %q, want in …, not overdue", row, next)
	}
	screenshot(t, ctx, "ui-periodic.png")

	// Live updates of a long list: a new job shows without a reload, at
	// the same scroll position; not while a box is ticked.
	run(t, ctx, "long list",
		chromedp.Navigate(u+"/jobs?queue=bulk"),
		chromedp.WaitVisible(css(`table.jobs`)),
		chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 600)`),
	)
	y := value(t, ctx, "scroll", chromedp.Evaluate[float64](`window.scrollY`))
	fresh, _, err := e.client.Enqueue(context.Background(), "resize", map[string]int{"image": 9999}, queue.EnqueueOptions{Queue: "bulk"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](fmt.Sprintf(`document.querySelector('a[href="/jobs/%d"]') !== null`, fresh.ID),
		chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		t.Errorf("live update: job %d did not show on the open list: %v", fresh.ID, err)
	}
	if y2 := value(t, ctx, "scroll", chromedp.Evaluate[float64](`window.scrollY`)); y < 500 || y2 != y {
		t.Errorf("live update: scrolled from %v to %v", y, y2)
	}
	// The page's fetches are counted, and a refresh is run at once
	// through the listener that runs it when the tab comes back into view:
	// the same function the 5 s timer runs, without waiting for the timer.
	const refresh = `document.dispatchEvent(new Event("visibilitychange"))`
	run(t, ctx, "count fetches", chromedp.Evaluate[chromedp.Void](
		`window.heedFetches = 0; window.fetch = (f => function () { window.heedFetches++; return f.apply(this, arguments); })(window.fetch); 0`))
	// The click focuses the box: blurred, only its tick holds the list.
	run(t, ctx, "tick a box", chromedp.Click(css(`tbody tr:nth-child(3) input[name=id]`)),
		chromedp.Evaluate[chromedp.Void](`document.activeElement.blur()`))
	held, _, err := e.client.Enqueue(context.Background(), "resize", map[string]int{"image": 10000}, queue.EnqueueOptions{Queue: "bulk"})
	if err != nil {
		t.Fatal(err)
	}
	// A refresh with the box ticked fetches nothing (a timer's refresh
	// already under way when the box was ticked does not swap the list
	// either): the list is left as it is.
	fetched := value(t, ctx, "refresh", chromedp.Evaluate[int](refresh+`; window.heedFetches`))
	shown := value(t, ctx, "held", chromedp.Evaluate[bool](fmt.Sprintf(`document.querySelector('a[href="/jobs/%d"]') !== null`, held.ID)))
	ticked := value(t, ctx, "ticked", chromedp.Evaluate[int](`document.querySelectorAll("input[name=id]:checked").length`))
	if fetched != 0 || shown || ticked != 1 {
		t.Errorf("with a box ticked the list was refreshed (%d fetches, new job shown %v, %d boxes ticked)", fetched, shown, ticked)
	}
	// Unticked, the next refresh shows the job held back.
	run(t, ctx, "untick", chromedp.Click(css(`tbody tr:nth-child(3) input[name=id]`)),
		chromedp.Evaluate[chromedp.Void](`document.activeElement.blur(); `+refresh))
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](fmt.Sprintf(`document.querySelector('a[href="/jobs/%d"]') !== null`, held.ID),
		chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		t.Errorf("after the box was unticked, job %d did not show: %v", held.ID, err)
	}

	// A phone: the overview keeps each queue's running, dead and lag on
	// screen, the jobs list each job's state, without sideways scrolling.
	run(t, ctx, "phone",
		chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile),
		chromedp.Navigate(u+"/"),
		chromedp.WaitVisible(css(`tr[data-queue="mail"]`)),
	)
	onScreen := `(sel) => Array.from(document.querySelectorAll(sel)).every(c => { const r = c.getBoundingClientRect(); return r.width > 0 && r.right <= window.innerWidth + 1; })`
	for _, sel := range []string{`table.queues td.dead`, `table.queues td.lag`, `table.queues th[scope=row]`} {
		if !value(t, ctx, sel, chromedp.Evaluate[bool](`(`+onScreen+`)("`+sel+`")`)) {
			t.Errorf("phone overview: %s is not on screen", sel)
		}
	}
	if value(t, ctx, "overflow", chromedp.Evaluate[bool](`document.querySelector("table.queues").parentElement.scrollWidth > window.innerWidth + 1`)) {
		t.Errorf("phone overview: the queues table scrolls sideways")
	}
	screenshot(t, ctx, "ui-overview-phone.png")
	run(t, ctx, "phone jobs", chromedp.Navigate(u+"/jobs?state=dead"), chromedp.WaitVisible(css(`table.jobs`)))
	if !value(t, ctx, "state", chromedp.Evaluate[bool](`(`+onScreen+`)("table.jobs td.state")`)) {
		t.Errorf("phone jobs: the state column is not on screen")
	}
	screenshot(t, ctx, "ui-jobs-phone.png")
	run(t, ctx, "phone dead", chromedp.Navigate(u+"/dead"), chromedp.WaitVisible(css(`table.groups`)))
	if value(t, ctx, "overflow", chromedp.Evaluate[bool](`document.documentElement.scrollWidth > window.innerWidth + 1`)) {
		t.Errorf("phone dead-letter: the page scrolls sideways")
	}

	if errs := consoleErrors(); len(errs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
	}
}
