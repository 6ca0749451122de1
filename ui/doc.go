// Package ui is heed's web dashboard of the job queue: an [http.Handler]
// (make one with [New]) over a [queue.Client] whose store implements
// [jobstore.Inspector] (sqlitestore and pgstore do). `heed ui` serves it; a
// Go service mounts it under its own path and authentication.
//
// It serves five pages, rendered on the server with html/template and
// readable without JavaScript (a small embedded script refreshes every
// page that reads, in place, keeping its URL, filter and scroll position
// and waiting while the reader has ticked a box or is typing, and selects
// the jobs shown):
//
//   - the overview: every queue's jobs by state, its lag (the age of the
//     oldest job waiting to run), whether it is paused, and the last
//     hour's succeeded, retried and dead jobs per minute as small SVG
//     charts; the dead-letter's size and oldest age; live updates;
//   - the jobs: filtered by queue, kind, state and text (in error texts,
//     and in arguments for a signed-in reader), newest or oldest first,
//     in pages by keyset (an ID cursor, never an offset); retry, cancel
//     or delete the jobs a filter selects (or those ticked) after a
//     confirmation that states how many it takes and which it leaves;
//   - a job: its arguments, redacted as the heed command redacts them
//     unless a signed-in reader reveals them, and its decision timeline:
//     one row per attempt with its start, duration, outcome, decision,
//     reason and delay, drawn on a time axis with the time budget's end;
//   - the dead-letter grouped by cause: kind, dead reason and the shape
//     of the last error (numbers, IDs and addresses masked), each group
//     with its count, first and last death and a sample; requeue or delete
//     a group or a selection after a confirmation that states how many
//     jobs it touches.
//     Every dead job is counted: the store keeps an index of each dead
//     job's cause (its last error text with digits read as 0, computed by
//     the database), which the page reads with one GROUP BY and merges by
//     fingerprint ([jobstore.Inspector].DeadCauseCounts). Over a database one
//     release behind, without that index, it groups the newest 2,000 and
//     says so;
//   - the periodic jobs: each one's schedule, latest and next tick as the
//     workers record them ([jobstore.ScheduleRecorder]), and its jobs.
//
// The overview's counts are shared: one count at a time runs in the
// background and every viewer gets the latest (see [Config].Refresh), so
// that open pages do not multiply the load on the database.
//
// Safety: state-changing requests need the token (a bearer header, or the
// session cookie signing in sets) and pass net/http's cross-origin
// protection; a read-only handler has no actions at all. Ten wrong tokens
// from one address within a minute (by the sign-in form or a bearer
// header) get that address refused any token, the right one too, until
// the minute has passed (429 with Retry-After on the sign-in form), so a
// token cannot be guessed at network speed. Every response
// carries a strict Content-Security-Policy: no inline script or style.
// No page or URL holds the token or a revealed secret it was not asked
// for.
package ui
