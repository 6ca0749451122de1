// Package planfile reads the deadline plans that heed plan deadline checks
// ([deadline.Plan]) from YAML or JSON files ([Read], [Decode]) and from the
// command line's --step flags ([ParseStep]):
//
//	deadline: 2s
//	reserve: 100ms
//	steps:
//	  - name: stock
//	    p99: 120ms
//	    budget: 400ms
//	    attempts: 2
//	    attempt_timeout: 30s
//	    backoff: {kind: exponential, base: 50ms, cap: 1s, multiplier: 2, jitter: full}
//
// Durations are Go durations ("120ms", "2s"), as in every policy document;
// a step's attempts (attempts, attempt_timeout, backoff) are read by
// retry.Policy's decoder under its JSON names. The --step flag takes the
// command line's durations (seconds alone, days) too.
package planfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/heed-go/heed/deadline"
	"github.com/heed-go/heed/internal/docjson"
	"github.com/heed-go/heed/internal/duration"
	"github.com/heed-go/heed/retry"
)

// Limits on plan input.
const (
	MaxSize  = 1 << 20 // bytes of a plan file
	MaxSteps = 100     // steps of a plan
)

var stepKeys = []string{"name", "p99", "budget", "attempts", "attempt_timeout", "backoff", "base", "cap", "multiplier", "jitter"}

// renamedKeys are the fields of a step that plans once spelled otherwise,
// by their old name: plans take the names of retry.Policy's JSON form.
var renamedKeys = map[string]string{
	"timeout": "attempt_timeout", // deadline.PlanStep.AttemptTimeout, retry.Policy.AttemptTimeout
}

// renamedError returns the error for the old field name old, or nil when
// old was never renamed.
func renamedError(old string) error {
	if now, ok := renamedKeys[old]; ok {
		return fmt.Errorf("field %q of a step is now called %q (the name of retry.Policy's JSON form); rename it", old, now)
	}
	return nil
}

// ParseStep parses one step as the heed command's --step flag spells it,
// a comma-separated list of KEY=VALUE: "name=stock,p99=120ms,budget=300ms,
// attempts=2,attempt_timeout=30s,backoff=exponential,base=50ms,cap=1s,
// multiplier=2,jitter=full". name is required; the keys are those of a
// step in a file, with the backoff's fields at the top level.
func ParseStep(spec string) (deadline.PlanStep, error) {
	var fields rawStep
	var bo docjson.Backoff
	seen := map[string]bool{}
	// The flag takes durations as the command line does (seconds alone,
	// days): they reach the policy decoder as Go durations.
	cli := func(key, val string) (string, error) {
		d, err := duration.Parse(val)
		if err != nil {
			return "", fmt.Errorf("%s: %w", key, err)
		}
		return d.String(), nil
	}
	for part := range strings.SplitSeq(spec, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		key, val, ok := strings.Cut(part, "=")
		key, val = strings.ToLower(strings.TrimSpace(key)), strings.TrimSpace(val)
		if !ok {
			return deadline.PlanStep{}, fmt.Errorf("%q is not KEY=VALUE", part)
		}
		if seen[key] {
			return deadline.PlanStep{}, fmt.Errorf("%s given twice", key)
		}
		seen[key] = true
		var err error
		switch key {
		case "p99", "budget", "attempt_timeout", "base", "cap":
			if val, err = cli(key, val); err != nil {
				return deadline.PlanStep{}, err
			}
		}
		switch key {
		case "name":
			fields.Name = val
		case "p99":
			fields.P99 = val
		case "budget":
			fields.Budget = val
		case "attempt_timeout":
			fields.AttemptTimeout = val
		case "attempts":
			n, err := strconv.Atoi(val)
			if err != nil {
				return deadline.PlanStep{}, fmt.Errorf("attempts %q is not a whole number", val)
			}
			fields.Attempts = &n
		case "backoff":
			bo.Kind = val
		case "base":
			bo.Base = val
		case "cap":
			bo.Cap = val
		case "jitter":
			bo.Jitter = val
		case "multiplier":
			f, err := strconv.ParseFloat(val, 64)
			if err != nil {
				return deadline.PlanStep{}, fmt.Errorf("multiplier %q is not a number", val)
			}
			bo.Multiplier = &f
		default:
			if err := renamedError(key); err != nil {
				return deadline.PlanStep{}, err
			}
			return deadline.PlanStep{}, fmt.Errorf("unknown key %q (want %s)", key, strings.Join(stepKeys, ", "))
		}
	}
	if fields.Name == "" && !seen["name"] {
		return deadline.PlanStep{}, errors.New("missing name=NAME: every step needs a name")
	}
	fields.Backoff = &bo
	return fields.step("")
}

