package sim

import (
	"testing"
	"time"

	"github.com/heed-go/heed/retry/overtimetest"
)

// simOverTime runs the over-time conformance scenarios in the simulator:
// one layer at heed's defaults (the zero retry policy, the default budget)
// in front of the bottom service, users arriving at a constant rate, the
// scenario's faults as the simulator's. Its counts per 10 ms interval
// make the trace; a served user is stamped when its call ends. The cold
// start's 5 calls in a row are a call a second, the bottom service
// failing the first two of every three attempts. The overload's pool
// drops attempts whose caller has gone (the deadline propagates), as the
// suite's dependency does. Users arrive for the scenario's Length and the
// run goes on for a deadline more, so that the calls under way at the end
// finish, as they do in the other executors (a call still waiting for its
// retry at the horizon would count as not served).
type simOverTime struct{}

func (simOverTime) Run(t *testing.T, o overtimetest.Scenario) overtimetest.Trace {
	const iv = 10 * time.Millisecond
	s := Scenario{
		Name:     o.Name,
		Horizon:  o.Length,
		Interval: iv,
		Seed:     1,
		Load:     Load{Rate: o.Rate, Arrival: Constant, Deadline: o.Deadline},
		Service:  Service{Concurrency: o.Workers, ServiceTime: o.Work, ErrorRate: o.Fail},
		Chains:   []Chain{{Name: "heed", Layers: []Layer{{}}, PropagateDeadline: o.Workers > 0}},
	}
	if o.Rate == 0 {
		s.Load.Rate, s.Horizon = 1, time.Duration(o.Calls)*time.Second
	}
	if o.Up > 0 {
		kind := Outage
		if o.Hang {
			kind = BlackHole
		}
		s.Faults = append(s.Faults, Fault{Kind: kind, Start: o.Down, End: o.Up})
		if o.After > 0 {
			s.Faults = append(s.Faults, Fault{Kind: ErrorRate, Start: o.Up, End: s.Horizon + time.Second, Rate: o.After})
		}
	}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	arrivals := s.Horizon
	s.Horizon += o.Deadline
	e := newEngine(&s, 0, nil)
	e.arrivalsEnd = int64(arrivals)
	if len(o.Script) > 0 {
		e.script = func(n int) (error, time.Duration) {
			if k := (n-1)%(len(o.Script)+1) + 1; k <= len(o.Script) && o.Script[k-1] == overtimetest.Fail {
				return errFailed, 0
			}
			return nil, 0
		}
	}
	r := e.run()
	var tr overtimetest.Trace
	for _, p := range r.Series {
		tr.Users = overtimetest.Stamps(tr.Users, p.At, p.UserRequests)
		tr.Attempts = overtimetest.Stamps(tr.Attempts, p.At, p.Attempts)
		tr.Served = overtimetest.Stamps(tr.Served, p.At, p.Goodput)
	}
	return tr
}

func TestOverTime(t *testing.T) {
	overtimetest.Run(t, simOverTime{})
}
