package retryhttp_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/heed-go/heed/budget"
	"github.com/heed-go/heed/retry"
	"github.com/heed-go/heed/retry/overtimetest"
	"github.com/heed-go/heed/retryhttp"
)

// hedgedOverTime is the over-time executor of TestOverTime with hedging
// on: a GET hedged after 50 ms.
var hedgedOverTime = overtimetest.Calls(func(t *testing.T, dep *overtimetest.Dependency) overtimetest.Client {
	tr := &retryhttp.Transport{Base: dependency{dep}, Budgets: new(budget.Registry),
		Policy: retry.Policy{Hedge: &retry.Hedge{Delay: 50 * time.Millisecond}}}
	client := &http.Client{Transport: tr}
	return func(ctx context.Context, user int) bool {
		req, _ := http.NewRequestWithContext(context.WithValue(ctx, userKey{}, user), "GET", "http://service.test/", nil)
		resp, err := client.Do(req)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}
})

// TestHedgeOverTime: hedging adds no load beyond the retry budget's bound.
// The over-time scenarios pass with every GET hedged after 50 ms, and in a
// total outage whose attempts hang (a black hole for 10 s, where every
// attempt is slow enough to be hedged) the attempts per user stay within
// the outage's bound, 1 + Ratio + Burst/(r × T) = 1.095, in virtual time.
func TestHedgeOverTime(t *testing.T) {
	// Every row runs, -race too: overtimetest's users arrive off one grid, so no hedge lands on another's arrival.
	t.Run("scenarios", func(t *testing.T) { overtimetest.Run(t, hedgedOverTime) })
	t.Run("hanging outage", func(t *testing.T) {
		s := overtimetest.Scenario{Name: "hanging outage, hedged", Rate: 100, Length: 15 * time.Second,
			Deadline: 5 * time.Second, Down: 2 * time.Second, Up: 12 * time.Second, Hang: true,
			Bounds: overtimetest.Bounds{FaultMean: overtimetest.OutageMean(100, 10*time.Second), FaultWindow: 1.20}}
		overtimetest.Check(t, s, hedgedOverTime.Run(t, s), nil)
	})
}
