package storetest

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/queue/jobstore"
	"github.com/heed-go/heed/retry"
)

// RunInspector runs the conformance suite of jobstore.Inspector, the
// dashboard's questions, each test in its own subtest with a fresh, empty,
// migrated store from open (which must implement jobstore.Inspector). Like
// Run, it closes each store when its test ends.
func RunInspector(t *testing.T, open func(t *testing.T) jobstore.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s jobstore.Store, in jobstore.Inspector)
	}{
		{"JobSearch", testJobSearch},
		{"QueueLags", testQueueLags},
		{"Throughput", testThroughput},
		{"DeadCauses", testDeadCauses},
		{"DeadCauseCounts", testDeadCauseCounts},
	}
	for _, tt := range tests {
		runOne(t, tt.name, open, func(t *testing.T, s jobstore.Store) {
			in, ok := s.(jobstore.Inspector)
			if !ok {
				t.Fatalf("%T does not implement jobstore.Inspector", s)
			}
			tt.fn(t, s, in)
		})
	}
}

// insertArgs inserts a job of kind in queue q with args, available at
// t0+in.
func insertArgs(t *testing.T, s jobstore.Store, kind, q, args string, in time.Duration) *jobstore.Job {
	t.Helper()
	ji, err := queue.NewJobInsert(kind, json.RawMessage(args), queue.EnqueueOptions{Queue: q, In: in}, t0)
	if err != nil {
		t.Fatalf("NewJobInsert: %v", err)
	}
	j, _, err := s.JobInsert(ctx, ji)
	if err != nil {
		t.Fatalf("JobInsert: %v", err)
	}
	return j
}

// attempt claims the due job id of queue q at start and ends its attempt
// at fin with action ("done", "retry", "give_up"), error text errText, and
// for a retry a delay of one minute.
func attempt(t *testing.T, s jobstore.Store, id int64, q string, start, fin time.Time, action, errText string) {
	t.Helper()
	c := claimOne(t, s, q, start)
	if c.ID != id {
		t.Fatalf("claimed job %d, want %d", c.ID, id)
	}
	tr := jobstore.Transition{ID: c.ID, LeaseToken: c.LeaseToken, Attempt: c.Attempt,
		Entry: jobstore.Attempt{Attempt: c.Attempt, Worker: "w1", StartedAt: start, FinishedAt: fin,
			Outcome: "transient", Error: errText, Action: action, Reason: "transient"}}
	switch action {
	case "done":
		tr.State, tr.FinishedAt, tr.Entry.Outcome, tr.Entry.Reason = jobstore.StateSucceeded, fin, retry.OutcomeSuccess.Key(), ""
	case "retry":
		tr.State, tr.AvailableAt, tr.Entry.Delay = jobstore.StateAvailable, fin.Add(time.Minute), time.Minute
	default:
		tr.State, tr.FinishedAt, tr.DeadReason, tr.Entry.Reason = jobstore.StateDead, fin, "attempts", "attempts"
	}
	if err := s.JobTransition(ctx, tr); err != nil {
		t.Fatalf("JobTransition(%s): %v", action, err)
	}
}

