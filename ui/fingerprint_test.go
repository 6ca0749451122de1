package ui

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/heed-go/heed/queue/jobstore"
)

func TestFingerprint(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"connection refused", "connection refused"},
		{"dial tcp 10.0.0.7:5432: connect: connection refused", "dial tcp <addr>: connect: connection refused"},
		{"dial tcp [2001:db8::1]:443: i/o timeout", "dial tcp <addr>: i/o timeout"},
		{"lookup 2001:db8::7 failed", "lookup <addr> failed"},
		{"dial tcp db.internal:5432: timeout", "dial tcp <addr>: timeout"},
		{"dial tcp localhost:8080: refused", "dial tcp <addr>: refused"},
		{"HTTP 503 after 1.25s", "HTTP <n> after <n>s"},
		{"user 42 not found", "user <n> not found"},
		{"order 7f3a9c0b2e1d not found", "order <id> not found"},
		{"request req_8f3kd92x failed", "request <id> failed"},
		{"job 3fa85f64-5717-4562-b3fc-2c963f66afa6: gone", "job <id>: gone"},
		{"mail to alice@example.com bounced", "mail to <addr> bounced"},
		{`GET https://api.example.com/v1/users/12?x=REDACTED: 500`, "GET <url>: <n>"},
		{"s3 key abc123 missing", "s<n> key abc<n> missing"}, // short words: only their numbers
		{"too   many\n\tspaces ", "too many spaces"},
		{"retry attempt 3 of 5", "retry attempt <n> of <n>"},
		{`{"error":"row 42 locked","code":"E1234567"}`, `{"error":"row <n> locked","code":"<id>"}`},
		{"connect [::1]: refused (errno 111)", "connect <addr>: refused (errno <n>)"},
		{"bad_host:99 and my_db:5432 are names", "bad_host:<n> and my_db:<n> are names"},
		{"took 3.5.6 parts", "took <n>.<n> parts"},
		{"v2.1: unsupported", "v<n>.<n>: unsupported"},
	} {
		if got := fingerprint(tc.in); got != tc.want {
			t.Errorf("fingerprint(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	long := strings.Repeat("é", 300)
	if got := fingerprint(long); len(got) > maxFingerprint+len("…") || !strings.HasSuffix(got, "…") || !strings.HasPrefix(got, "é") {
		t.Errorf("fingerprint(long) = %q (%d bytes): want a cut at %d bytes on a rune boundary", got, len(got), maxFingerprint)
	}
	for _, s := range []string{long, "a\xffb 12"} {
		if got := fingerprint(s); !strings.HasPrefix(got, s[:1]) {
			t.Errorf("fingerprint(%q) = %q", s, got)
		}
	}
}

func TestGroupDead(t *testing.T) {
	t0 := time.Date(2026, 3, 4, 5, 0, 0, 0, time.UTC)
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	dead := []jobstore.DeadCause{
		{ID: 1, Kind: "email", Queue: "mail", Reason: "attempts", FinishedAt: at(5), Error: "dial tcp 10.0.0.1:25: refused"},
		{ID: 2, Kind: "email", Queue: "bulk", Reason: "attempts", FinishedAt: at(1), Error: "dial tcp 10.0.0.2:25: refused"},
		{ID: 3, Kind: "email", Queue: "mail", Reason: "permanent", FinishedAt: at(2), Error: "dial tcp 10.0.0.3:25: refused"},
		{ID: 4, Kind: "sms", Queue: "mail", Reason: "attempts", FinishedAt: at(3), Error: "dial tcp 10.0.0.4:25: refused"},
		{ID: 5, Kind: "email", Queue: "mail", Reason: "attempts", FinishedAt: at(9), Error: "dial tcp 10.0.0.5:25: refused"},
		{ID: 6, Kind: "sms", Queue: "mail", Reason: "attempts", FinishedAt: at(4), Error: "bad number 555"},
	}
	got := groupDead(dead)
	type summary struct {
		kind, reason, fp string
		count            int
		first, last      time.Time
		sample           int64
		queues           []string
		ids              []int64
	}
	var sums []summary
	for _, g := range got {
		sums = append(sums, summary{g.Kind, g.Reason, g.Fingerprint, g.Count, g.First, g.Last, g.Sample.ID, g.Queues, g.IDs})
		if g.ID != groupID(g.Kind, g.Reason, g.Fingerprint) || len(g.ID) != 16 {
			t.Errorf("group %q: ID %q", g.Fingerprint, g.ID)
		}
	}
	want := []summary{
		{"email", "attempts", "dial tcp <addr>: refused", 3, at(1), at(9), 5, []string{"bulk", "mail"}, []int64{1, 2, 5}},
		{"sms", "attempts", "bad number <n>", 1, at(4), at(4), 6, []string{"mail"}, []int64{6}},
		{"sms", "attempts", "dial tcp <addr>: refused", 1, at(3), at(3), 4, []string{"mail"}, []int64{4}},
		{"email", "permanent", "dial tcp <addr>: refused", 1, at(2), at(2), 3, []string{"mail"}, []int64{3}},
	}
	if len(sums) != len(want) {
		t.Fatalf("GroupDead: %d groups, want %d: %+v", len(sums), len(want), sums)
	}
	for i := range want {
		g, w := sums[i], want[i]
		if g.kind != w.kind || g.reason != w.reason || g.fp != w.fp || g.count != w.count || !g.first.Equal(w.first) ||
			!g.last.Equal(w.last) || g.sample != w.sample || !slices.Equal(g.queues, w.queues) || !slices.Equal(g.ids, w.ids) {
			t.Errorf("group %d = %+v, want %+v", i, g, w)
		}
	}
	if len(groupDead(nil)) != 0 {
		t.Errorf("groupDead(nil) is not empty")
	}
}

// Fingerprint never panics, never grows a text past its cut, and leaves
// no digit: every number is masked, whatever surrounds it.
func FuzzFingerprint(f *testing.F) {
	for _, s := range []string{"dial tcp 10.0.0.7:5432: refused", "job 3fa85f64-5717-4562-b3fc-2c963f66afa6", "[::1]:80", "a@b.c", "x://", "1.2.3", "é 12"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		fp := fingerprint(s)
		if len(fp) > maxFingerprint+len("…") {
			t.Fatalf("fingerprint(%q) has %d bytes", s, len(fp))
		}
		if i := strings.IndexAny(fp, "0123456789"); i >= 0 {
			t.Fatalf("fingerprint(%q) = %q keeps a digit at %d", s, fp, i)
		}
	})
}

// The dead-letter is grouped by the shape of the last error: numbers,
// IDs and addresses masked.
func Example_fingerprint() {
	fmt.Println(fingerprint("dial tcp 10.0.0.7:5432: connect: connection refused"))
	fmt.Println(fingerprint("order 7f3a9c0b2e1d: HTTP 503 after 1.5s"))
	// Output:
	// dial tcp <addr>: connect: connection refused
	// order <id>: HTTP <n> after <n>s
}
