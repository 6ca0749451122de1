package pgstore

import (
	"strconv"

	"github.com/heed-go/heed/queue/jobstore"
)

// historyAppend is the SQL expression of the json history column h with
// the JSON entry e (a text expression) appended.
//
// While the history holds at most queue.MaxHistory entries beside its
// first (and beside the cut marker, once there is one), e is spliced in as
// text, so the entries already stored are kept byte for byte. Past that,
// the history is rebuilt as: the first entry, a marker entry with outcome
// "cut" counting the entries dropped (one more than the old marker's
// count), every entry after the oldest one kept, and e.
// json_array_elements returns the kept entries as their stored text (h is
// json, not jsonb).
func historyAppend(h, e string) string {
	marker := `(CASE WHEN ` + h + `->1->>'outcome' = '` + jobstore.OutcomeCut + `' THEN 1 ELSE 0 END)`
	splice := `(CASE WHEN json_array_length(` + h + `) = 0 THEN '[' || ` + e + ` || ']'
			ELSE left(rtrim(` + h + `::text), -1) || ',' || ` + e + ` || ']' END)`
	// The first test is on the text's length, so that a short history
	// costs no more than it did before the cap.
	return `(CASE WHEN octet_length(` + h + `::text) < ` + strconv.Itoa(minFullHistory) + ` THEN ` + splice + `
		WHEN json_array_length(` + h + `) < ` + strconv.Itoa(jobstore.MaxHistory+1) + ` + ` + marker + ` THEN ` + splice + `
		ELSE (SELECT '[' || (` + h + `->0)::text || ',` + cutMarkerHead + `'
				|| (coalesce((` + h + `->1->>'cut')::int, 0) + 1) || '},'
				|| string_agg(x.v::text, ',' ORDER BY x.i) || ',' || ` + e + ` || ']'
			FROM json_array_elements(` + h + `) WITH ORDINALITY AS x(v, i)
			WHERE x.i >= 3 + ` + marker + `)
	END)::json`
}

// historyPut is historyAppend, or, when the boolean SQL expression
// replace is true, the history with its last entry replaced by e
// (queue.Transition.ReplaceLast): the entries before it are kept as their
// stored text, and an empty history gets e.
func historyPut(h, e, replace string) string {
	return `(CASE WHEN ` + replace + ` THEN (SELECT '[' || coalesce(string_agg(x.v::text, ',' ORDER BY x.i) || ',', '') || ` + e + ` || ']'
			FROM json_array_elements(` + h + `) WITH ORDINALITY AS x(v, i)
			WHERE x.i < json_array_length(` + h + `))::json
		ELSE ` + historyAppend(h, e) + ` END)`
}

// minFullHistory is a length of history text below which it cannot hold
// queue.MaxHistory+1 entries: every entry, even the shortest, has more
// than 80 bytes (attempt, both times, outcome and action).
const minFullHistory = 80 * (jobstore.MaxHistory + 1)

// cutMarkerHead is the JSON of a cut marker entry up to its count: the
// fields of a queue.Attempt with outcome queue.OutcomeCut and action
// queue.ActionCut, and zero times.
const cutMarkerHead = `{"attempt":0,"started_at":"0001-01-01T00:00:00Z","finished_at":"0001-01-01T00:00:00Z","outcome":"` + jobstore.OutcomeCut + `","action":"` + jobstore.ActionCut + `","cut":`
