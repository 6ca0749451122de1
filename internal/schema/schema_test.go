package schema

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/heed-go/heed/queue/jobstore"
)

func TestLoad(t *testing.T) {
	for name, fsys := range map[string]fstest.MapFS{
		"gap":      {"m/001_a.sql": {}, "m/003_c.sql": {}},
		"bad name": {"m/first.sql": {}},
		"zero":     {"m/000_a.sql": {}},
	} {
		if _, err := Load("teststore", fsys, "m", nil); err == nil || !strings.HasPrefix(err.Error(), "teststore: ") {
			t.Errorf("%s: Load = %v, want a teststore error", name, err)
		}
	}
	goStep := func(context.Context, Tx) error { return nil }
	if _, err := Load("teststore", fstest.MapFS{"m/0001_a.sql": {}}, "m", map[int]func(context.Context, Tx) error{2: goStep}); err == nil {
		t.Error("Load accepted a Go step without its file")
	}
	steps, err := Load("teststore", fstest.MapFS{"m/0002_b.sql": {Data: []byte("B")}, "m/0001_a.sql": {Data: []byte("A")}}, "m",
		map[int]func(context.Context, Tx) error{2: goStep})
	if err != nil || len(steps) != 2 || steps[0].Name != "0001_a" || steps[1].SQL != "B" || steps[0].Go != nil || steps[1].Go == nil {
		t.Errorf("Load = %+v, %v", steps, err)
	}
}

func TestCompare(t *testing.T) {
	steps := []Step{{Version: 1, Name: "0001_a"}, {Version: 2, Name: "0002_b"}, {Version: 3, Name: "0003_c"}}
	if err := Compare("s", Level{3, 3}, steps); err != nil {
		t.Errorf("current: %v", err)
	}
	var behind *jobstore.SchemaBehindError
	if err := Compare("s", Level{1, 1}, steps); !errors.As(err, &behind) || !errors.Is(err, jobstore.ErrSchemaTooOld) ||
		!slices.Equal(behind.Missing, []string{"0002_b", "0003_c"}) ||
		err.Error() != "s: database schema version 1 is behind this binary's 3: migrations 0002_b, 0003_c not applied" {
		t.Errorf("behind: %v", err)
	}
	var tooNew *jobstore.SchemaTooNewError
	if err := Compare("s", Level{5, 5}, steps); !errors.As(err, &tooNew) || !errors.Is(err, jobstore.ErrSchemaTooNew) || tooNew.Database != 5 || tooNew.Binary != 3 {
		t.Errorf("too new: %v", err)
	}
}

