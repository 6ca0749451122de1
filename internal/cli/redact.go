package cli

import (
	"errors"
	"flag"

	"github.com/heed-go/heed/internal/redact"
	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/retry"
)

// maxLine is the most of a decision a worker line prints: 1 KiB, with the
// cut marked. The history keeps more (queue.MaxErrorText): see heed jobs
// show.
const maxLine = 1 << 10

// workerDecision is d as a worker line prints it: its error redacted and
// the whole cut at maxLine.
func workerDecision(d retry.Decision) string {
	if d.Err != nil {
		// Room for the rest of the line ("attempt N: ", the decision).
		d.Err = errors.New(redact.Text(redact.Cut(d.Err.Error(), maxLine-128)))
	}
	return redact.Cut(d.String(), maxLine)
}

// addRevealFlag adds --reveal, which prints job arguments as stored.
func addRevealFlag(fs *flag.FlagSet) *bool {
	return fs.Bool("reveal", false, "print job arguments as stored, secrets included (default: values of secret-looking names such as token or password, URL credentials and credential-like words are REDACTED)")
}

// redactJobs returns jobs as commands print them (see redactJob); the
// jobs given are not modified.
func redactJobs(jobs []*queue.Job, reveal bool) []*queue.Job {
	out := make([]*queue.Job, len(jobs))
	for i, j := range jobs {
		out[i] = redactJob(j, reveal)
	}
	return out
}

// redactJob returns j as commands print it: its arguments redacted
// (redact.JSON) unless reveal, and history texts longer than the queue
// keeps today (rows written before the caps) cut as it would cut them.
// j is not modified.
func redactJob(j *queue.Job, reveal bool) *queue.Job {
	if j == nil {
		return nil
	}
	c := *j
	if !reveal {
		c.Args = redact.JSON(j.Args)
	}
	copied := false
	for i, a := range j.History {
		if len(a.Error) > queue.MaxErrorText || len(a.Panic) > queue.MaxPanicText {
			if !copied {
				c.History, copied = append([]queue.Attempt(nil), j.History...), true
			}
			c.History[i].Error = redact.Cut(a.Error, queue.MaxErrorText)
			c.History[i].Panic = redact.Cut(a.Panic, queue.MaxPanicText)
		}
	}
	return &c
}
