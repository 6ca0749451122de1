// Package sqlfilter turns a jobstore.JobFilter into the WHERE clause both heed
// stores use (sqlitestore and pgstore); each store gives its dialect:
// placeholders, how times and ID lists are bound.
package sqlfilter

import (
	"strconv"
	"strings"
	"time"

	"github.com/heed-go/heed/queue/jobstore"
)

// Dialect is how a store's SQL binds values.
type Dialect struct {
	// Placeholder returns the n-th parameter's placeholder (n from 1):
	// "?" or "$1".
	Placeholder func(n int) string
	// Time returns the value bound for a time (Unix microseconds, or the
	// time itself).
	Time func(time.Time) any
	// IDs returns the condition that the id is one of a non-empty list,
	// with ph the list's placeholder, and the value bound for it.
	IDs func(ph string, ids []int64) (cond string, arg any)
}

// Question is the placeholder of SQLite: "?".
func Question(int) string { return "?" }

// Dollar is the placeholder of PostgreSQL: "$n".
func Dollar(n int) string { return "$" + strconv.Itoa(n) }

// Where returns the condition selecting the jobs f selects, appending its
// parameters to args (whose length numbers the placeholders). With dead,
// only dead jobs are selected, whatever f.State says. It is "1 = 1" when f
// selects everything.
func Where(d Dialect, f *jobstore.JobFilter, dead bool, args *[]any) string {
	conds := []string{"1 = 1"}
	param := func(v any) string {
		*args = append(*args, v)
		return d.Placeholder(len(*args))
	}
	switch {
	case dead:
		conds = append(conds, "state = 'dead'")
	case f.State.Valid():
		// A literal, not a parameter: a partial index (the claim index of
		// available jobs, the dead, succeeded and cancelled ones by age) is
		// used only when the query's condition matches it as written
		// (SQLite; PostgreSQL's generic plans).
		conds = append(conds, "state = '"+string(f.State)+"'")
	case f.State != "":
		conds = append(conds, "state = "+param(string(f.State)))
	}
	if f.IDs != nil {
		if len(f.IDs) == 0 {
			conds = append(conds, "1 = 0")
		} else {
			*args = append(*args, nil)
			cond, arg := d.IDs(d.Placeholder(len(*args)), f.IDs)
			(*args)[len(*args)-1] = arg
			conds = append(conds, cond)
		}
	}
	if f.Kind != "" {
		conds = append(conds, "kind = "+param(f.Kind))
	}
	if f.Queue != "" {
		conds = append(conds, "queue = "+param(f.Queue))
	}
	if f.DeadReason != "" {
		conds = append(conds, "dead_reason = "+param(f.DeadReason))
	}
	if !f.FinishedBefore.IsZero() {
		conds = append(conds, "finished_at < "+param(d.Time(f.FinishedBefore)))
	}
	if f.AfterID > 0 {
		conds = append(conds, "id > "+param(f.AfterID))
	}
	if f.BeforeID > 0 {
		conds = append(conds, "id < "+param(f.BeforeID))
	}
	if !f.AvailableAfter.IsZero() {
		conds = append(conds, "available_at > "+param(d.Time(f.AvailableAfter)))
	}
	if !f.AvailableBy.IsZero() {
		conds = append(conds, "available_at <= "+param(d.Time(f.AvailableBy)))
	}
	if f.Retried {
		conds = append(conds, "attempt > 0")
	}
	return strings.Join(conds, " AND ")
}

// Claim returns what a claim for p adds to its own condition (due jobs of
// its queue): " AND attempt = 0" with p.FirstOnly, "" otherwise. It is a
// literal, not a parameter, so that each store keeps one prepared
// statement per form and the claim index is used as before.
func Claim(p *jobstore.ClaimParams) string {
	if p.FirstOnly {
		return " AND attempt = 0"
	}
	return ""
}

// Order returns " ORDER BY id", or " ORDER BY id DESC" when f.Newest: the
// order in which the stores list jobs.
func Order(f *jobstore.JobFilter) string {
	if f.Newest {
		return " ORDER BY id DESC"
	}
	return " ORDER BY id"
}

// Limit returns " LIMIT n" for a positive f.Limit, or "".
func Limit(f *jobstore.JobFilter) string {
	if f.Limit > 0 {
		return " LIMIT " + strconv.Itoa(f.Limit)
	}
	return ""
}
