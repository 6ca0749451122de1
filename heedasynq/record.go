package heedasynq

import (
	"context"
	"encoding/json"
	"time"

	"github.com/hibiken/asynq"

	"github.com/heed-go/heed/internal/redact"
	"github.com/heed-go/heed/retry"
)

// record is heed's record of a task: the last decision heed took about it
// and why. The middleware writes it as the task's result (asynq's
// ResultWriter), which asynqmon and Inspector.GetTaskInfo show, whenever
// an attempt fails or is deferred, and once more when a task heed kept a
// record of succeeds. It is a JSON object:
//
//	{"action": "retry", "reason": "transient", "outcome": "transient",
//	 "attempt": 2, "delay": "1.6s", "at": "2026-12-04T16:00:01.6Z",
//	 "start": "2026-12-04T16:00:00Z"}
//
// action, reason and outcome are heed's stored words ([retry.Action.Key],
// [retry.Reason.Key], [retry.Outcome.Key]); attempt is heed's count; delay
// and at are the wait and the time of the next attempt as heed decided
// them (asynq runs it at the next whole second); start is when the task's
// first attempt started, from which its time budget counts; error is the
// error of a deferral, cut to 512 bytes.
type record struct {
	Action  string    `json:"action"`
	Reason  string    `json:"reason"`
	Outcome string    `json:"outcome,omitempty"`
	Attempt int       `json:"attempt"`
	Error   string    `json:"error,omitempty"`
	Delay   string    `json:"delay,omitempty"`
	At      time.Time `json:"at,omitzero"`
	Start   time.Time `json:"start,omitzero"`
}

const (
	actionRetry = "retry"
	maxErrorLen = 512
)

// record returns heed's record of the task id, which asynq has retried
// retried times: the one this process kept, or the one stored in Redis
// when the task failed before (in another process) and h can read it.
// A task's first attempt costs no Redis call.
func (h *Policy) record(ctx context.Context, id string, retried int) (record, bool) {
	h.mu.Lock()
	r, ok := h.records[id]
	h.mu.Unlock()
	if ok || retried == 0 || h.tasks == nil {
		return r, ok
	}
	queue, _ := asynq.GetQueueName(ctx)
	info, err := h.tasks.GetTaskInfo(queue, id)
	if err != nil || len(info.Result) == 0 || json.Unmarshal(info.Result, &r) != nil || r.Action == "" {
		return record{}, false
	}
	return r, true
}

// keep records decision d about task t: in this process while the task
// goes on, as the task's result in Redis, and with the observer.
func (h *Policy) keep(ctx context.Context, t *asynq.Task, id string, d retry.Decision, hist *retry.History, dur time.Duration) {
	r := record{Action: d.Action.Key(), Reason: d.Reason.Key(), Attempt: d.Attempt, Start: hist.Start}
	if d.Action == retry.Retry || d.Action == retry.GiveUp {
		r.Outcome = d.Outcome.Key()
	}
	if d.Action == retry.Retry || d.Action == retry.Defer {
		r.Delay, r.At = d.Delay.String(), d.At.UTC()
	}
	if d.Err != nil && d.Action == retry.Defer {
		r.Error = redact.Record(d.Err.Error(), maxErrorLen)
	}
	h.mu.Lock()
	if d.Action == retry.Retry || d.Action == retry.Defer {
		if len(h.records) >= maxRecords {
			for k := range h.records { // forget some; they are in Redis
				delete(h.records, k)
				if len(h.records) < maxRecords*9/10 {
					break
				}
			}
		}
		h.records[id] = r
	} else {
		delete(h.records, id)
	}
	h.mu.Unlock()
	if w := t.ResultWriter(); w != nil {
		if b, err := json.Marshal(r); err == nil {
			_, _ = w.Write(b) // the record is for people; the task goes on without it
		}
	}
	if h.p.Observe != nil {
		h.p.Observe(ctx, retry.Event{Decision: d, Duration: dur})
	}
}
