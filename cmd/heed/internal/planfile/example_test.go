package planfile_test

import (
	"fmt"
	"os"

	"github.com/heed-go/heed/cmd/heed/internal/plan"
	"github.com/heed-go/heed/cmd/heed/internal/planfile"
)

func ExampleDecode() {
	p, err := planfile.Decode("checkout.yaml", []byte(`
deadline: 2s
reserve: 100ms
steps:
  - {name: stock, p99: 120ms, budget: 400ms, attempts: 2, backoff: {kind: constant, base: 50ms}}
  - {name: payment, p99: 400ms, budget: 900ms}
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	r, err := plan.Check(p)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range r.Steps {
		fmt.Printf("%s: %d attempts need %v of its %v, holds: %v\n", s.Name, s.Attempts, s.Need, s.Budget, s.Holds)
	}
	_, err = planfile.Decode("bad.yaml", []byte("deadline: 2s\nsteps:\n  - {name: stock, p99: 120ms, budgt: 1s}\n"))
	fmt.Println(err)
	// Output:
	// stock: 2 attempts need 290ms of its 400ms, holds: true
	// payment: 1 attempts need 400ms of its 900ms, holds: true
	// line 3: unknown field "budgt"
}

func ExampleParseStep() {
	st, err := planfile.ParseStep("name=stock,p99=120ms,budget=300ms,attempts=2,attempt_timeout=30s")
	fmt.Println(st.Name, st.P99, st.Budget, st.Attempts, st.AttemptTimeout, err)
	_, err = planfile.ParseStep("name=stock,p99=fast")
	fmt.Println(err)
	// Output:
	// stock 120ms 300ms 2 30s <nil>
	// p99: "fast" is not a duration: write seconds (5, 0.5) or a number with a unit: 300ms, 30s, 5m, 2h, 7d
}

func ExampleWriteReport() {
	p, _ := planfile.Decode("plan.yaml", []byte("deadline: 1s\nsteps:\n  - {name: db, p99: 50ms, budget: 2s}\n"))
	r, _ := plan.Check(p)
	planfile.WriteReport(os.Stdout, r, 0)
	// Output:
	// plan: deadline 1s for 1 step; its budget is 2s
	//
	// STEP  P99   BUDGET  ×P99  ATTEMPTS  NEEDS  HOLDS  STARTS AT  LEFT  GETS  TIMEOUT
	// db    50ms  2s      40    1         50ms   yes    0s         1s    1s    -
	//
	// NEEDS: the attempts at p99 plus the longest backoff between them. STARTS AT,
	// LEFT and GETS are the worst case, every earlier step using its whole budget:
	// LEFT is the time left then for this step and the later ones, GETS is
	// min(BUDGET, LEFT); a step is refused when LEFT is below its p99.
	//
	// 2 problems:
	//   over-deadline: step budgets add up to 2s, above the 1s the steps have (deadline 1s): in the worst case "db" gets 1s of its 2s
	//   far-above-p99: "db": budget 2s is 40× its p99 50ms: a slow dependency keeps callers waiting long after the answer stopped being useful
}
