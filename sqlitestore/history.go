package sqlitestore

import (
	"strconv"

	"github.com/heed-go/heed/queue/jobstore"
)

// historyAppend is the SQL expression of history with a JSON entry
// appended; it takes two parameters, both the entry.
//
// While the history holds at most queue.MaxHistory entries beside its
// first (and beside the cut marker, once there is one), the entry is
// spliced in as bytes, so the entries already stored are kept exactly as
// written; the first test is on the length of the text, so that a short
// history is never parsed. Past that, the history is rebuilt as: the
// first entry, a marker entry with outcome "cut" counting the entries
// dropped (one more than the old marker's count), every entry after the
// oldest one kept, and the new entry. json_each returns each kept entry as
// its JSON text.
var historyAppend = `CASE WHEN length(history) < ` + strconv.Itoa(minFullHistory) + ` OR json_array_length(history) < ` +
	strconv.Itoa(jobstore.MaxHistory+1) + ` + (json_extract(history, '$[1].outcome') IS '` + jobstore.OutcomeCut + `')
	THEN substr(history, 1, length(history) - 1) || CASE WHEN history = '[]' THEN '' ELSE ',' END || ? || ']'
	ELSE '[' || json_extract(history, '$[0]') || ',` + cutMarkerHead + `' || (coalesce(json_extract(history, '$[1].cut'), 0) + 1) || '},'
		|| (SELECT group_concat(value, ',' ORDER BY key) FROM json_each(history)
			WHERE key >= 2 + (json_extract(history, '$[1].outcome') IS '` + jobstore.OutcomeCut + `'))
		|| ',' || ? || ']' END`

// historyPut is historyAppend, or, when its first parameter is true, the
// history with its last entry replaced by the entry
// (queue.Transition.ReplaceLast): the entries before it are kept as their
// JSON text, and an empty history gets the entry. It takes four
// parameters: whether to replace, then the entry three times.
var historyPut = `CASE WHEN ? THEN '[' || coalesce((SELECT group_concat(value, ',' ORDER BY key) FROM json_each(history)
		WHERE key < json_array_length(history) - 1) || ',', '') || ? || ']'
	ELSE ` + historyAppend + ` END`

// cutMarkerHead is the JSON of a cut marker entry up to its count: the
// fields of a queue.Attempt with outcome queue.OutcomeCut and action
// queue.ActionCut, and zero times.
const cutMarkerHead = `{"attempt":0,"started_at":"0001-01-01T00:00:00Z","finished_at":"0001-01-01T00:00:00Z","outcome":"` + jobstore.OutcomeCut + `","action":"` + jobstore.ActionCut + `","cut":`

// minFullHistory is a length of history text below which it cannot hold
// queue.MaxHistory+1 entries: every entry, even the shortest, has more
// than 80 bytes (attempt, both times, outcome and action).
const minFullHistory = 80 * (jobstore.MaxHistory + 1)
