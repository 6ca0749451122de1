package queue

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
	"time"
)

func TestUniqueOf(t *testing.T) {
	at := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	args := json.RawMessage(`{"b":2,"a":"x"}`)
	all := []State{StateDead, StateSucceeded, StateAvailable, StateRunning, StateDead}
	for _, tc := range []struct {
		name   string
		opts   EnqueueOptions
		key    string
		states []State
		err    string
	}{
		{name: "none", opts: EnqueueOptions{}, key: ""},
		{name: "key only", opts: EnqueueOptions{UniqueKey: "k"}, key: "k"},
		{name: "kind", opts: EnqueueOptions{Unique: UniqueOptions{ByState: []State{StateAvailable, StateRunning}}}, key: `{"kind":"email"}`},
		{name: "queue", opts: EnqueueOptions{Queue: "q", Unique: UniqueOptions{ByQueue: true}}, key: `{"kind":"email","queue":"q"}`},
		{name: "period", opts: EnqueueOptions{At: at, Unique: UniqueOptions{ByPeriod: time.Hour}},
			key: `{"kind":"email","period":"2026-03-04T05:00:00Z"}`},
		{name: "period day", opts: EnqueueOptions{At: at, Unique: UniqueOptions{ByPeriod: 24 * time.Hour}},
			key: `{"kind":"email","period":"2026-03-04T00:00:00Z"}`},
		{name: "args", opts: EnqueueOptions{Unique: UniqueOptions{ByArgs: true}},
			key: `{"kind":"email","args":"sha256:` + sha(`{"a":"x","b":2}`) + `"}`},
		{name: "states sorted", opts: EnqueueOptions{UniqueKey: "k", Unique: UniqueOptions{ByState: all}},
			key: "k", states: []State{StateAvailable, StateRunning, StateSucceeded, StateDead}},
		{name: "states default", opts: EnqueueOptions{UniqueKey: "k", Unique: UniqueOptions{ByState: []State{StateRunning, StateAvailable}}}, key: "k"},
		{name: "key and args", opts: EnqueueOptions{UniqueKey: "k", Unique: UniqueOptions{ByArgs: true}}, err: "EnqueueOptions.Unique sets ByArgs"},
		{name: "no running", opts: EnqueueOptions{Unique: UniqueOptions{ByState: []State{StateAvailable}}}, err: "must include available and running"},
		{name: "bad state", opts: EnqueueOptions{Unique: UniqueOptions{ByState: []State{"done"}}}, err: `has "done", not a state`},
		{name: "negative period", opts: EnqueueOptions{Unique: UniqueOptions{ByPeriod: -time.Second}}, err: "ByPeriod is -1s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, err := NewJobInsert("email", args, tc.opts, at)
			if tc.err != "" {
				if !errors.Is(err, ErrInvalid) || !bytes.Contains([]byte(err.Error()), []byte(tc.err)) {
					t.Fatalf("error %v, want ErrInvalid with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if in.UniqueKey != tc.key || !equalStates(in.UniqueStates, tc.states) {
				t.Errorf("key %s states %v, want %s %v", in.UniqueKey, in.UniqueStates, tc.key, tc.states)
			}
			if err := in.Validate(); err != nil {
				t.Errorf("Validate: %v", err)
			}
		})
	}
}

func equalStates(a, b []State) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func sha(s string) string {
	k, _ := derivedKey(UniqueOptions{ByArgs: true}, "x", "", json.RawMessage(s), time.Time{})
	var v struct{ Args string }
	json.Unmarshal([]byte(k), &v)
	return v.Args[len("sha256:"):]
}

func TestCanonicalJSON(t *testing.T) {
	for in, want := range map[string]string{
		`{"b":1,"a":{"d":[1,2.50,{"z":null,"y":true}],"c":"<&>"}}`: `{"a":{"c":"<&>","d":[1,2.50,{"y":true,"z":null}]},"b":1}`,
		" [ 1 ,\n 2 ] ": `[1,2]`,
		`"\u00e9"`:      `"é"`,
		`{"a":1,"a":2}`: `{"a":2}`,
		`1e3`:           `1e3`,
		`{"é":1,"e":2}`: `{"e":2,"é":1}`,
	} {
		got, err := canonicalJSON([]byte(in))
		if err != nil || string(got) != want {
			t.Errorf("canonicalJSON(%s) = %s, %v; want %s", in, got, err, want)
		}
	}
	for _, bad := range []string{``, `{`, `1 2`, `{"a":}`} {
		if _, err := canonicalJSON([]byte(bad)); err == nil {
			t.Errorf("canonicalJSON(%q): no error", bad)
		}
	}
}

// FuzzCanonicalJSON: the canonical form is valid JSON, is its own
// canonical form, and means the same as the input.
func FuzzCanonicalJSON(f *testing.F) {
	for _, s := range []string{`{"b":1,"a":[1,2]}`, `"x"`, `[{"z":{}}]`, `1.0`, `null`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := canonicalJSON([]byte(s))
		if err != nil {
			return
		}
		if !json.Valid(c) {
			t.Fatalf("canonicalJSON(%q) = %q: not valid JSON", s, c)
		}
		c2, err := canonicalJSON(c)
		if err != nil || !bytes.Equal(c, c2) {
			t.Fatalf("canonicalJSON(%q) = %q, again %q, %v", s, c, c2, err)
		}
	})
}

func TestPeriodStart(t *testing.T) {
	for _, tc := range []struct {
		t    time.Time
		d    time.Duration
		want time.Time
	}{
		{time.Date(2026, 3, 4, 5, 6, 7, 8, time.UTC), time.Hour, time.Date(2026, 3, 4, 5, 0, 0, 0, time.UTC)},
		{time.Date(2026, 3, 4, 5, 6, 7, 8, time.FixedZone("x", 3600)), 24 * time.Hour, time.Date(2026, 3, 4, 0, 0, 0, 0, time.UTC)},
		{time.Date(1969, 12, 31, 23, 59, 0, 0, time.UTC), time.Hour, time.Date(1969, 12, 31, 23, 0, 0, 0, time.UTC)},
		{time.Date(2026, 3, 4, 5, 15, 0, 0, time.UTC), 15 * time.Minute, time.Date(2026, 3, 4, 5, 15, 0, 0, time.UTC)},
	} {
		if got := periodStart(tc.t, tc.d); !got.Equal(tc.want) || got.Location() != time.UTC {
			t.Errorf("periodStart(%v, %v) = %v, want %v", tc.t, tc.d, got, tc.want)
		}
	}
}
