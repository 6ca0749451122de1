package cli

import (
	"flag"
	"time"

	"github.com/heed-go/heed/internal/duration"
)

// durationValue is a flag.Value that parses with duration.Parse.
type durationValue struct{ d *time.Duration }

func (v durationValue) String() string {
	if v.d == nil {
		return ""
	}
	return v.d.String()
}

func (v durationValue) Set(s string) error {
	d, err := duration.Parse(s)
	if err != nil {
		return err
	}
	*v.d = d
	return nil
}

// durationVar defines a duration flag, as flag.DurationVar does, that also
// takes bare seconds and days (see duration.Parse).
func durationVar(fs *flag.FlagSet, p *time.Duration, name string, value time.Duration, usage string) {
	*p = value
	fs.Var(durationValue{p}, name, usage)
}

// durationFlag defines a duration flag, as flag.Duration does, that also
// takes bare seconds and days (see duration.Parse).
func durationFlag(fs *flag.FlagSet, name string, value time.Duration, usage string) *time.Duration {
	p := new(time.Duration)
	durationVar(fs, p, name, value, usage)
	return p
}
