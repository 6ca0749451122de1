package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/heed-go/heed/breaker"
	"github.com/heed-go/heed/budget"
	"github.com/heed-go/heed/internal/docjson"
	"github.com/heed-go/heed/overload"
	"github.com/heed-go/heed/retry"
)

// ParseScenario decodes the scenario file called file: JSON when the name
// ends in .json, YAML otherwise. Durations are Go durations ("500ms", "2s",
// "1m"), as in every policy document, and a layer's retry policy fields
// are read by retry.Policy's decoder under its JSON names; only horizon,
// load.rate and policies are required, unknown fields and impossible values
// are errors, and the scenario it returns is valid ([Scenario.Validate]).
// A scenario without a name is named after the file. Errors start with
// file, then the line or the field, such as
// "my.yaml: policies[0].layers[1].attempts: -1, must be at least 1".
func ParseScenario(file string, data []byte) (Scenario, error) {
	sc, err := parseScenario(data, strings.EqualFold(filepath.Ext(file), ".json"))
	if err != nil {
		return Scenario{}, fmt.Errorf("%s: %w", file, err)
	}
	if sc.Name == "" {
		sc.Name = strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
	}
	return sc, nil
}

// The file format. Durations are strings; every field is optional to the
// decoder, and Scenario.Validate checks the values.
type fileScenario struct {
	Name        string       `yaml:"name" json:"name"`
	Description string       `yaml:"description" json:"description"`
	Horizon     string       `yaml:"horizon" json:"horizon"`
	Interval    string       `yaml:"interval" json:"interval"`
	Seed        uint64       `yaml:"seed" json:"seed"`
	RecoverAt   float64      `yaml:"recover_at" json:"recover_at"`
	Load        fileLoad     `yaml:"load" json:"load"`
	Service     fileService  `yaml:"service" json:"service"`
	Faults      []fileFault  `yaml:"faults" json:"faults"`
	Policies    []filePolicy `yaml:"policies" json:"policies"`
}

type fileLoad struct {
	Rate     float64 `yaml:"rate" json:"rate"`
	Arrival  string  `yaml:"arrival" json:"arrival"`
	Deadline string  `yaml:"deadline" json:"deadline"`
}

type fileService struct {
	Concurrency int     `yaml:"concurrency" json:"concurrency"`
	ServiceTime string  `yaml:"service_time" json:"service_time"`
	Exponential bool    `yaml:"exponential" json:"exponential"`
	LoadLatency string  `yaml:"load_latency" json:"load_latency"`
	QueueLimit  int     `yaml:"queue_limit" json:"queue_limit"`
	ErrorRate   float64 `yaml:"error_rate" json:"error_rate"`
	SlowShare   float64 `yaml:"slow_share" json:"slow_share"`
	SlowTime    string  `yaml:"slow_time" json:"slow_time"`
}

type fileFault struct {
	Kind   string  `yaml:"kind" json:"kind"`
	Start  string  `yaml:"start" json:"start"`
	End    string  `yaml:"end" json:"end"`
	Factor float64 `yaml:"factor" json:"factor"`
	Rate   float64 `yaml:"rate" json:"rate"`
	Depth  int     `yaml:"depth" json:"depth"`
}

type filePolicy struct {
	Name              string        `yaml:"name" json:"name"`
	PropagateDeadline bool          `yaml:"propagate_deadline" json:"propagate_deadline"`
	Layers            []fileLayer   `yaml:"layers" json:"layers"`
	Overload          *fileOverload `yaml:"overload" json:"overload"`
}

// fileOverload is overload.Config; "overload: {}" is its defaults.
type fileOverload struct {
	Limit         int    `yaml:"limit" json:"limit"`
	InitialLimit  int    `yaml:"initial_limit" json:"initial_limit"`
	MinLimit      int    `yaml:"min_limit" json:"min_limit"`
	MaxLimit      int    `yaml:"max_limit" json:"max_limit"`
	MaxQueue      int    `yaml:"max_queue" json:"max_queue"`
	QueueTarget   string `yaml:"queue_target" json:"queue_target"`
	QueueInterval string `yaml:"queue_interval" json:"queue_interval"`
	LIFOOff       bool   `yaml:"lifo_off" json:"lifo_off"`
}

