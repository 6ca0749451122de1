package cmdrun

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// CodeSet is a flag.Value for a list of exit codes such as "2,64-78". Each
// use of the flag adds to the set. The zero value is an empty set.
type CodeSet struct {
	codes map[int]bool
}

// String lists the codes in order: "1,2,64,65".
func (c *CodeSet) String() string {
	if c == nil || len(c.codes) == 0 {
		return ""
	}
	list := make([]int, 0, len(c.codes))
	for code := range c.codes {
		list = append(list, code)
	}
	slices.Sort(list)
	parts := make([]string, len(list))
	for i, code := range list {
		parts[i] = strconv.Itoa(code)
	}
	return strings.Join(parts, ",")
}

// Set adds the codes of s, a comma-separated list of codes and ranges.
func (c *CodeSet) Set(s string) error {
	if c.codes == nil {
		c.codes = map[int]bool{}
	}
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		first, err := parseCode(lo)
		if err != nil {
			return err
		}
		last := first
		if isRange {
			if last, err = parseCode(hi); err != nil {
				return err
			}
			if last < first {
				return fmt.Errorf("range %q is backwards", part)
			}
		}
		for code := first; code <= last; code++ {
			c.codes[code] = true
		}
	}
	return nil
}

func parseCode(s string) (int, error) {
	n, err := strconv.Atoi(s)
	switch {
	case err != nil:
		return 0, fmt.Errorf("%q is not an exit code", s)
	case n == 0:
		return 0, fmt.Errorf("0 is success, not a failure to classify")
	case n < 0 || n > 255:
		return 0, fmt.Errorf("%d is not an exit code (1 to 255)", n)
	}
	return n, nil
}

func (c *CodeSet) has(code int) bool { return c.codes[code] }

// Codes says which exit codes of a command are worth retrying. The zero
// value retries every code but [CannotExec] and [NotFound].
type Codes struct {
	Permanent CodeSet // never retried
	Transient CodeSet // when not empty, the only codes retried
}

// defaultPermanent are never retried unless listed in --transient-codes:
// the shell's "cannot execute" and "command not found".
var defaultPermanent = []int{CannotExec, NotFound}

// Check returns an error when a code is listed both as permanent and as
// transient.
func (e *Codes) Check() error {
	for code := range e.Permanent.codes {
		if e.Transient.has(code) {
			return fmt.Errorf("exit code %d is in both --permanent-codes and --transient-codes", code)
		}
	}
	return nil
}

// retryable reports whether a command that exited with code may be retried.
func (e *Codes) retryable(code int) bool {
	if e == nil {
		e = &Codes{}
	}
	switch {
	case e.Permanent.has(code):
		return false
	case len(e.Transient.codes) > 0:
		return e.Transient.has(code)
	}
	return !slices.Contains(defaultPermanent, code)
}
