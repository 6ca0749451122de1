// Package jobtext is how the heed command prints jobs: a table of jobs, a
// job with its whole history, their JSON form, and the redaction of their
// arguments and oversized history texts before any of these.
package jobtext

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/heed-go/heed/internal/liststate"
	"github.com/heed-go/heed/internal/redact"
	"github.com/heed-go/heed/internal/textfmt"
	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/queue/jobstore"
)

// JSON is a job as --json prints it; the field names are stable.
type JSON struct {
	ID          int64            `json:"id"`
	Kind        string           `json:"kind"`
	Queue       string           `json:"queue"`
	Args        json.RawMessage  `json:"args"`
	State       queue.State      `json:"state"`
	Priority    int              `json:"priority"`
	Attempt     int              `json:"attempt"`
	MaxAttempts int              `json:"max_attempts,omitempty"`
	Policy      *queue.JobPolicy `json:"policy,omitempty"`
	AvailableAt time.Time        `json:"available_at"`
	CreatedAt   time.Time        `json:"created_at"`
	StartedAt   *time.Time       `json:"started_at,omitempty"`
	AttemptedAt *time.Time       `json:"attempted_at,omitempty"`
	FinishedAt  *time.Time       `json:"finished_at,omitempty"`
	UniqueKey   string           `json:"unique_key,omitempty"`
	LeaseUntil  *time.Time       `json:"lease_until,omitempty"`
	Worker      string           `json:"worker,omitempty"`
	DeadReason  string           `json:"dead_reason,omitempty"`
	History     []queue.Attempt  `json:"history"`
}

// Time is t in a JSON form: nil, left out, for the zero time.
func Time(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// ToJSON returns j in its JSON form.
func ToJSON(j *queue.Job) JSON {
	v := JSON{ID: j.ID, Kind: j.Kind, Queue: j.Queue, Args: j.Args, State: j.State, Priority: j.Priority,
		Attempt: j.Attempt, MaxAttempts: j.MaxAttempts, AvailableAt: j.AvailableAt, CreatedAt: j.CreatedAt,
		StartedAt: Time(j.StartedAt), AttemptedAt: Time(j.AttemptedAt), FinishedAt: Time(j.FinishedAt),
		UniqueKey: j.UniqueKey, LeaseUntil: Time(j.LeaseUntil), Worker: j.Worker, DeadReason: j.DeadReason,
		History: j.History}
	if !j.Policy.IsZero() {
		p := j.Policy
		v.Policy = &p
	}
	if v.History == nil {
		v.History = []queue.Attempt{}
	}
	return v
}

// WriteJSON writes v as indented JSON.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// State describes a job's state with its reason or time.
func State(j *queue.Job, now time.Time) string {
	switch j.State {
	case queue.StateDead:
		return "dead (" + j.DeadReason + ")"
	case queue.StateAvailable:
		if j.AvailableAt.After(now) {
			return "scheduled " + textfmt.Ago(j.AvailableAt, now)
		}
		return "available"
	}
	return string(j.State)
}

// WriteTable writes one line per job.
func WriteTable(w io.Writer, jobs []*queue.Job, now time.Time) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tKIND\tQUEUE\tSTATE\tATTEMPTS\tCREATED\tLAST ERROR\tARGS")
	for _, j := range jobs {
		last := liststate.LastError(j)
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", j.ID, j.Kind, j.Queue, State(j, now), j.Attempt,
			textfmt.Ago(j.CreatedAt, now), textfmt.Shorten(last, 40), textfmt.Shorten(string(j.Args), 40))
	}
	tw.Flush()
}