// fileLayer is a layer as a file spells it: its retry policy's fields
// (attempts, backoff, attempt_timeout, time_budget, min_attempt_time,
// max_pushback) under the names of retry.Policy's JSON form, read by its
// one decoder, and the layer's own.
type fileLayer struct {
	Name           string `yaml:"name" json:"name"`
	docjson.Policy `yaml:",inline"`
	Owner          bool         `yaml:"owner" json:"owner"`
	Share          float64      `yaml:"attempt_share" json:"attempt_share"`
	Budget         *fileBudget  `yaml:"budget" json:"budget"`
	Breaker        *fileBreaker `yaml:"breaker" json:"breaker"`
	Hedge          *fileHedge   `yaml:"hedge" json:"hedge"`
}

// fileHedge is a layer's retry.Hedge: delay (absent: learnt, the
// quantile of the latencies seen), max, quantile, min_delay, max_delay.
type fileHedge struct {
	Delay    string  `yaml:"delay" json:"delay"`
	Max      int     `yaml:"max" json:"max"`
	Quantile float64 `yaml:"quantile" json:"quantile"`
	MinDelay string  `yaml:"min_delay" json:"min_delay"`
	MaxDelay string  `yaml:"max_delay" json:"max_delay"`
}

type fileBudget struct {
	Ratio        float64 `yaml:"ratio" json:"ratio"`
	Window       string  `yaml:"window" json:"window"`
	MinPerSecond float64 `yaml:"min_per_second" json:"min_per_second"`
	Burst        float64 `yaml:"burst" json:"burst"`
	Earn         float64 `yaml:"earn" json:"earn"`
	Ceiling      float64 `yaml:"ceiling" json:"ceiling"`
}

type fileBreaker struct {
	FailureRatio float64 `yaml:"failure_ratio" json:"failure_ratio"`
	MinCalls     int     `yaml:"min_calls" json:"min_calls"`
	Window       string  `yaml:"window" json:"window"`
	Cooldown     string  `yaml:"cooldown" json:"cooldown"`
	Probes       int     `yaml:"probes" json:"probes"`
}

// what names each file type in error messages.
var fileParts = map[string]any{
	"the scenario": fileScenario{}, "load": fileLoad{}, "service": fileService{}, "a fault": fileFault{},
	"a policy": filePolicy{}, "a layer": fileLayer{}, "backoff": docjson.Backoff{}, "budget": fileBudget{},
	"breaker": fileBreaker{}, "overload": fileOverload{},
}

// renamedFields are a layer's fields that scenario files once spelled
// otherwise, by their old name: the file format takes the names of
// retry.Policy's JSON form.
var renamedFields = map[string]string{
	"max_duration": "time_budget",     // retry.Policy.TimeBudget
	"timeout":      "attempt_timeout", // retry.Policy.AttemptTimeout
}

func renamedMessage(old, now string) string {
	return fmt.Sprintf("field %q of a layer is now called %q (the name of retry.Policy's JSON form); rename it", old, now)
}

var yamlUnknown = regexp.MustCompile(`field (\S+) not found in type (?:sim|docjson)\.(\w+)`)

// parseScenario decodes a scenario file and converts it to a Scenario.
func parseScenario(data []byte, isJSON bool) (Scenario, error) {
	var f fileScenario
	if isJSON {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&f); err != nil {
			at := min(int(dec.InputOffset()), len(data))
			msg := strings.TrimPrefix(err.Error(), "json: ")
			if field, ok := strings.CutPrefix(msg, "unknown field "); ok {
				// The decoder has read past the field: find it.
				if i := bytes.Index(data, []byte(field)); i >= 0 {
					at = i
				}
				if name, err := strconv.Unquote(field); err == nil {
					if now, ok := renamedFields[name]; ok {
						msg = renamedMessage(name, now)
					}
				}
			}
			var se *json.SyntaxError
			if errors.As(err, &se) {
				at = min(int(se.Offset), len(data))
			}
			line := 1 + bytes.Count(data[:at], []byte("\n"))
			return Scenario{}, fmt.Errorf("line %d: %s", line, msg)
		}
		if dec.More() {
			return Scenario{}, errors.New("more than one JSON value")
		}
	} else {
		dec := yaml.NewDecoder(bytes.NewReader(data))
		dec.KnownFields(true)
		if err := dec.Decode(&f); err != nil {
			if errors.Is(err, io.EOF) {
				return Scenario{}, errors.New("the file is empty")
			}
			return Scenario{}, errors.New(explainYAML(err))
		}
	}
	return f.scenario()
}

