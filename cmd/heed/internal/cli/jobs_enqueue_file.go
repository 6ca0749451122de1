package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/heed-go/heed/cmd/heed/internal/jobkinds"
	"github.com/heed-go/heed/cmd/heed/internal/jobtext"
	"github.com/heed-go/heed/cmd/heed/internal/storeurl"
	"github.com/heed-go/heed/internal/textfmt"
	"github.com/heed-go/heed/queue"
)

// maxFileErrors is how many bad lines enqueue --file reports one by one.
const maxFileErrors = 10

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
	items, errs, err := jobkinds.ReadLines(r, defaults, time.Now())
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
		fmt.Fprintf(s.stderr, "heed %s: %s in %s: nothing enqueued\n", name, textfmt.Plural(len(errs), "bad line", "bad lines"), src)
		return exitUsage
	}
	if len(items) == 0 {
		return usageError(s, name, fmt.Errorf("%s has no jobs", src))
	}
	d, c, code := openJobs(ctx, s, name, db, storeurl.Create)
	if d == nil {
		return code
	}
	defer d.Close()
	res, err := c.EnqueueMany(ctx, items)
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
		jobtext.WriteJSON(s.stdout, struct {
			Enqueued int `json:"enqueued"`
			Existing int `json:"existing"`
		}{inserted, len(res) - inserted})
		return exitOK
	}
	fmt.Fprintf(s.stdout, "enqueued %s from %s", textfmt.Plural(inserted, "job", "jobs"), src)
	if n := len(res) - inserted; n > 0 {
		fmt.Fprintf(s.stdout, " (%d already held by their unique keys: not enqueued again)", n)
	}
	fmt.Fprintln(s.stdout)
	return exitOK
}
