package retry_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/heed-go/heed/backoff"
	"github.com/heed-go/heed/budget"
	"github.com/heed-go/heed/retry"
)

func TestPolicyJSONPinned(t *testing.T) {
	for _, tc := range []struct {
		p    retry.Policy
		want string
	}{
		{retry.Policy{}, `{}`},
		{retry.Policy{Attempts: retry.Unlimited, TimeBudget: time.Minute}, `{"attempts":-1,"time_budget":"1m0s"}`},
		{retry.Policy{Attempts: 5, Backoff: backoff.Schedule{Base: 200 * time.Millisecond}, AttemptTimeout: 2 * time.Second,
			TimeBudget: 30 * time.Second, MinAttemptTime: 50 * time.Millisecond, MaxPushback: time.Minute},
			`{"attempts":5,"backoff":{"kind":"exponential","base":"200ms","jitter":"full"},"attempt_timeout":"2s","time_budget":"30s","min_attempt_time":"50ms","max_pushback":"1m0s"}`},
	} {
		b, err := json.Marshal(tc.p)
		if err != nil || string(b) != tc.want {
			t.Errorf("Marshal = %s, %v; want %s", b, err, tc.want)
		}
		var got retry.Policy
		if err := json.Unmarshal([]byte(tc.want), &got); err != nil {
			t.Fatalf("Unmarshal(%s): %v", tc.want, err)
		}
		if b2, _ := json.Marshal(got); string(b2) != tc.want {
			t.Errorf("round trip of %s gave %s", tc.want, b2)
		}
	}
}

// Decoding sets the data fields only, and a bad field names itself and
// changes nothing.
func TestPolicyJSONDecode(t *testing.T) {
	b, err := budget.New(budget.Config{})
	if err != nil {
		t.Fatal(err)
	}
	p := retry.Policy{Attempts: 7, Budget: b}
	if err := json.Unmarshal([]byte(`{"time_budget":"2s"}`), &p); err != nil {
		t.Fatal(err)
	}
	if p.Attempts != 0 || p.TimeBudget != 2*time.Second || p.Budget != b {
		t.Errorf("after Unmarshal: Attempts %d, TimeBudget %v, Budget kept %v", p.Attempts, p.TimeBudget, p.Budget == b)
	}
	for _, tc := range []struct{ in, want string }{
		{`{"max_duration":"1s"}`, `unknown field "max_duration"`},
		{`{"time_budget":1000}`, `time_budget: 1000 is not a duration`},
		{`{"attempt_timeout":"soon"}`, `retry: policy: attempt_timeout: "soon" is not a duration: write a Go duration, such as 250ms or 2s`},
		{`{"backoff":{"base":"2 s"}}`, `retry: policy: backoff.base: "2 s" is not a duration`},
		{`{"backoff":{"kind":"wavy"}}`, `unknown kind "wavy"`},
	} {
		p := retry.Policy{Attempts: 7}
		err := json.Unmarshal([]byte(tc.in), &p)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Unmarshal(%s) = %v, want an error containing %q", tc.in, err, tc.want)
		}
		if p.Attempts != 7 {
			t.Errorf("Unmarshal(%s) changed the policy", tc.in)
		}
	}
}

func TestKeysParseBack(t *testing.T) {
	// Actions, reasons and outcomes are stored by key and read back by
	// comparing keys (the stores, the dashboard): every key is its own.
	seen := map[string]bool{}
	for a := retry.Done; a <= retry.Defer; a++ {
		if k := a.Key(); seen[k] || k == "unknown" {
			t.Errorf("action %d: key %q is not its own", a, k)
		}
		seen[a.Key()] = true
	}
	clear(seen)
	for r := retry.ReasonSuccess; r <= retry.ReasonPushbackTooLong; r++ {
		if k := r.Key(); seen[k] || k == "unknown" {
			t.Errorf("reason %d: key %q is not its own", r, k)
		}
		seen[r.Key()] = true
	}
	clear(seen)
	for o := retry.OutcomeSuccess; o <= retry.OutcomeRefused; o++ {
		if k := o.Key(); seen[k] || k == "unknown" {
			t.Errorf("outcome %d: key %q is not its own", o, k)
		}
		seen[o.Key()] = true
	}
	if retry.GiveUp.Key() != "give_up" || retry.GiveUp.String() != "give up" {
		t.Errorf("GiveUp: key %q, words %q", retry.GiveUp.Key(), retry.GiveUp.String())
	}
}