// A database newer than the binary is refused unless it is compatible down
// to the binary's version; the floor a run of steps leaves is the highest
// any of them declares.
func TestCompareFloor(t *testing.T) {
	steps := []Step{{Version: 1, Floor: 1}, {Version: 2, Floor: 1}, {Version: 3, Floor: 3}, {Version: 4, Floor: 3}}
	for _, c := range []struct {
		level Level
		known int
		ok    bool
	}{
		{Level{2, 1}, 1, true},  // an expand step ahead: the old binary works
		{Level{2, 1}, 2, true},  // current
		{Level{3, 3}, 2, false}, // a contract step: refused, naming the floor
		{Level{4, 3}, 3, true},
		{Level{4, 3}, 2, false},
	} {
		err := Compare("s", c.level, steps[:c.known])
		var tooNew *jobstore.SchemaTooNewError
		if c.ok != (err == nil) || !c.ok && (!errors.As(err, &tooNew) || tooNew.Floor != c.level.Floor) {
			t.Errorf("Compare(%+v) by a binary knowing %d = %v, want ok %v", c.level, c.known, err, c.ok)
		}
	}
	if err := Compare("s", Level{4, 3}, steps[:2]); err == nil || !strings.Contains(err.Error(), "version 4, compatible down to 3, is newer") {
		t.Errorf("too new: %v", err)
	}
	for _, c := range []struct{ from, to, want int }{{0, 1, 1}, {1, 2, 1}, {0, 2, 1}, {1, 3, 3}, {2, 4, 3}, {3, 4, 3}} {
		if got := FloorAfter(Level{c.from, steps[max(c.from-1, 0)].Floor * min(c.from, 1)}, steps, c.to); got != c.want {
			t.Errorf("FloorAfter(%d -> %d) = %d, want %d", c.from, c.to, got, c.want)
		}
	}
	if _, err := Load("s", fstest.MapFS{"m/0001_a.sql": {}, "m/0002_b.sql": {Data: []byte("-- x\n" + floorLine + " 1\nCREATE TABLE t (a);")}}, "m", nil); err != nil {
		t.Fatal(err)
	}
	steps, _ = Load("s", fstest.MapFS{"m/0001_a.sql": {}, "m/0002_b.sql": {Data: []byte(floorLine + " 1\n")}, "m/0003_c.sql": {}}, "m", nil)
	if len(steps) != 3 || steps[0].Floor != 1 || steps[1].Floor != 1 || steps[2].Floor != 3 {
		t.Errorf("floors: %+v", steps)
	}
	for sql, want := range map[string]string{
		"-- Global limits per queue (issue 28): at most N\n-- running.\nALTER TABLE x;": "Global limits per queue (issue 28)",
		"-- Purging succeeded jobs by age (Store.SucceededDelete).\nCREATE INDEX i;":    "Purging succeeded jobs by age (Store.SucceededDelete)",
		"-- A run of deferrals is one entry. Expand only.\n":                            "A run of deferrals is one entry",
		"CREATE TABLE t (a);": "",
	} {
		if got := summary(sql); got != want {
			t.Errorf("summary(%q) = %q, want %q", sql, got, want)
		}
	}
	var behind *jobstore.SchemaBehindError
	if err := Compare("s", Level{1, 1}, steps); !errors.As(err, &behind) || len(behind.Changes) != 2 ||
		!strings.HasSuffix(behind.Changes[0], "(expand: compatible down to 1)") || !strings.Contains(behind.Changes[1], "refuse") {
		t.Errorf("changes: %v", err)
	}
	if _, err := Load("s", fstest.MapFS{"m/0001_a.sql": {Data: []byte(floorLine + " 2\n")}}, "m", nil); err == nil {
		t.Error("Load accepted a floor above the step's version")
	}
}

// The old stored forms become the new ones, byte for byte, and rewriting
// again changes nothing.
func TestJobForms(t *testing.T) {
	p, h, err := JobForms([]byte(OldJob.Policy), []byte(OldJob.History))
	if err != nil || string(p) != OldJob.NewPolicy || string(h) != OldJob.NewHistory {
		t.Fatalf("JobForms =\n %s\n %s\n %v; want\n %s\n %s", p, h, err, OldJob.NewPolicy, OldJob.NewHistory)
	}
	p2, h2, err := JobForms(p, h)
	if err != nil || string(p2) != string(p) || string(h2) != string(h) {
		t.Errorf("second rewrite changed the forms: %s %s %v", p2, h2, err)
	}
	if p, h, err := JobForms([]byte(`{}`), []byte(`[]`)); err != nil || string(p) != `{}` || string(h) != `[]` {
		t.Errorf("empty forms: %s %s %v", p, h, err)
	}
	if _, _, err := JobForms([]byte(`{"backoff":{"Kind":7,"Jitter":0}}`), nil); err == nil {
		t.Error("an unknown old kind was rewritten")
	}
}

func TestJobFormsOK(t *testing.T) {
	_, h, err := JobForms(nil, []byte(OKJob.History))
	if err != nil || string(h) != OKJob.NewHistory {
		t.Fatalf("JobForms =\n %s\n %v; want\n %s", h, err, OKJob.NewHistory)
	}
}
