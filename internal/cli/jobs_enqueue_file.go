package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/heed-go/heed/internal/duration"
	"github.com/heed-go/heed/internal/jobkinds"
	"github.com/heed-go/heed/queue"
)

// maxFileErrors is how many bad lines enqueue --file reports one by one.
const maxFileErrors = 10

// fileJob is one line of enqueue --file.
type fileJob struct {
	Kind     string          `json:"kind"`
	Args     json.RawMessage `json:"args"`
	Queue    *string         `json:"queue"`
	Priority *int            `json:"priority"`
	Key      *string         `json:"key"`
	Attempts *int            `json:"attempts"`
	In       *string         `json:"in"`
	At       *string         `json:"at"`
}

// jobsEnqueueFile is "heed jobs enqueue --file FILE": defaults are the
// options the flags gave.
func jobsEnqueueFile(ctx context.Context, s streams, name, file, db string, defaults queue.EnqueueOptions, asJSON bool) int {
	var r io.Reader = s.stdin
	src := "stdin"
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return usageError(s, name, flagError("file", "%v", err))
		}
		defer f.Close()
		r, src = f, file
	}
	items, errs, err := readJobLines(r, defaults, time.Now())
	if err != nil {
		return usageError(s, name, fmt.Errorf("read %s: %w", src, err))
	}
	if len(errs) > 0 {
		for i, e := range errs {
			if i == maxFileErrors {
				fmt.Fprintf(s.stderr, "heed %s: %s: ... and %d more bad lines\n", name, src, len(errs)-i)
				break
			}
			fmt.Fprintf(s.stderr, "heed %s: %s: %v\n", name, src, e)
		}
		fmt.Fprintf(s.stderr, "heed %s: %s in %s: nothing enqueued\n", name, jobsPlural(len(errs), "bad line", "bad lines"), src)
		return exitUsage
	}
	if len(items) == 0 {
		return usageError(s, name, fmt.Errorf("%s has no jobs", src))
	}
	d, err := openDB(ctx, resolveDB(db), openCreate)
	if err != nil {
		return jobsFail(ctx, s, name, err)
	}
	defer d.Close()
	res, err := queue.NewClient(d.Jobs(), queue.ClientConfig{}).EnqueueMany(ctx, items)
	if err != nil {
		return jobsFail(ctx, s, name, err)
	}
	inserted := 0
	for _, r := range res {
		if r.Inserted {
			inserted++
		}
	}
	if asJSON {
		jobsWriteJSON(s.stdout, struct {
			Enqueued int `json:"enqueued"`
			Existing int `json:"existing"`
		}{inserted, len(res) - inserted})
		return exitOK
	}
	fmt.Fprintf(s.stdout, "enqueued %s from %s", jobsPlural(inserted, "job", "jobs"), src)
	if n := len(res) - inserted; n > 0 {
		fmt.Fprintf(s.stdout, " (%d already held by their unique keys: not enqueued again)", n)
	}
	fmt.Fprintln(s.stdout)
	return exitOK
}

// lineError is a bad line of enqueue --file.
type lineError struct {
	line int
	err  error
}

func (e lineError) Error() string { return fmt.Sprintf("line %d: %v", e.line, e.err) }

// readJobLines reads the jobs of r, one JSON object per line, checking
// each as heed jobs enqueue checks its arguments. It returns the jobs, the
// bad lines, and an error when r cannot be read.
func readJobLines(r io.Reader, defaults queue.EnqueueOptions, now time.Time) ([]queue.EnqueueItem, []error, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), queue.MaxArgs+64<<10)
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
		it, err := parseJobLine(line, defaults, now)
		if err != nil {
			errs = append(errs, lineError{n, err})
			continue
		}
		items = append(items, it)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			err = fmt.Errorf("line %d is longer than %d bytes", n+1, queue.MaxArgs+64<<10)
		}
		return nil, nil, err
	}
	return items, errs, nil
}

func parseJobLine(line []byte, defaults queue.EnqueueOptions, now time.Time) (queue.EnqueueItem, error) {
	var j fileJob
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
	if err := jobkinds.Validate(j.Kind, j.Args); err != nil {
		return queue.EnqueueItem{}, err
	}
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