func testJobSearch(t *testing.T, s jobstore.Store, in jobstore.Inspector) {
	a := insertArgs(t, s, "email", "mail", `{"to":"a@example.com","api_key":"Sesame-42"}`, 0)
	attempt(t, s, a.ID, "mail", t0, t0.Add(time.Second), "retry", "dial tcp 10.0.0.1:25: Connection RESET by peer")
	b := insertArgs(t, s, "email", "mail", `{"to":"b@example.com"}`, 0)
	c := insertArgs(t, s, "sms", "mail", `{"to":"+15550100","note":"reset"}`, 0)
	search := func(f jobstore.JobFilter, text string, inArgs bool) []int64 {
		t.Helper()
		jobs, err := in.JobSearch(ctx, jobstore.SearchParams{Filter: f, Text: text, InArgs: inArgs})
		if err != nil {
			t.Fatalf("JobSearch(%+v, %q, %v): %v", f, text, inArgs, err)
		}
		return ids(jobs)
	}
	for _, tc := range []struct {
		f      jobstore.JobFilter
		text   string
		inArgs bool
		want   []int64
	}{
		{jobstore.JobFilter{}, "", false, []int64{a.ID, b.ID, c.ID}},
		{jobstore.JobFilter{}, "connection reset", false, []int64{a.ID}}, // any ASCII case, in errors
		{jobstore.JobFilter{}, "reset", true, []int64{a.ID, c.ID}},       // errors and args
		{jobstore.JobFilter{}, "sesame", false, nil},                     // args only when asked
		{jobstore.JobFilter{}, "sesame", true, []int64{a.ID}},
		{jobstore.JobFilter{}, "example.com", true, []int64{a.ID, b.ID}},
		{jobstore.JobFilter{Newest: true}, "example.com", true, []int64{b.ID, a.ID}},
		{jobstore.JobFilter{Newest: true, Limit: 1}, "example.com", true, []int64{b.ID}},
		{jobstore.JobFilter{Kind: "email", AfterID: a.ID}, "", false, []int64{b.ID}},
		{jobstore.JobFilter{Kind: "sms"}, "example.com", true, nil},
		{jobstore.JobFilter{}, "50%_", true, nil}, // no wildcards
		{jobstore.JobFilter{}, "'); --", true, nil},
	} {
		if got := search(tc.f, tc.text, tc.inArgs); !slices.Equal(got, tc.want) {
			t.Errorf("JobSearch(%+v, %q, inArgs %v) = %v, want %v", tc.f, tc.text, tc.inArgs, got, tc.want)
		}
	}
	if _, err := in.JobSearch(ctx, jobstore.SearchParams{Filter: jobstore.JobFilter{Limit: -1}, Text: "", InArgs: false}); err == nil {
		t.Errorf("JobSearch with Limit -1: no error")
	}
}

func testQueueLags(t *testing.T, s jobstore.Store, in jobstore.Inspector) {
	insertArgs(t, s, "k", "a", `{}`, 0)
	insertArgs(t, s, "k", "a", `{}`, 10*time.Second)
	insertArgs(t, s, "k", "b", `{}`, 20*time.Second)
	insertArgs(t, s, "k", "c", `{}`, time.Hour) // not due
	running := insertArgs(t, s, "k", "d", `{}`, 0)
	claimOne(t, s, "d", t0) // running: not waiting
	lags, err := in.QueueLags(ctx, t0.Add(30*time.Second))
	if err != nil {
		t.Fatalf("QueueLags: %v", err)
	}
	want := map[string]time.Time{"a": t0, "b": t0.Add(20 * time.Second)}
	if len(lags) != len(want) || !lags["a"].Equal(want["a"]) || !lags["b"].Equal(want["b"]) {
		t.Errorf("QueueLags = %v, want %v (job %d is running)", lags, want, running.ID)
	}
	if lags["a"].Location() != time.UTC {
		t.Errorf("QueueLags: time in %v, want UTC", lags["a"].Location())
	}
}

func testThroughput(t *testing.T, s jobstore.Store, in jobstore.Inspector) {
	m0 := t0.Truncate(time.Minute).Add(10 * time.Minute)                // the window starts here
	at := func(d time.Duration) time.Duration { return m0.Sub(t0) + d } // due at m0+d
	// Before the window: counted nowhere.
	old := insertArgs(t, s, "k", "a", `{}`, 0)
	attempt(t, s, old.ID, "a", t0, t0.Add(time.Second), "done", "")
	// Retried twice in the window (minutes 0 and 2), then succeeded in
	// minute 3.
	r := insertArgs(t, s, "k", "a", `{}`, at(0))
	attempt(t, s, r.ID, "a", m0.Add(time.Second), m0.Add(2*time.Second), "retry", "boom")
	attempt(t, s, r.ID, "a", m0.Add(2*time.Minute), m0.Add(2*time.Minute+time.Second), "retry", "boom")
	attempt(t, s, r.ID, "a", m0.Add(3*time.Minute+time.Second), m0.Add(3*time.Minute+2*time.Second), "done", "")
	// Started before the window, retried inside it, and waiting: counted.
	w := insertArgs(t, s, "k", "b", `{}`, 0)
	attempt(t, s, w.ID, "b", m0.Add(-time.Second), m0.Add(time.Second), "retry", "slow")
	// Died in minute 2 of queue b, its entry stored as before actions
	// had keys ("give up").
	d := insertArgs(t, s, "k", "b", `{}`, at(time.Minute))
	attempt(t, s, d.ID, "b", m0.Add(2*time.Minute), m0.Add(2*time.Minute+time.Millisecond), "give up", "bad")
	// Running, after a retry in minute 4.
	run := insertArgs(t, s, "k", "c", `{}`, at(4*time.Minute))
	attempt(t, s, run.ID, "c", m0.Add(4*time.Minute), m0.Add(4*time.Minute+time.Second), "retry", "x")
	claimOne(t, s, "c", m0.Add(5*time.Minute+time.Second))
	// After the window's end (minute 6): not counted.
	late := insertArgs(t, s, "k", "a", `{}`, at(6*time.Minute))
	attempt(t, s, late.ID, "a", m0.Add(6*time.Minute), m0.Add(6*time.Minute+time.Second), "done", "")

	got, err := in.Throughput(ctx, m0, m0.Add(6*time.Minute))
	if err != nil {
		t.Fatalf("Throughput: %v", err)
	}
	key := func(x jobstore.Throughput) string {
		return x.Queue + " " + x.Minute.Format("15:04:05") + " " + x.Action + " " + string(rune('0'+x.Count))
	}
	var keys []string
	for _, x := range got {
		if x.Minute.Location() != time.UTC {
			t.Errorf("Throughput: minute in %v, want UTC", x.Minute.Location())
		}
		keys = append(keys, key(x))
	}
	slices.Sort(keys)
	m := func(i int) time.Time { return m0.Add(time.Duration(i) * time.Minute) }
	var want []string
	for _, x := range []struct {
		q      string
		minute int
		action string
	}{
		{"a", 0, "retry"}, {"a", 2, "retry"}, {"a", 3, "done"},
		{"b", 0, "retry"}, {"b", 2, "give_up"}, {"c", 4, "retry"},
	} {
		want = append(want, key(jobstore.Throughput{Queue: x.q, Minute: m(x.minute), Action: x.action, Count: 1}))
	}
	slices.Sort(want)
	if !slices.Equal(keys, want) {
		t.Errorf("Throughput:\n got %s\nwant %s", strings.Join(keys, "; "), strings.Join(want, "; "))
	}
}

