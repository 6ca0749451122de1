package storetest

// Inserting and reading jobs: fields kept exactly, validation, unique keys.

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heed-go/heed/backoff"
	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/queue/jobstore"
	"github.com/heed-go/heed/retry"
)

func testInsertGet(t *testing.T, s jobstore.Store) {
	bo := backoff.Schedule{Base: 3 * time.Second, Cap: time.Hour, Jitter: backoff.EqualJitter}
	in, err := queue.NewJobInsert("email", json.RawMessage(`{"to":"a@example.com","n":[1,2]}`), queue.EnqueueOptions{
		Queue: "mail", In: 90 * time.Second, Priority: -3, MaxAttempts: 7, UniqueKey: "k1",
		Policy: jobstore.JobPolicy{Backoff: &bo, TimeBudget: time.Hour, AttemptTimeout: time.Minute},
	}, t0)
	if err != nil {
		t.Fatal(err)
	}
	j, inserted, err := s.JobInsert(ctx, in)
	if err != nil || !inserted {
		t.Fatalf("JobInsert: %v, inserted %v", err, inserted)
	}
	if j.ID == 0 {
		t.Fatal("JobInsert returned ID 0")
	}
	g := get(t, s, j.ID)
	if !reflect.DeepEqual(j, g) {
		t.Errorf("JobInsert returned\n%+v\nJobGet returned\n%+v", j, g)
	}
	checkJSON(t, "Args", g.Args, in.Args)
	want := jobstore.Job{ID: j.ID, Kind: "email", Queue: "mail", Args: g.Args, State: jobstore.StateAvailable, Priority: -3,
		MaxAttempts: 7, Policy: in.Policy, AvailableAt: t0.Add(90 * time.Second), CreatedAt: t0, UniqueKey: "k1"}
	if !reflect.DeepEqual(*g, want) {
		t.Errorf("JobGet:\n got %+v\nwant %+v", *g, want)
	}
	j2 := insert(t, s, "email", queue.EnqueueOptions{})
	if j2.ID <= j.ID {
		t.Errorf("second job's ID %d is not above the first's %d", j2.ID, j.ID)
	}
	if j2.Queue != queue.DefaultQueue || j2.Policy != (jobstore.JobPolicy{}) || j2.UniqueKey != "" {
		t.Errorf("defaults: queue %q policy %+v key %q", j2.Queue, j2.Policy, j2.UniqueKey)
	}
}

