package jobkinds

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/heed-go/heed/internal/duration"
	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/queue/jobstore"
)

// fileLine is one line of a jobs file.
type fileLine struct {
	Kind     string          `json:"kind"`
	Args     json.RawMessage `json:"args"`
	Queue    *string         `json:"queue"`
	Priority *int            `json:"priority"`
	Key      *string         `json:"key"`
	Attempts *int            `json:"attempts"`
	In       *string         `json:"in"`
	At       *string         `json:"at"`
}

// LineError is a bad line of a jobs file.
type LineError struct {
	Line int   // from 1
	Err  error // what is wrong with it
}

// Error is "line N: " and what is wrong.
func (e LineError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }

// ReadLines reads a jobs file (heed jobs enqueue --file): one JSON object
// per line, such as
//
//	{"kind": "noop", "args": {}, "queue": "mail", "in": "10m", "key": "k1"}
//
// with the fields kind (required), args, queue, priority, key, attempts,
// in and at; defaults gives the options of the fields a line leaves out.
// Blank lines are skipped. Each job is checked and prepared as [Prepare] and the queue
// check it; now is the time "in" counts from. It returns the jobs, the bad
// lines (each a [LineError]), and an error when r cannot be read.
func ReadLines(r io.Reader, defaults queue.EnqueueOptions, now time.Time) ([]queue.EnqueueItem, []error, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), jobstore.MaxArgs+64<<10)
	var (
		items []queue.EnqueueItem
		errs  []error
	)
	n := 0
	for sc.Scan() {
		n++
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		it, err := parseLine(line, defaults, now)
		if err != nil {
			errs = append(errs, LineError{n, err})
			continue
		}
		items = append(items, it)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			err = fmt.Errorf("line %d is longer than %d bytes", n+1, jobstore.MaxArgs+64<<10)
		}
		return nil, nil, err
	}
	return items, errs, nil
}

func parseLine(line []byte, defaults queue.EnqueueOptions, now time.Time) (queue.EnqueueItem, error) {
	var j fileLine
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		return queue.EnqueueItem{}, fmt.Errorf("not a job object: %v", strings.TrimPrefix(err.Error(), "json: "))
	}
	if dec.More() {
		return queue.EnqueueItem{}, errors.New("more than one JSON value")
	}
	if j.Kind == "" {
		return queue.EnqueueItem{}, errors.New(`no "kind"`)
	}
	if len(j.Args) == 0 || string(j.Args) == "null" {
		j.Args = json.RawMessage("{}")
	}
	args, err := Prepare(j.Kind, j.Args)
	if err != nil {
		return queue.EnqueueItem{}, err
	}
	j.Args = args
	o := defaults
	if j.Queue != nil {
		o.Queue = *j.Queue
	}
	if j.Priority != nil {
		o.Priority = *j.Priority
	}
	if j.Key != nil {
		o.UniqueKey = *j.Key
	}
	if j.Attempts != nil {
		if *j.Attempts == 0 || *j.Attempts < -1 {
			return queue.EnqueueItem{}, fmt.Errorf(`"attempts" is %d, must be at least 1 (or -1 for no limit)`, *j.Attempts)
		}
		o.MaxAttempts = *j.Attempts
	}
	if j.In != nil || j.At != nil {
		o.In, o.At = 0, time.Time{}
	}
	if j.In != nil {
		d, err := duration.Parse(*j.In)
		if err != nil {
			return queue.EnqueueItem{}, fmt.Errorf(`"in": %v`, err)
		}
		o.In = d
	}
	if j.At != nil {
		t, err := time.Parse(time.RFC3339, *j.At)
		if err != nil {
			return queue.EnqueueItem{}, fmt.Errorf(`"at" %q is not an RFC 3339 time such as 2026-12-01T08:00:00Z`, *j.At)
		}
		o.At = t
	}
	// Everything the queue would refuse, refused now.
	if _, err := queue.NewJobInsert(j.Kind, j.Args, o, now); err != nil {
		return queue.EnqueueItem{}, err
	}
	return queue.EnqueueItem{Kind: j.Kind, Args: j.Args, Options: o}, nil
}