func testDeadCauses(t *testing.T, s jobstore.Store, in jobstore.Inspector) {
	a := insertArgs(t, s, "email", "mail", `{"secret":"x"}`, 0)
	attempt(t, s, a.ID, "mail", t0, t0.Add(time.Second), "retry", "first error")
	attempt(t, s, a.ID, "mail", t0.Add(2*time.Minute), t0.Add(2*time.Minute+time.Second), "give_up", "last error")
	b := insertArgs(t, s, "sms", "mail", `{}`, 0)
	attempt(t, s, b.ID, "mail", t0, t0.Add(3*time.Second), "give_up", "")
	insertArgs(t, s, "email", "mail", `{}`, 0) // alive
	got, err := in.DeadCauses(ctx, jobstore.JobFilter{Newest: true})
	if err != nil {
		t.Fatalf("DeadCauses: %v", err)
	}
	// Newest death first: a died after b, although b has the higher ID.
	want := []jobstore.DeadCause{
		{ID: a.ID, Kind: "email", Queue: "mail", Reason: "attempts", FinishedAt: t0.Add(2*time.Minute + time.Second), Error: "last error"},
		{ID: b.ID, Kind: "sms", Queue: "mail", Reason: "attempts", FinishedAt: t0.Add(3 * time.Second)},
	}
	if len(got) != len(want) {
		t.Fatalf("DeadCauses = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] && !(got[i].FinishedAt.Equal(want[i].FinishedAt) && withTime(got[i], want[i].FinishedAt) == want[i]) {
			t.Errorf("DeadCauses[%d] = %+v, want %+v", i, got[i], want[i])
		}
	}
	got, err = in.DeadCauses(ctx, jobstore.JobFilter{Kind: "email", Limit: 5})
	if err != nil || len(got) != 1 || got[0].ID != a.ID {
		t.Errorf("DeadCauses(kind email) = %+v, %v; want job %d", got, err, a.ID)
	}
	got, err = in.DeadCauses(ctx, jobstore.JobFilter{Limit: 1})
	if err != nil || len(got) != 1 || got[0].ID != b.ID {
		t.Errorf("DeadCauses(oldest, limit 1) = %+v, %v; want job %d", got, err, b.ID)
	}
}

func withTime(c jobstore.DeadCause, at time.Time) jobstore.DeadCause { c.FinishedAt = at; return c }

// causeOf is what the stores compute as a dead job's cause from its last
// error text: its first 300 characters, every digit read as 0.
func causeOf(text string) string {
	r := []rune(text)
	r = r[:min(len(r), 300)]
	for i, c := range r {
		if '1' <= c && c <= '9' {
			r[i] = '0'
		}
	}
	return string(r)
}

