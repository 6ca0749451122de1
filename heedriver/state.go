package heedriver

import (
	"bytes"
	"context"
	"encoding/json"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/heed-go/heed/internal/redact"
	"github.com/heed-go/heed/retry"
)

// MetadataKey is the key of heed's record in a River job's metadata: the
// last decision heed took about the job and why, which River UI shows with
// the job, and what the next attempt resumes from. Its value is an object:
//
//	{"action": "retry", "reason": "transient", "outcome": "transient",
//	 "attempt": 2, "delay": "1.6s", "at": "2026-12-04T16:00:01.6Z",
//	 "start": "2026-12-04T16:00:00Z"}
//
// action, reason and outcome are heed's stored words ([retry.Action.Key],
// [retry.Reason.Key], [retry.Outcome.Key]); attempt is heed's count, the
// attempts River gave back for a server's pushback included (pushbacks
// says how many); delay and at are the wait and the time of the next
// attempt; start is when the job's first attempt started, from which its
// time budget counts; error is the error of an attempt River does not
// record (a pushback), cut to 512 bytes.
const MetadataKey = "heed"

const (
	actionRetry = "retry"
	maxErrorLen = 512
)

// state is heed's record in a job's metadata.
type state struct {
	Action    string    `json:"action"`
	Reason    string    `json:"reason"`
	Outcome   string    `json:"outcome,omitempty"`
	Attempt   int       `json:"attempt"`
	Error     string    `json:"error,omitempty"`
	Delay     string    `json:"delay,omitempty"`
	At        time.Time `json:"at,omitzero"`
	Start     time.Time `json:"start,omitzero"`
	Pushbacks int       `json:"pushbacks,omitempty"`

	had bool // the job's metadata had a record
}

var keyBytes = []byte(`"` + MetadataKey + `"`)

// readState returns heed's record in metadata, or a zero state when it has
// none (a new job: the common case, which costs a byte search).
func readState(metadata []byte) state {
	var st state
	if !bytes.Contains(metadata, keyBytes) {
		return st
	}
	var m struct {
		Heed *state `json:"heed"`
	}
	if json.Unmarshal(metadata, &m) == nil && m.Heed != nil {
		st = *m.Heed
		st.had = true
	}
	return st
}

// heedAttempt is heed's number of the job's current attempt.
func (st *state) heedAttempt(job *rivertype.JobRow) int { return job.Attempt + st.Pushbacks }

// history is what heed knows of job before its current attempt.
func (st *state) history(job *rivertype.JobRow) retry.History {
	h := retry.History{Attempts: max(st.heedAttempt(job)-1, 0), Start: st.Start}
	if h.Start.IsZero() && len(job.Errors) > 0 {
		h.Start = job.Errors[0].At // failed before heed was installed
	}
	if st.Action == actionRetry {
		h.LastDelay, _ = time.ParseDuration(st.Delay)
	}
	return h
}

// record keeps decision d in the job's metadata (merged by River when the
// attempt ends), in the job row River hands to its retry policy next, and
// tells the observer.
func (st *state) record(ctx context.Context, job *rivertype.JobRow, d retry.Decision, h *retry.History, observe func(context.Context, retry.Event), dur time.Duration) {
	if d.Action == retry.Retry && d.Reason == retry.ReasonPushback {
		st.Pushbacks++
	}
	n := state{
		Action: d.Action.Key(), Reason: d.Reason.Key(), Attempt: d.Attempt,
		Start: h.Start, Pushbacks: st.Pushbacks,
	}
	if d.Action == retry.Retry || d.Action == retry.GiveUp {
		n.Outcome = d.Outcome.Key()
	}
	if d.Action == retry.Retry || d.Action == retry.Defer {
		n.Delay, n.At = d.Delay.String(), d.At.UTC()
	}
	if d.Err != nil && (d.Action == retry.Defer || d.Reason == retry.ReasonPushback) {
		n.Error = redact.Record(d.Err.Error(), maxErrorLen)
	}
	_ = river.MetadataSet(ctx, MetadataKey, n) // outside River's executor (a test) there is nowhere to set it
	if d.Action == retry.Retry {
		setRowState(job, n)
	}
	if observe != nil {
		observe(ctx, retry.Event{Decision: d, Duration: dur})
	}
}

// setRowState puts n into the job row itself: River hands that row to its
// retry policy (NextRetry) right after the middleware returns, before the
// metadata is stored.
func setRowState(job *rivertype.JobRow, n state) {
	m := map[string]json.RawMessage{}
	if len(job.Metadata) > 0 {
		_ = json.Unmarshal(job.Metadata, &m) // a row River wrote is an object
	}
	b, err := json.Marshal(n)
	if err != nil {
		return
	}
	m[MetadataKey] = b
	if md, err := json.Marshal(m); err == nil {
		job.Metadata = md
	}
}
