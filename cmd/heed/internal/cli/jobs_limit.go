package cli

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/heed-go/heed/cmd/heed/internal/storeurl"
	"github.com/heed-go/heed/internal/duration"
	"github.com/heed-go/heed/queue"
)

var jobsLimitDoc = helpDoc{
	file:   "jobs-limit",
	groups: []flagGroup{{"Limit flags", []string{"concurrency", "rate", "off"}}, {"Database flags", []string{"db"}}},
}

// jobsLimitMain is "heed jobs limit": lists the queues' global limits, or
// sets those of the queues named.
func jobsLimitMain(ctx context.Context, s streams, args []string) int {
	const name = "jobs limit"
	fs := newFlagSet(name)
	db := addDBFlag(fs)
	conc := fs.Int("concurrency", 0, "at most `N` of the queue's jobs running at once, across every worker (0: no limit)")
	rate := fs.String("rate", "", "at most N of the queue's jobs started per second (`N[/PERIOD]`: per PERIOD, as 100/1m or 50/s), across every worker")
	off := fs.Bool("off", false, "remove the queues' limits")
	pos, code, done := parseInterleaved(fs, args, s, jobsLimitDoc)
	if done {
		return code
	}
	var l queue.Limit
	set := isSet(fs, "concurrency") || isSet(fs, "rate")
	switch {
	case len(pos) == 0 && (set || *off):
		return usageError(s, name, errors.New("name the queues to limit"))
	case len(pos) > 0 && !set && !*off:
		return usageError(s, name, errors.New("give --concurrency, --rate or --off"))
	case set && *off:
		return usageError(s, name, errors.New("--off removes the limits: give it alone"))
	case set:
		var err error
		if l.Rate, l.RatePeriod, err = parseRate(*rate); err != nil {
			return usageError(s, name, err)
		}
		l.Concurrency = *conc
		if err := l.Validate(); err != nil {
			return usageError(s, name, err)
		}
	}
	mode := storeurl.Write
	if len(pos) == 0 {
		mode = storeurl.Read
	}
	d, c, code := openJobs(ctx, s, name, *db, mode)
	if d == nil {
		return code
	}
	defer d.Close()
	for _, q := range pos {
		err := c.SetLimit(ctx, q, l)
		if errors.Is(err, queue.ErrInvalid) {
			return usageError(s, name, err)
		}
		if err != nil {
			return jobsFail(ctx, s, name, err)
		}
		if l.IsZero() {
			fmt.Fprintf(s.stdout, "queue %s: no limit\n", q)
		} else {
			fmt.Fprintf(s.stdout, "queue %s: %v, across every worker\n", q, l)
		}
	}
	if len(pos) > 0 {
		return exitOK
	}
	limits, err := c.Limits(ctx)
	if err != nil {
		return jobsFail(ctx, s, name, err)
	}
	if len(limits) == 0 {
		fmt.Fprintln(s.stdout, "no queue has a limit")
	}
	for _, ql := range limits {
		fmt.Fprintf(s.stdout, "queue %s: %v\n", ql.Queue, ql.Limit)
	}
	return exitOK
}

// parseRate parses --rate: "" (no limit), N (a second) or N/PERIOD,
// where PERIOD may be a unit alone (50/s, 100/h).
func parseRate(v string) (int, time.Duration, error) {
	if v == "" {
		return 0, 0, nil
	}
	n, per, hasPer := strings.Cut(v, "/")
	rate, err := strconv.Atoi(n)
	if err != nil {
		return 0, 0, fmt.Errorf("--rate %q: want N or N/PERIOD, such as 50 or 100/1m", v)
	}
	if !hasPer {
		return rate, 0, nil
	}
	if per != "" && (per[0] < '0' || per[0] > '9') {
		per = "1" + per // a unit alone, as in 50/s or 100/h, is one of it
	}
	d, err := duration.Parse(per)
	if err != nil {
		return 0, 0, fmt.Errorf("--rate %q: %w", v, err)
	}
	return rate, d, nil
}
