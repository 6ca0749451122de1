package compare

// queue.Cron parsed cron expressions with github.com/robfig/cron/v3 until
// the core module dropped its third-party dependencies; it now has its own
// parser (internal/cron). This test holds the two to the same answers: the
// same expressions accepted, and the same next tick from many instants, in
// UTC and in zones with daylight saving changes.

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/heed-go/heed/queue"
)

// robfigNext is queue.Cron as it was: ParseStandard in UTC unless the
// expression names a zone.
func robfigNext(expr string) (func(time.Time) time.Time, error) {
	e := strings.TrimSpace(expr)
	if !strings.HasPrefix(e, "CRON_TZ=") && !strings.HasPrefix(e, "TZ=") {
		e = "CRON_TZ=UTC " + e
	}
	s, err := cron.ParseStandard(e)
	if err != nil {
		return nil, err
	}
	return s.Next, nil
}

// randomField writes one field in any of the forms cron takes.
func randomField(r *rand.Rand, lo, hi int, names []string) string {
	value := func() string {
		v := lo + r.IntN(hi-lo+1)
		if names != nil && r.IntN(3) == 0 {
			n := names[v-lo]
			if r.IntN(2) == 0 {
				n = strings.ToUpper(n)
			}
			return n
		}
		return fmt.Sprint(v)
	}
	part := func() string {
		switch r.IntN(7) {
		case 0:
			return "*"
		case 1:
			return fmt.Sprintf("*/%d", 1+r.IntN(hi-lo+1))
		case 2:
			a, b := lo+r.IntN(hi-lo+1), lo+r.IntN(hi-lo+1)
			a, b = min(a, b), max(a, b)
			if r.IntN(2) == 0 {
				return fmt.Sprintf("%d-%d/%d", a, b, 1+r.IntN(5))
			}
			return fmt.Sprintf("%d-%d", a, b)
		case 3:
			return fmt.Sprintf("%s/%d", value(), 1+r.IntN(10))
		case 4:
			return "?"
		default:
			return value()
		}
	}
	parts := []string{part()}
	for r.IntN(3) == 0 {
		parts = append(parts, part())
	}
	return strings.Join(parts, ",")
}

var (
	monthNames = []string{"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"}
	dayNames   = []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}
	zones      = []string{"", "CRON_TZ=Europe/Paris ", "TZ=America/New_York ", "CRON_TZ=Australia/Lord_Howe ", "CRON_TZ=Asia/Kolkata "}
)

func TestCronMatchesRobfig(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	exprs := []string{
		"* * * * *", "0 9 * * 1-5", "@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly",
		"0 0 13 * 5", "0 0 */2 * 1", "0 0 29 2 *", "30 2 * * *", "0 2 * * *", "59 23 31 12 *", "0 0 1,15 * mon-fri",
		"*/7 */5 */3 */2 */4", "0 12 ? jan-mar,DEC SUN", "5/20 1/3 * * *",
	}
	for range 2000 {
		exprs = append(exprs, strings.Join([]string{
			randomField(r, 0, 59, nil), randomField(r, 0, 23, nil), randomField(r, 1, 31, nil),
			randomField(r, 1, 12, monthNames), randomField(r, 0, 6, dayNames)}, " "))
	}
	var locs []*time.Location
	for _, name := range []string{"UTC", "Europe/Paris", "America/New_York", "Australia/Lord_Howe"} {
		l, err := time.LoadLocation(name)
		if err != nil {
			t.Skipf("time zone data: %v", err)
		}
		locs = append(locs, l)
	}
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	compared := 0
	for i, e := range exprs {
		expr := zones[i%len(zones)] + e
		want, werr := robfigNext(expr)
		got, gerr := queue.Cron(expr)
		if (werr == nil) != (gerr == nil) {
			t.Errorf("%q: robfig/cron: %v; queue.Cron: %v", expr, werr, gerr)
			continue
		}
		if werr != nil {
			continue
		}
		for range 50 {
			from := time.Unix(start+r.Int64N(6*365*24*3600), r.Int64N(2)*int64(r.IntN(1e9))).In(locs[r.IntN(len(locs))])
			if g, w := got.Next(from), want(from); !g.Equal(w) || g.Location() != w.Location() {
				t.Errorf("%q.Next(%v) = %v, robfig/cron says %v", expr, from, g, w)
			}
			compared++
		}
	}
	// Around daylight saving changes, minute by minute.
	paris := locs[1]
	for _, e := range []string{"30 2 * * *", "0 * * * *", "*/15 1-3 * * *", "0 3 * * sun", "@daily"} {
		expr := "CRON_TZ=Europe/Paris " + e
		want, _ := robfigNext(expr)
		got, err := queue.Cron(expr)
		if err != nil {
			t.Fatal(err)
		}
		for _, day := range []time.Time{time.Date(2026, 3, 29, 0, 0, 0, 0, paris), time.Date(2026, 10, 25, 0, 0, 0, 0, paris)} {
			for m := range 6 * 60 {
				from := day.Add(time.Duration(m) * time.Minute)
				if g, w := got.Next(from), want(from); !g.Equal(w) {
					t.Errorf("%q.Next(%v) = %v, robfig/cron says %v", expr, from, g, w)
				}
				compared++
			}
		}
	}
	t.Logf("%d expressions, %d instants compared", len(exprs), compared)
}

// Expressions robfig/cron read and queue.Cron refuses, on purpose: each was
// a typo that robfig/cron read as something else.
func TestCronRefusesRobfigsAccidents(t *testing.T) {
	for _, expr := range []string{
		"*-5 * * * *", // robfig: "*", the "-5" ignored
		", * * * *",   // robfig: a minute that never comes
		"CRON_TZ= * * * * *",
	} {
		if _, err := robfigNext(expr); err != nil {
			t.Errorf("robfig/cron refuses %q now (%v): drop it from this list", expr, err)
		}
		if _, err := queue.Cron(expr); err == nil {
			t.Errorf("queue.Cron(%q) accepted it", expr)
		}
	}
}

// Expressions both refuse.
func TestCronRefusesWhatRobfigRefused(t *testing.T) {
	for _, expr := range []string{
		"", "61 * * * *", "* * *", "* * * * * *", "* * * * 7", "* * 0 * *", "*/0 * * * *", "5-1 * * * *",
		"1-2-3 * * * *", "1/2/3 * * * *", "@sometimes", "@every 1h", "CRON_TZ=Nowhere/City * * * * *", "* * * foo *",
	} {
		if _, err := robfigNext(expr); err == nil && expr != "@every 1h" {
			t.Errorf("robfig/cron accepts %q", expr)
		}
		if _, err := queue.Cron(expr); err == nil {
			t.Errorf("queue.Cron(%q) accepted it", expr)
		}
	}
}
