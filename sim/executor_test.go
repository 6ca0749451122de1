package sim

import (
	"errors"
	"testing"
	"time"

	"github.com/heed-go/heed/budget"
	"github.com/heed-go/heed/retry"
	"github.com/heed-go/heed/retry/executortest"
)

// simExecutor runs the conformance cases through the simulator: one user
// request to one layer whose bottom service answers as the script says,
// in the simulator's virtual time.
type simExecutor struct{}

func (simExecutor) Durable() bool { return false }

func (simExecutor) Run(t *testing.T, c executortest.Case) []retry.Decision {
	p := c.Policy(epoch)
	s := Scenario{
		Name:    "conformance",
		Horizon: time.Minute,
		Seed:    1,
		Load:    Load{Rate: 0.001, Arrival: Constant, Deadline: c.Deadline}, // one request, at 0
		Service: Service{ServiceTime: time.Millisecond},
	}
	// Scenarios take budget and breaker configs so that every run starts
	// fresh; the case brings instances in a given state, so validate the
	// rest, then run with them.
	v := p
	v.Budget, v.Breaker = nil, nil
	s.Chains = []Chain{{Name: "case", Layers: []Layer{{Retry: v, Budget: budget.Config{Ratio: -1}, AttemptShare: -1}}}}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	s.Chains[0].Layers[0].Retry = p
	e := newEngine(&s, 0, nil)
	var ds []retry.Decision
	e.decided = func(d retry.Decision) { ds = append(ds, d) }
	e.script = func(n int) (error, time.Duration) {
		st := c.Step(n)
		switch st.Kind {
		case executortest.Transient:
			return errFailed, st.Takes
		case executortest.Permanent:
			return retry.Permanent(errors.New("400 bad request")), st.Takes
		case executortest.Timeout:
			return nil, time.Hour // the attempt's timeout comes first
		case executortest.Pushback:
			return retry.After(st.Wait, errOverloaded), st.Takes
		}
		return nil, st.Takes
	}
	if r := e.run(); r.Summary.UserRequests != 1 {
		t.Fatalf("%d user requests, want 1", r.Summary.UserRequests)
	}
	return ds
}

func TestExecutorConformance(t *testing.T) { executortest.Run(t, simExecutor{}) }

func TestExecutorConformanceHedge(t *testing.T) { executortest.RunHedge(t, simExecutor{}) }
