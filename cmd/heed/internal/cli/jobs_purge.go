package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/heed-go/heed/cmd/heed/internal/storeurl"
	"github.com/heed-go/heed/internal/textfmt"
	"github.com/heed-go/heed/queue"
)

var jobsPurgeDoc = helpDoc{
	file:   "jobs-purge",
	groups: []flagGroup{{"Purge flags", []string{"succeeded-older-than"}}, {"Database flags", []string{"db"}}},
}

// jobsPurgeMain is "heed jobs purge".
func jobsPurgeMain(ctx context.Context, s streams, args []string) int {
	const name = "jobs purge"
	fs := newFlagSet(name)
	db := addDBFlag(fs)
	older := durationFlag(fs, "succeeded-older-than", 0, "delete jobs that succeeded more than this long ago (required)")
	if code, done := parseNoArgs(fs, args, s, jobsPurgeDoc); done {
		return code
	}
	if *older <= 0 {
		return usageError(s, name, errors.New("--succeeded-older-than is required and must be positive, such as 168h"))
	}
	d, c, code := openJobs(ctx, s, name, *db, storeurl.Write)
	if d == nil {
		return code
	}
	defer d.Close()
	n, err := c.Delete(ctx, queue.JobFilter{State: queue.StateSucceeded, FinishedBefore: time.Now().Add(-*older)})
	if err != nil {
		return jobsFail(ctx, s, name, err)
	}
	fmt.Fprintf(s.stdout, "purged %s that succeeded more than %v ago\n", textfmt.Plural(n, "job", "jobs"), *older)
	return exitOK
}