// explainYAML rewrites yaml's "field x not found in type fileLayer" as
// `unknown field "x" in a layer (known: ...)`.
func explainYAML(err error) string {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	msg = strings.Replace(msg, "unmarshal errors:\n  ", "", 1)
	return yamlUnknown.ReplaceAllStringFunc(msg, func(m string) string {
		sub := yamlUnknown.FindStringSubmatch(m)
		if now, ok := renamedFields[sub[1]]; ok && sub[2] == "fileLayer" {
			return renamedMessage(sub[1], now)
		}
		for what, v := range fileParts {
			t := reflect.TypeOf(v)
			if t.Name() != sub[2] {
				continue
			}
			known := yamlNames(t)
			return fmt.Sprintf("unknown field %q in %s (known: %s)", sub[1], what, strings.Join(known, ", "))
		}
		return fmt.Sprintf("unknown field %q", sub[1])
	})
}

// yamlNames returns the YAML field names of the struct type t, those of
// its inlined structs (a layer's policy fields) in their place.
func yamlNames(t reflect.Type) []string {
	var names []string
	for i := range t.NumField() {
		f := t.Field(i)
		tag := strings.Split(f.Tag.Get("yaml"), ",")
		switch {
		case len(tag) > 1 && tag[1] == "inline" && f.Type.Kind() == reflect.Struct:
			names = append(names, yamlNames(f.Type)...)
		case tag[0] != "" && tag[0] != "-":
			names = append(names, tag[0])
		}
	}
	return names
}

// durs parses the duration strings of a file, remembering the first error
// with the field's path.
type durs struct{ err error }

func (d *durs) parse(path, s string) time.Duration {
	if s == "" || d.err != nil {
		return 0
	}
	v, err := docjson.ParseDuration(s)
	if err != nil {
		d.err = fmt.Errorf("%s: %w", path, err)
	}
	return v
}