func checkJSON(t *testing.T, what string, got, want json.RawMessage) {
	t.Helper()
	var g, w any
	dg := json.NewDecoder(bytes.NewReader(got))
	dg.UseNumber()
	dw := json.NewDecoder(bytes.NewReader(want))
	dw.UseNumber()
	if err := dg.Decode(&g); err != nil {
		t.Fatalf("%s: %s is not JSON: %v", what, got, err)
	}
	if err := dw.Decode(&w); err != nil {
		t.Fatalf("%s: %s is not JSON: %v", what, want, err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("%s = %s, want %s", what, got, want)
	}
}

func testInsertInvalid(t *testing.T, s jobstore.Store) {
	good, err := queue.NewJobInsert("k", nil, queue.EnqueueOptions{}, t0)
	if err != nil {
		t.Fatal(err)
	}
	bad := map[string]func(in *jobstore.JobInsert){
		"empty kind":  func(in *jobstore.JobInsert) { in.Kind = "" },
		"empty queue": func(in *jobstore.JobInsert) { in.Queue = "" },
		"bad args":    func(in *jobstore.JobInsert) { in.Args = json.RawMessage(`{"a":`) },
		"no args":     func(in *jobstore.JobInsert) { in.Args = nil },
		"zero time":   func(in *jobstore.JobInsert) { in.AvailableAt = time.Time{} },
		"bad jitter":  func(in *jobstore.JobInsert) { in.Policy.Backoff = &backoff.Schedule{Jitter: 9} },
		"bad backoff": func(in *jobstore.JobInsert) { in.Policy.Backoff = &backoff.Schedule{Base: -1} },
	}
	for name, mutate := range bad {
		in := good
		mutate(&in)
		_, _, err := s.JobInsert(ctx, in)
		if !errors.Is(err, jobstore.ErrInvalid) {
			t.Errorf("%s: JobInsert error %v, want ErrInvalid", name, err)
		}
	}
	jobs, err := s.JobList(ctx, jobstore.JobFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 0 {
		t.Errorf("bad inserts wrote %d jobs", len(jobs))
	}
	if _, err := s.JobList(ctx, jobstore.JobFilter{State: "nope"}); !errors.Is(err, jobstore.ErrInvalid) {
		t.Errorf("JobList with a bad state: %v, want ErrInvalid", err)
	}
}

func testGetNotFound(t *testing.T, s jobstore.Store) {
	if _, err := s.JobGet(ctx, 12345); !errors.Is(err, jobstore.ErrNotFound) {
		t.Errorf("JobGet of a missing job: %v, want ErrNotFound", err)
	}
}

func testUnique(t *testing.T, s jobstore.Store) {
	a := insert(t, s, "k", queue.EnqueueOptions{UniqueKey: "u"})
	in, _ := queue.NewJobInsert("k", nil, queue.EnqueueOptions{UniqueKey: "u"}, t0.Add(time.Second))
	b, inserted, err := s.JobInsert(ctx, in)
	if err != nil || inserted || b.ID != a.ID {
		t.Fatalf("duplicate while available: id %d inserted %v err %v; want id %d, false", b.ID, inserted, err, a.ID)
	}
	other := insert(t, s, "k", queue.EnqueueOptions{UniqueKey: "v"})
	if other.ID == a.ID {
		t.Fatal("another key returned the same job")
	}
	c := claimOne(t, s, queue.DefaultQueue, t0)
	if c.ID != a.ID {
		t.Fatalf("claimed %d, want %d", c.ID, a.ID)
	}
	b, inserted, err = s.JobInsert(ctx, in)
	if err != nil || inserted || b.ID != a.ID || b.State != jobstore.StateRunning {
		t.Fatalf("duplicate while running: id %d state %s inserted %v err %v; want id %d running, false", b.ID, b.State, inserted, err, a.ID)
	}
	if err := s.JobTransition(ctx, jobstore.Transition{ID: c.ID, LeaseToken: c.LeaseToken, State: jobstore.StateSucceeded,
		Attempt: 1, FinishedAt: t0.Add(time.Second), Entry: entry(1, retry.OutcomeSuccess.Key(), "done", "success", t0)}); err != nil {
		t.Fatal(err)
	}
	b, inserted, err = s.JobInsert(ctx, in)
	if err != nil || !inserted || b.ID == a.ID {
		t.Fatalf("after success: id %d inserted %v err %v; want a new job", b.ID, inserted, err)
	}
	// Concurrent duplicates make one job.
	var wg sync.WaitGroup
	got := make([]int64, 8)
	in2, _ := queue.NewJobInsert("k", nil, queue.EnqueueOptions{UniqueKey: "race"}, t0)
	for i := range got {
		wg.Go(func() {
			j, _, err := s.JobInsert(ctx, in2)
			if err != nil {
				t.Errorf("JobInsert: %v", err)
				return
			}
			got[i] = j.ID
		})
	}
	wg.Wait()
	for _, id := range got {
		if id != got[0] {
			t.Fatalf("concurrent inserts of one key made jobs %v", got)
		}
	}
}

func testArgsRoundTrip(t *testing.T, s jobstore.Store) {
	for _, args := range []string{
		`{}`, `[]`, `null`, `"a string"`, `12345678901234567890`, `3.14`,
		`{"nested":{"list":[1,"two",null,true,{"x":[]}]},"unicode":"é✓🚀","esc":"a\"b\\c\n\u0001"}`,
		`{"big":[` + strings.Repeat(`"0123456789",`, 1000) + `"end"]}`,
	} {
		in, err := queue.NewJobInsert("k", json.RawMessage(args), queue.EnqueueOptions{}, t0)
		if err != nil {
			t.Fatalf("NewJobInsert(%.40s): %v", args, err)
		}
		j, _, err := s.JobInsert(ctx, in)
		if err != nil {
			t.Fatalf("JobInsert(%.40s): %v", args, err)
		}
		checkJSON(t, "Args", get(t, s, j.ID).Args, json.RawMessage(args))
		c := claimOne(t, s, queue.DefaultQueue, t0)
		checkJSON(t, "claimed Args", c.Args, json.RawMessage(args))
		if err := s.JobTransition(ctx, jobstore.Transition{ID: c.ID, LeaseToken: c.LeaseToken, State: jobstore.StateSucceeded, Attempt: 1, FinishedAt: t0}); err != nil {
			t.Fatal(err)
		}
	}
}

// testNamesInvalid checks that names no store could keep faithfully (a
// NUL byte, invalid UTF-8, control characters, too long) are refused by
// validation, with the same error on every store, before any SQL runs.
func testNamesInvalid(t *testing.T, s jobstore.Store) {
	good, err := queue.NewJobInsert("k", nil, queue.EnqueueOptions{}, t0)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		mutate func(in *jobstore.JobInsert)
		want   string
	}{
		{func(in *jobstore.JobInsert) { in.Kind = "a\x00b" }, `queue: JobInsert.Kind has the control character U+0000: "a\x00b"`},
		{func(in *jobstore.JobInsert) { in.Queue = "q\xff" }, `queue: JobInsert.Queue is not valid UTF-8: "q\xff"`},
		{func(in *jobstore.JobInsert) { in.Queue = "two\nlines" }, `queue: JobInsert.Queue has the control character U+000A: "two\nlines"`},
		{func(in *jobstore.JobInsert) { in.Kind = strings.Repeat("k", jobstore.MaxName+1) }, `queue: JobInsert.Kind is 256 bytes long, at most 255`},
		{func(in *jobstore.JobInsert) { in.UniqueKey = "u\x00" }, `queue: JobInsert.UniqueKey has the control character U+0000: "u\x00"`},
	} {
		in := good
		tt.mutate(&in)
		_, _, err := s.JobInsert(ctx, in)
		if !errors.Is(err, jobstore.ErrInvalid) || err.Error() != tt.want {
			t.Errorf("JobInsert: error %v, want %s", err, tt.want)
		}
	}
	if _, err := s.JobList(ctx, jobstore.JobFilter{Kind: "a\x00"}); !errors.Is(err, jobstore.ErrInvalid) ||
		err.Error() != `queue: JobFilter.Kind has the control character U+0000: "a\x00"` {
		t.Errorf("JobList: %v", err)
	}
	if _, err := s.JobClaim(ctx, jobstore.ClaimParams{Queue: "\xc3", Limit: 1, Now: t0, LeaseUntil: t0.Add(time.Minute)}); !errors.Is(err, jobstore.ErrInvalid) ||
		err.Error() != `queue: ClaimParams.Queue is not valid UTF-8: "\xc3"` {
		t.Errorf("JobClaim: %v", err)
	}
	if jobs, err := s.JobList(ctx, jobstore.JobFilter{}); err != nil || len(jobs) != 0 {
		t.Errorf("invalid inserts wrote %d jobs (%v)", len(jobs), err)
	}
}