// Write writes a job and its full history.
func Write(w io.Writer, j *queue.Job, now time.Time) {
	ts := func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.UTC().Format("2006-01-02T15:04:05.000Z") + " (" + textfmt.Ago(t, now) + ")"
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "job\t%d\n", j.ID)
	fmt.Fprintf(tw, "kind\t%s\n", j.Kind)
	fmt.Fprintf(tw, "queue\t%s (priority %d)\n", j.Queue, j.Priority)
	fmt.Fprintf(tw, "state\t%s\n", State(j, now))
	fmt.Fprintf(tw, "args\t%s\n", j.Args)
	maxA := "the worker's"
	if j.MaxAttempts > 0 {
		maxA = fmt.Sprint(j.MaxAttempts)
	} else if j.MaxAttempts < 0 {
		maxA = "unlimited"
	}
	fmt.Fprintf(tw, "attempts\t%d (limit: %s)\n", j.Attempt, maxA)
	if !j.Policy.IsZero() {
		fmt.Fprintf(tw, "policy\t%s\n", j.Policy.String())
	}
	if j.UniqueKey != "" {
		fmt.Fprintf(tw, "unique key\t%s\n", j.UniqueKey)
	}
	fmt.Fprintf(tw, "created\t%s\n", ts(j.CreatedAt))
	fmt.Fprintf(tw, "available\t%s\n", ts(j.AvailableAt))
	fmt.Fprintf(tw, "started\t%s\n", ts(j.StartedAt))
	fmt.Fprintf(tw, "finished\t%s\n", ts(j.FinishedAt))
	if j.State == queue.StateRunning {
		fmt.Fprintf(tw, "lease\t%s, until %s\n", j.Worker, ts(j.LeaseUntil))
	}
	tw.Flush()
	fmt.Fprintf(w, "\nhistory (%s):\n", textfmt.Plural(len(j.History), "entry", "entries"))
	if len(j.History) == 0 {
		fmt.Fprintln(w, "  (no attempt yet)")
		return
	}
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  ATTEMPT\tSTARTED\tTOOK\tOUTCOME\tDECISION\tDELAY\tWORKER\tERROR")
	for _, a := range j.History {
		if a.Outcome == jobstore.OutcomeCut {
			fmt.Fprintf(tw, "  ...\t\t\t%s\t\t\t\t%s\n", a.Outcome, a.String())
			continue
		}
		dec := a.Action
		if act, err := jobstore.ParseAction(a.Action); err == nil {
			dec = act.String() // "give up" for the key "give_up"
		}
		if a.Reason != "" && a.Reason != "success" {
			dec += " (" + a.Reason + ")"
		}
		delay := "-"
		if a.Delay > 0 {
			delay = textfmt.Round(a.Delay)
		}
		n := fmt.Sprint(a.Attempt)
		if a.Attempt == 0 {
			n = "-"
		}
		outcome := a.Outcome
		if a.Count > 1 { // a run of deferrals, from its first to its last
			outcome = fmt.Sprintf("%s %d times", a.Outcome, a.Count)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", n, a.StartedAt.UTC().Format("15:04:05.000"),
			textfmt.Round(a.FinishedAt.Sub(a.StartedAt)), outcome, dec, delay, a.Worker, textfmt.Shorten(a.Error, 80))
	}
	tw.Flush()
	for _, a := range j.History {
		if a.Panic != "" {
			fmt.Fprintf(w, "\npanic in attempt %d: %s\n%s\n", a.Attempt, a.Error, strings.TrimRight(a.Panic, "\n"))
		}
	}
}

// RedactAll returns jobs as commands print them (see [Redact]); the
// jobs given are not modified.
func RedactAll(jobs []*queue.Job, reveal bool) []*queue.Job {
	out := make([]*queue.Job, len(jobs))
	for i, j := range jobs {
		out[i] = Redact(j, reveal)
	}
	return out
}

// Redact returns j as commands print it: its arguments redacted
// (redact.JSON) unless reveal, and its history texts redacted (redact.Text)
// and cut as the queue keeps them today, for rows written by older
// versions, before the redaction and the caps. j is not modified.
func Redact(j *queue.Job, reveal bool) *queue.Job {
	if j == nil {
		return nil
	}
	c := *j
	if !reveal {
		c.Args = redact.JSON(j.Args)
	}
	copied := false
	for i, a := range j.History {
		e := redact.Cut(redact.Text(redact.Cut(a.Error, jobstore.MaxErrorText)), jobstore.MaxErrorText)
		p := redact.Cut(redact.Text(redact.Cut(a.Panic, jobstore.MaxPanicText)), jobstore.MaxPanicText)
		if e != a.Error || p != a.Panic {
			if !copied {
				c.History, copied = append([]queue.Attempt(nil), j.History...), true
			}
			c.History[i].Error, c.History[i].Panic = e, p
		}
	}
	return &c
}