func (f *fileScenario) scenario() (Scenario, error) {
	var d durs
	s := Scenario{
		Name:        f.Name,
		Description: f.Description,
		Horizon:     d.parse("horizon", f.Horizon),
		Interval:    d.parse("interval", f.Interval),
		Seed:        f.Seed,
		RecoverAt:   f.RecoverAt,
		Load: Load{
			Rate:     f.Load.Rate,
			Deadline: d.parse("load.deadline", f.Load.Deadline),
		},
		Service: Service{
			Concurrency: f.Service.Concurrency,
			ServiceTime: d.parse("service.service_time", f.Service.ServiceTime),
			Exponential: f.Service.Exponential,
			LoadLatency: d.parse("service.load_latency", f.Service.LoadLatency),
			QueueLimit:  f.Service.QueueLimit,
			ErrorRate:   f.Service.ErrorRate,
			SlowShare:   f.Service.SlowShare,
			SlowTime:    d.parse("service.slow_time", f.Service.SlowTime),
		},
	}
	if f.Horizon == "" {
		return s, errors.New("horizon: missing; say how much virtual time to simulate, such as 2m")
	}
	if f.Load.Rate == 0 {
		return s, errors.New("load.rate: missing; say how many user requests arrive per second")
	}
	if f.Load.Arrival != "" {
		a, err := parseArrival(f.Load.Arrival)
		if err != nil {
			return s, fmt.Errorf("load.arrival: %q is not poisson or constant", f.Load.Arrival)
		}
		s.Load.Arrival = a
	}
	for i, ff := range f.Faults {
		p := fmt.Sprintf("faults[%d]", i)
		k, err := parseFaultKind(ff.Kind)
		if err != nil {
			return s, fmt.Errorf("%s.kind: %q is not outage, capacity, errors, spike or black_hole", p, ff.Kind)
		}
		if ff.End == "" {
			return s, fmt.Errorf("%s.end: missing", p)
		}
		s.Faults = append(s.Faults, Fault{Kind: k, Start: d.parse(p+".start", ff.Start), End: d.parse(p+".end", ff.End),
			Factor: ff.Factor, Rate: ff.Rate, Depth: ff.Depth})
	}
	for i, fp := range f.Policies {
		p := fmt.Sprintf("policies[%d]", i)
		pol := Chain{Name: fp.Name, PropagateDeadline: fp.PropagateDeadline}
		if o := fp.Overload; o != nil {
			pol.Overload = &overload.Config{
				Limit: o.Limit, InitialLimit: o.InitialLimit, MinLimit: o.MinLimit, MaxLimit: o.MaxLimit,
				MaxQueue:      o.MaxQueue,
				QueueTarget:   d.parse(p+".overload.queue_target", o.QueueTarget),
				QueueInterval: d.parse(p+".overload.queue_interval", o.QueueInterval),
				LIFOOff:       o.LIFOOff,
			}
		}
		// A file's owner marks the layer whose attempts claim the retries;
		// layers down to it honour no claim (with none, every layer
		// retries on its own), as before ownership followed retrying.
		firstOwner := len(fp.Layers)
		for j, fl := range fp.Layers {
			if fl.Owner {
				firstOwner = min(firstOwner, j)
			}
		}
		for j, fl := range fp.Layers {
			lp := fmt.Sprintf("%s.layers[%d]", p, j)
			l := Layer{
				Name:         fl.Name,
				OwnershipOff: j <= firstOwner,
				AttemptShare: fl.Share,
				Budget:       budget.Config{Ratio: -1}, // a file without budget: none
			}
			if d.err != nil {
				return s, d.err
			}
			if err := decodePolicy(&l.Retry, fl.Policy); err != nil {
				return s, fmt.Errorf("%s.%w", lp, err)
			}
			if l.Retry.Attempts < 0 {
				// -1 would mean unlimited to the retry package.
				return s, fmt.Errorf("%s.attempts: %d, must be at least 1", lp, l.Retry.Attempts)
			}
			if b := fl.Budget; b != nil {
				l.Budget = budget.Config{Ratio: b.Ratio, Window: d.parse(lp+".budget.window", b.Window), MinPerSecond: b.MinPerSecond,
					Burst: b.Burst, Earn: b.Earn, Ceiling: b.Ceiling}
			}
			if b := fl.Breaker; b != nil {
				l.Breaker = &breaker.Config{FailureRatio: b.FailureRatio, MinCalls: b.MinCalls, Probes: b.Probes,
					Window: d.parse(lp+".breaker.window", b.Window), Cooldown: d.parse(lp+".breaker.cooldown", b.Cooldown)}
			}
			if h := fl.Hedge; h != nil {
				l.Retry.Hedge = &retry.Hedge{Delay: d.parse(lp+".hedge.delay", h.Delay), Max: h.Max, Quantile: h.Quantile,
					MinDelay: d.parse(lp+".hedge.min_delay", h.MinDelay), MaxDelay: d.parse(lp+".hedge.max_delay", h.MaxDelay)}
			}
			pol.Layers = append(pol.Layers, l)
		}
		s.Chains = append(s.Chains, pol)
	}
	if d.err != nil {
		return s, d.err
	}
	if err := s.Validate(); err != nil {
		return s, errors.New(strings.TrimPrefix(err.Error(), "sim: "))
	}
	return s, nil
}

// decodePolicy sets p's data fields from a layer's policy fields with
// retry.Policy's one decoder; its error starts with the field, such as
// `attempt_timeout: "2 seconds" is not a duration: ...`.
func decodePolicy(p *retry.Policy, doc docjson.Policy) error {
	b, err := doc.JSON()
	if err == nil {
		err = p.UnmarshalJSON(b)
	}
	if err != nil {
		return errors.New(strings.TrimPrefix(err.Error(), "retry: policy: "))
	}
	return nil
}

// String describes the fault in words, as heed sim prints it: "outage
// 20s–40s", "capacity down to 50% 1m0s–2m0s", "10% errors 5s–10s", "load ×2
// 1m0s–1m10s".
func (f Fault) String() string {
	span := fmt.Sprintf("%v–%v", f.Start, f.End)
	switch f.Kind {
	case Outage:
		return "outage " + span
	case CapacityDrop:
		return fmt.Sprintf("capacity down to %g%% %s", 100*f.Factor, span)
	case ErrorRate:
		return fmt.Sprintf("%g%% errors %s", 100*f.Rate, span)
	case Spike:
		return fmt.Sprintf("load ×%g %s", f.Factor, span)
	case BlackHole:
		if f.Depth > 0 {
			return fmt.Sprintf("black hole %d layers up %s", f.Depth, span)
		}
		return "black hole " + span
	}
	return f.Kind.String() + " " + span
}