func testDeadCauseCounts(t *testing.T, s jobstore.Store, in jobstore.Inspector) {
	refused := func(i int) string { return fmt.Sprintf("dial tcp 10.0.0.%d:5432: connection refused", i+1) }
	var a []*jobstore.Job
	for i := range 3 { // one cause: the texts differ in their digits only
		j := insertArgs(t, s, "email", "mail", `{}`, 0)
		attempt(t, s, j.ID, "mail", t0.Add(time.Duration(i)*time.Second), t0.Add(time.Duration(i)*time.Second+time.Millisecond), "give_up", refused(i))
		a = append(a, j)
	}
	long := strings.Repeat("é", 299) + "123 and more"
	b := insertArgs(t, s, "email", "bulk", `{}`, 0)
	attempt(t, s, b.ID, "bulk", t0.Add(time.Minute), t0.Add(time.Minute), "give_up", long)
	c := insertArgs(t, s, "email", "bulk", `{}`, 0) // retried, alive: not counted
	attempt(t, s, c.ID, "bulk", t0.Add(time.Minute), t0.Add(time.Minute), "retry", refused(7))
	d := insertArgs(t, s, "email", "mail", `{}`, 0) // the same text in another queue
	attempt(t, s, d.ID, "mail", t0.Add(time.Hour), t0.Add(time.Hour), "give_up", "")

	got, err := in.DeadCauseCounts(ctx, 0)
	if err != nil {
		t.Fatalf("DeadCauseCounts: %v", err)
	}
	key := func(text string) jobstore.CauseKey {
		return jobstore.CauseKey{Kind: "email", Reason: "attempts", Cause: causeOf(text)}
	}
	want := []jobstore.DeadCauseCount{
		{CauseKey: key(refused(0)), Queue: "mail", Count: 3, First: t0.Add(time.Millisecond), Last: t0.Add(2*time.Second + time.Millisecond), MaxID: a[2].ID},
		{CauseKey: key(""), Queue: "mail", Count: 1, First: t0.Add(time.Hour), Last: t0.Add(time.Hour), MaxID: d.ID},
		{CauseKey: key(long), Queue: "bulk", Count: 1, First: t0.Add(time.Minute), Last: t0.Add(time.Minute), MaxID: b.ID},
	}
	if want[0].Cause != "dial tcp 00.0.0.0:0000: connection refused" || strings.Contains(want[2].Cause, "123") {
		t.Fatalf("causeOf: %q, %q", want[0].Cause, want[2].Cause)
	}
	if len(got) != len(want) {
		t.Fatalf("DeadCauseCounts = %+v\nwant %+v", got, want)
	}
	for i := range want {
		g := got[i]
		if g.CauseKey != want[i].CauseKey || g.Queue != want[i].Queue || g.Count != want[i].Count || g.MaxID != want[i].MaxID ||
			!g.First.Equal(want[i].First) || !g.Last.Equal(want[i].Last) {
			t.Errorf("DeadCauseCounts[%d] = %+v\nwant %+v", i, g, want[i])
		}
	}
	if got, err := in.DeadCauseCounts(ctx, 1); err != nil || len(got) != 1 || got[0].Count != 3 {
		t.Errorf("DeadCauseCounts(limit 1) = %+v, %v; want the largest", got, err)
	}
	// A cause's jobs, newest death first.
	dead, err := in.DeadOfCause(ctx, key(refused(5)), 0)
	if err != nil || len(dead) != 3 || dead[0].ID != a[2].ID || dead[2].ID != a[0].ID || dead[0].Error != "" || dead[0].Queue != "mail" ||
		!dead[0].FinishedAt.Equal(t0.Add(2*time.Second+time.Millisecond)) {
		t.Fatalf("DeadOfCause = %+v, %v; want jobs %d, %d, %d", dead, err, a[2].ID, a[1].ID, a[0].ID)
	}
	if dead, err := in.DeadOfCause(ctx, key(refused(0)), 2); err != nil || len(dead) != 2 {
		t.Errorf("DeadOfCause(limit 2) = %d jobs, %v", len(dead), err)
	}
	if dead, err := in.DeadOfCause(ctx, jobstore.CauseKey{Kind: "sms", Reason: "attempts", Cause: key(refused(0)).Cause}, 0); err != nil || len(dead) != 0 {
		t.Errorf("DeadOfCause(another kind) = %+v, %v", dead, err)
	}
}
