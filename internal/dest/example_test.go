package dest_test

import (
	"fmt"
	"time"

	"github.com/heed-go/heed/breaker"
	"github.com/heed-go/heed/budget"
	"github.com/heed-go/heed/internal/dest"
	"github.com/heed-go/heed/retry"
)

// An executor keeps one Set for its client object: each destination it
// calls gets the client's policy with that destination's budget (from the
// registry, shared with every client on it) and a breaker of its own.
func Example() {
	reg := &budget.Registry{} // nil: the process's, budget.For
	var hosts dest.Set
	err := hosts.Init(dest.Config{
		Policy:  retry.Policy{Attempts: 3},
		Budgets: reg,
		Breaker: &breaker.Config{Cooldown: time.Minute},
		OnBreakerChange: func(host string, from, to breaker.State, _ time.Time) {
			fmt.Println(host, from, "->", to)
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	a := hosts.Get("api.example.com", func() string { return "api.example.com:443" })
	b := hosts.Get("db.example.com:5432", nil)
	shared, _ := reg.For("api.example.com:443", budget.Config{})
	fmt.Println(a.Policy.Attempts, a.Policy.Budget == shared, a.Policy.Breaker != b.Policy.Breaker)
	db, _ := reg.For("db.example.com:5432", budget.Config{})
	fmt.Println(hosts.Get("api.example.com", nil) == a, b.Policy.Budget == db)
	// Output:
	// 3 true true
	// true true
}