// planFile is the plan as a YAML or JSON file spells it.
type planFile struct {
	Deadline string    `yaml:"deadline" json:"deadline"`
	Reserve  string    `yaml:"reserve" json:"reserve"`
	Steps    []rawStep `yaml:"steps" json:"steps"`
}

// rawStep is a step as a file spells it: its own fields, and the policy
// fields of its attempts (attempts, attempt_timeout, backoff) under the
// names of retry.Policy's JSON form, read by its one decoder.
type rawStep struct {
	Name           string `yaml:"name" json:"name"`
	P99            string `yaml:"p99" json:"p99"`
	Budget         string `yaml:"budget" json:"budget"`
	docjson.Policy `yaml:",inline"`
}

// parseDur parses a duration field, a Go duration as in every policy
// document; "" is 0 (not given).
func parseDur(field, s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := docjson.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", field, err)
	}
	return d, nil
}

// maxAttempts is the most attempts a step may make: deadline.PlanStep's
// limit (its Attempts field says so; TestMaxAttempts holds the two
// together), checked here to word the error as the file does.
const maxAttempts = 1000

// step converts r; where prefixes errors ("step 2 (stock): ").
func (r rawStep) step(where string) (deadline.PlanStep, error) {
	st := deadline.PlanStep{Name: r.Name, Attempts: 1}
	var err error
	wrap := func(e error) error {
		if where == "" {
			return e
		}
		return fmt.Errorf("%s: %w", where, e)
	}
	if st.P99, err = parseDur("p99", r.P99); err != nil {
		return st, wrap(err)
	}
	if st.Budget, err = parseDur("budget", r.Budget); err != nil {
		return st, wrap(err)
	}
	// A step's attempts take the policy fields a step has: its time is
	// its budget, so it has no time_budget, min_attempt_time or
	// max_pushback of its own.
	for _, f := range []struct{ name, raw string }{{"time_budget", r.TimeBudget},
		{"min_attempt_time", r.MinAttemptTime}, {"max_pushback", r.MaxPushback}} {
		if f.raw != "" {
			return st, wrap(fmt.Errorf("%s: not a field of a step (its budget bounds its attempts)", f.name))
		}
	}
	doc, err := r.Policy.JSON()
	if err != nil {
		return st, wrap(err)
	}
	var pol retry.Policy
	if err := pol.UnmarshalJSON(doc); err != nil {
		return st, wrap(errors.New(strings.TrimPrefix(err.Error(), "retry: policy: ")))
	}
	st.AttemptTimeout, st.Backoff = pol.AttemptTimeout, pol.Backoff
	if r.Attempts != nil {
		if n := pol.Attempts; n < 1 || n > maxAttempts {
			return st, wrap(fmt.Errorf("attempts is %d, must be from 1 to %d", n, maxAttempts))
		}
		st.Attempts = pol.Attempts
	}
	if b := r.Backoff; b != nil {
		for _, f := range []struct {
			name string
			raw  string
			d    time.Duration
		}{{"base", b.Base, st.Backoff.Base}, {"cap", b.Cap, st.Backoff.Cap}} {
			if f.raw != "" && f.d <= 0 {
				return st, wrap(fmt.Errorf("%s is %v, must be positive (leave it out for the default)", f.name, f.d))
			}
		}
		if m := b.Multiplier; m != nil && *m < 1 {
			return st, wrap(fmt.Errorf("multiplier is %v, must be a number of at least 1", *m))
		}
	}
	return st, nil
}

// Read reads and decodes the plan in file ("-" reads stdin) with
// [Decode]. Its errors start with the file's name ("stdin" for "-").
func Read(file string, stdin io.Reader) (deadline.Plan, error) {
	var (
		data []byte
		err  error
	)
	if file == "-" {
		data, err = io.ReadAll(io.LimitReader(stdin, MaxSize+1))
	} else {
		var f *os.File
		if f, err = os.Open(file); err == nil {
			data, err = io.ReadAll(io.LimitReader(f, MaxSize+1))
			f.Close()
		}
	}
	if err != nil {
		return deadline.Plan{}, err
	}
	p, err := Decode(file, data)
	if err != nil {
		if file == "-" {
			file = "stdin"
		}
		return deadline.Plan{}, fmt.Errorf("%s: %w", file, err)
	}
	return p, nil
}

// Decode decodes a plan file of at most [MaxSize] bytes: JSON when the name
// ends in .json or the content starts with "{", YAML otherwise. Unknown
// fields, values of the wrong type and impossible values are errors naming
// the line or the step; the plan's own rules (budgets, deadline) are left to
// plan.Check.
func Decode(file string, data []byte) (deadline.Plan, error) {
	if len(data) > MaxSize {
		return deadline.Plan{}, fmt.Errorf("larger than %d bytes", MaxSize)
	}
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return deadline.Plan{}, errors.New("empty plan (want deadline, reserve and steps)")
	}
	var pf planFile
	ext := strings.ToLower(filepath.Ext(file))
	if ext == ".json" || (ext != ".yaml" && ext != ".yml" && trimmed[0] == '{') {
		if err := decodeJSONPlan(data, &pf); err != nil {
			return deadline.Plan{}, err
		}
	} else {
		dec := yaml.NewDecoder(bytes.NewReader(data))
		dec.KnownFields(true)
		if err := dec.Decode(&pf); err != nil {
			return deadline.Plan{}, yamlError(err)
		}
	}
	return pf.plan()
}

