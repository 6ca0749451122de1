package cli

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// codeSet is a flag.Value for a list of exit codes such as "2,64-78". Each
// use of the flag adds to the set.
type codeSet struct {
	codes map[int]bool
}

func (c *codeSet) String() string {
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

func (c *codeSet) Set(s string) error {
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

func (c *codeSet) has(code int) bool { return c.codes[code] }

// exitPolicy says which exit codes of a command are worth retrying.
type exitPolicy struct {
	permanent codeSet // never retried
	transient codeSet // when not empty, the only codes retried
}

// defaultPermanent are never retried unless listed in --transient-codes:
// the shell's "cannot execute" and "command not found".
var defaultPermanent = []int{exitCannotExec, exitNotFound}

// check returns an error when a code is listed both as permanent and as
// transient.
func (e *exitPolicy) check() error {
	for code := range e.permanent.codes {
		if e.transient.has(code) {
			return fmt.Errorf("exit code %d is in both --permanent-codes and --transient-codes", code)
		}
	}
	return nil
}

// retryable reports whether a command that exited with code may be retried.
func (e *exitPolicy) retryable(code int) bool {
	switch {
	case e.permanent.has(code):
		return false
	case len(e.transient.codes) > 0:
		return e.transient.has(code)
	}
	return !slices.Contains(defaultPermanent, code)
}
