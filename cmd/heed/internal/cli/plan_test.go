package cli

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
)

// The example from the help text.
var exampleArgs = []string{"plan", "--attempts", "4", "--base", "100ms", "--cap", "2s", "--deadline", "3s",
	"--layers", "3", "--rate", "1000", "--capacity", "1500"}

func TestPlanTable(t *testing.T) {
	code, stdout, stderr := heed(t, "", exampleArgs...)
	if code != 0 || stderr != "" {
		t.Fatalf("exit code %d, stderr %q", code, stderr)
	}
	for _, want := range []string{
		"policy: 4 attempts; exponential backoff from 100ms, ×2 per retry, capped at 2s; full jitter; deadline 3s",
		"FITS IN 3s",
		// attempt, nominal delay, jitter range, total wait, worst end, fits
		"4        400ms  0s–400ms      0s–700ms    740ms    yes",
		"All 4 attempts fit in the 3s deadline.",
		"call chain: 3 layers, each making up to 4 attempts per call (3 retries); 1,000 requests/s; bottom capacity 1,500 requests/s",
		"every layer (4^3)     64                   64,000/s        42.67×",
		"one owner (4)         4                    4,000/s         2.67×",
		"one owner, 9% budget  1.09                 1,090/s         0.73×",
		"a total outage of T seconds at r requests/s per client sees at most 1 + 0.09 + 5/(r × T) times its load (1.09× in the long run)",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output does not contain %q:\n%s", want, stdout)
		}
	}
}

// With a capacity and a latency, plan explains the overload limit they
// lead to: the half-capacity chain's C (60/s at 200 ms) under 100 users/s,
// where overload's chain test measures a limit of about 15 and p50 about
// 290 ms through three hops.
func TestPlanOverloadLimit(t *testing.T) {
	code, stdout, stderr := heed(t, "", "plan", "--rate", "100", "--capacity", "60", "--latency", "200ms")
	if code != 0 || stderr != "" {
		t.Fatalf("exit code %d, stderr %q", code, stderr)
	}
	for _, want := range []string{
		"overload control at the bottom service (overload.Limiter), by Little's law:",
		"in service at capacity: 60 requests/s × 200ms = 12 at once",
		"settles near 15.2 in flight: 3.2 more, each waiting inside about 54ms",
		"a served request takes about 254ms; the queue in front holds up to 15 more, each waiting at most 100ms (10ms once it has not emptied for 100ms)",
		"a request with less than about 217ms left is refused at once",
		"at 100 requests/s, about 40/s are refused at once",
		"a fixed limit (Config.Limit) from 12 to 16",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output does not contain %q:\n%s", want, stdout)
		}
	}
	_, stdout, _ = heed(t, "", "plan", "--capacity", "60")
	if strings.Contains(stdout, "overload control") {
		t.Errorf("without --latency: %s", stdout)
	}
	if code, _, stderr := heed(t, "", "plan", "--latency", "-1s"); code != 2 || !strings.Contains(stderr, "--latency") {
		t.Errorf("negative latency: exit %d, %q", code, stderr)
	}
	_, stdout, _ = heed(t, "", "plan", "--capacity", "60", "--latency", "200ms", "--json")
	var v struct {
		Chain struct {
			Overload *struct {
				InService float64 `json:"in_service"`
				Limit     float64 `json:"limit"`
				RefusedMs float64 `json:"refuse_below_ms"`
			} `json:"overload"`
		} `json:"chain"`
	}
	if err := json.Unmarshal([]byte(stdout), &v); err != nil || v.Chain.Overload == nil || v.Chain.Overload.InService != 12 || math.Abs(v.Chain.Overload.Limit-15.24) > 0.01 || v.Chain.Overload.RefusedMs != 217 {
		t.Errorf("JSON: %v, %+v", err, v.Chain.Overload)
	}
}

func TestPlanTableWithoutChain(t *testing.T) {
	_, stdout, _ := heed(t, "", "plan")
	if strings.Contains(stdout, "call chain") || strings.Contains(stdout, "FITS") {
		t.Errorf("plan without chain or deadline flags prints them:\n%s", stdout)
	}
	if !strings.Contains(stdout, "At worst all 3 attempts end within 330ms, 300ms of it waiting.") {
		t.Errorf("no worst-case summary:\n%s", stdout)
	}
}

func TestPlanDeadlineLimits(t *testing.T) {
	_, stdout, _ := heed(t, "", "plan", "--attempts", "5", "--cap", "1s", "--jitter", "none", "--deadline", "1s")
	want := "In the 1s deadline, attempts 1–4 always fit; attempt 5 never starts: the deadline, not --attempts, limits this policy."
	if !strings.Contains(stdout, want) {
		t.Errorf("output does not contain %q:\n%s", want, stdout)
	}
	_, stdout, _ = heed(t, "", "plan", "--attempts", "4", "--deadline", "500ms")
	want = "attempts 1–3 always fit; attempt 4 fits only after short jittered waits"
	if !strings.Contains(stdout, want) {
		t.Errorf("output does not contain %q:\n%s", want, stdout)
	}
}

// 3 layers that each make 1 + 3 attempts: 4^3 = 64 attempts per user action
// reach the bottom service.
func TestPlanJSON(t *testing.T) {
	args := append(slices.Clone(exampleArgs), "--json")
	code, stdout, stderr := heed(t, "", args...)
	if code != 0 || stderr != "" {
		t.Fatalf("exit code %d, stderr %q", code, stderr)
	}
	// The whole form, as the help documents it: the last attempt waits
	// 0-400ms (at most 700ms in all) and ends 40-740ms in, inside the 3s
	// deadline; 64000 attempts/s reach the bottom of the chain when every
	// layer retries, 4000 with one owner, and 1000 + 9% with its budget
	// (the floor of 1/s is less).
	checkGolden(t, "plan-json.golden", args, stdout)

}

func TestPlanJSONOmitsWhatWasNotAsked(t *testing.T) {
	_, stdout, _ := heed(t, "", "plan", "--json", "--jitter", "decorrelated")
	var got map[string]any
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatal(err)
	}
	if _, ok := got["chain"]; ok {
		t.Error("chain present without chain flags")
	}
	row := got["schedule"].([]any)[1].(map[string]any)
	for _, k := range []string{"delay_ms", "fits"} {
		if _, ok := row[k]; ok {
			t.Errorf("%s present: %v", k, row)
		}
	}

	_, stdout, _ = heed(t, "", "plan", "--json", "--layers", "2")
	var p struct {
		Chain map[string]any `json:"chain"`
	}
	if err := json.Unmarshal([]byte(stdout), &p); err != nil {
		t.Fatal(err)
	}
	every, _ := p.Chain["every_layer"].(map[string]any)
	_, rate := p.Chain["rate"]
	_, rps := every["rps"]
	if every["attempts_per_action"] != 9.0 || rps || rate {
		t.Errorf("chain = %v", p.Chain)
	}
}