func (pf planFile) plan() (deadline.Plan, error) {
	var p deadline.Plan
	var err error
	if p.Deadline, err = parseDur("deadline", pf.Deadline); err != nil {
		return p, err
	}
	if p.Reserve, err = parseDur("reserve", pf.Reserve); err != nil {
		return p, err
	}
	if len(pf.Steps) > MaxSteps {
		return p, fmt.Errorf("%d steps, at most %d", len(pf.Steps), MaxSteps)
	}
	for i, rs := range pf.Steps {
		where := "step " + strconv.Itoa(i+1)
		if rs.Name != "" {
			where += " (" + rs.Name + ")"
		}
		st, err := rs.step(where)
		if err != nil {
			return p, err
		}
		p.Steps = append(p.Steps, st)
	}
	return p, nil
}

func decodeJSONPlan(data []byte, pf *planFile) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	err := dec.Decode(pf)
	if err == nil {
		if _, terr := dec.Token(); terr != io.EOF {
			return errors.New("unexpected data after the plan object")
		}
		return nil
	}
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Errorf("line %d: %s", lineOf(data, syn.Offset), strings.TrimPrefix(syn.Error(), "json: "))
	case errors.As(err, &typ):
		want := map[string]string{"string": "a string such as \"120ms\"", "int": "a whole number",
			"float64": "a number"}[typ.Type.String()]
		if want == "" {
			want = "a " + typ.Type.Kind().String()
		}
		return fmt.Errorf("line %d: %s: want %s, not a %s", lineOf(data, typ.Offset), typ.Field, want, typ.Value)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("unexpected end of JSON")
	}
	msg := strings.TrimPrefix(err.Error(), "json: ")
	if field, ok := strings.CutPrefix(msg, "unknown field "); ok {
		if name, uerr := strconv.Unquote(field); uerr == nil {
			if rerr := renamedError(name); rerr != nil {
				return rerr
			}
		}
	}
	return errors.New(msg)
}

func lineOf(data []byte, offset int64) int {
	offset = min(max(offset, 0), int64(len(data)))
	return 1 + bytes.Count(data[:offset], []byte("\n"))
}

var (
	yamlUnknownField = regexp.MustCompile(`field (\S+) not found in type \S+`)
	yamlCannot       = regexp.MustCompile("cannot unmarshal !!(\\w+)( `[^`]*`)? into (\\S+)$")
)

// yamlError rewrites yaml.v3's messages without Go type names.
func yamlError(err error) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return errors.New(strings.TrimPrefix(err.Error(), "yaml: "))
	}
	msgs := make([]string, len(te.Errors))
	for i, m := range te.Errors {
		if sub := yamlUnknownField.FindStringSubmatch(m); sub != nil {
			if rerr := renamedError(sub[1]); rerr != nil {
				m = strings.Replace(m, sub[0], rerr.Error(), 1)
			}
		}
		m = yamlUnknownField.ReplaceAllString(m, `unknown field "$1"`)
		if sub := yamlCannot.FindStringSubmatch(m); sub != nil {
			want := map[string]string{"int": "a whole number", "float64": "a number", "string": "a string such as \"120ms\""}[sub[3]]
			switch {
			case want != "":
			case strings.HasPrefix(sub[3], "[]"):
				want = "a list"
			default:
				want = "a mapping of fields"
			}
			found := map[string]string{"str": "a string", "int": "a number", "float": "a number", "bool": "a boolean",
				"map": "a mapping", "seq": "a list", "null": "nothing"}[sub[1]]
			if found == "" {
				found = "!!" + sub[1]
			}
			m = m[:len(m)-len(sub[0])] + "want " + want + ", not " + found + sub[2]
		}
		msgs[i] = m
	}
	return errors.New(strings.Join(msgs, "; "))
}

// Key returns the name a plan file and a --step spec give the
// [deadline.PlanStep] or [deadline.Plan] field called field in a
// [deadline.PlanError] ("AttemptTimeout" -> "attempt_timeout",
// "Backoff.Base" -> "backoff.base"), so that errors name what the user wrote.
func Key(field string) string {
	var b strings.Builder
	for i, r := range field {
		if r >= 'A' && r <= 'Z' {
			if i > 0 && field[i-1] >= 'a' && field[i-1] <= 'z' {
				b.WriteByte('_')
			}
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}
