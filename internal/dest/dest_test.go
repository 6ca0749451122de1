package dest_test

import (
	"errors"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/heed-go/heed/breaker"
	"github.com/heed-go/heed/budget"
	"github.com/heed-go/heed/internal/dest"
	"github.com/heed-go/heed/retry"
)

// TestSet: per-destination budgets come from the registry (one per budget
// key, shared by every Set that uses the registry, apart in another
// registry), each destination gets a breaker of its own whose changes name
// it, a Budget or Breaker in the Policy is shared by all, a negative Ratio
// means no budget, and a bad config is refused by Init.
func TestSet(t *testing.T) {
	t.Run("budgets from the registry", func(t *testing.T) {
		reg := &budget.Registry{}
		var a, b dest.Set
		for _, s := range []*dest.Set{&a, &b} {
			if err := s.Init(dest.Config{Budgets: reg}); err != nil {
				t.Fatal(err)
			}
		}
		x := a.Get("x", nil)
		if x.Name != "x" || x.Policy.Budget == nil || x.Policy.Breaker != nil {
			t.Fatalf("state of x: %+v", x)
		}
		if a.Get("x", nil) != x {
			t.Error("a second Get made a new state")
		}
		if b.Get("x", nil).Policy.Budget != x.Policy.Budget {
			t.Error("two Sets on one registry spend two budgets for x")
		}
		keyed := a.Get("x.example", func() string { return "x.example:443" })
		if want, _ := reg.For("x.example:443", budget.Config{}); keyed.Policy.Budget != want {
			t.Error("the budget is not the registry's for the budget key")
		}
		if a.Get("y", nil).Policy.Budget == x.Policy.Budget {
			t.Error("y spends x's budget")
		}
		var other dest.Set
		other.Init(dest.Config{Budgets: &budget.Registry{}})
		if other.Get("x", nil).Policy.Budget == x.Policy.Budget {
			t.Error("another registry shares x's budget")
		}
		var proc dest.Set
		proc.Init(dest.Config{})
		if want, _ := budget.For("dest-test-x", budget.Config{}); proc.Get("dest-test-x", nil).Policy.Budget != want {
			t.Error("without Budgets, the budget is not the process's")
		}
	})

	t.Run("breaker per destination", func(t *testing.T) {
		var mu sync.Mutex
		var changes []string
		var s dest.Set
		err := s.Init(dest.Config{
			Budget:  budget.Config{Ratio: -1},
			Breaker: &breaker.Config{MinCalls: 1, Cooldown: time.Minute},
			OnBreakerChange: func(name string, _, to breaker.State, _ time.Time) {
				mu.Lock()
				defer mu.Unlock()
				changes = append(changes, name+":"+to.String())
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		x, y := s.Get("x", nil), s.Get("y", nil)
		if x.Policy.Budget != nil {
			t.Error("a negative Ratio still made a budget")
		}
		if x.Policy.Breaker == nil || x.Policy.Breaker == y.Policy.Breaker {
			t.Fatal("x and y do not have breakers of their own")
		}
		now := time.Unix(1e9, 0)
		p, err := x.Policy.Breaker.AllowAt(now)
		if err != nil {
			t.Fatal(err)
		}
		p.RecordAt(now, breaker.Failure)
		if got := x.Policy.Breaker.StateAt(now); got != breaker.Open {
			t.Fatalf("x's breaker is %v after a failure, want open", got)
		}
		if got := y.Policy.Breaker.StateAt(now); got != breaker.Closed {
			t.Errorf("y's breaker is %v, want closed", got)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(changes) != 1 || changes[0] != "x:open" {
			t.Errorf("changes %v, want [x:open]", changes)
		}
	})

	t.Run("shared by the policy", func(t *testing.T) {
		shared, _ := budget.New(budget.Config{})
		br, _ := breaker.New(breaker.Config{})
		var s dest.Set
		s.Init(dest.Config{Policy: retry.Policy{Budget: shared, Breaker: br}, Breaker: &breaker.Config{}})
		x, y := s.Get("x", nil), s.Get("y", nil)
		if x != y || x.Policy.Budget != shared || x.Policy.Breaker != br {
			t.Errorf("with the policy's own budget and breaker, states %p %p", x, y)
		}
	})

	t.Run("invalid", func(t *testing.T) {
		var s dest.Set
		if err := s.Init(dest.Config{Budget: budget.Config{Burst: 0.5}}); !errors.Is(err, budget.ErrInvalid) {
			t.Errorf("bad budget: %v", err)
		}
		if err := s.Init(dest.Config{Breaker: &breaker.Config{FailureRatio: 2}}); err == nil {
			t.Error("bad breaker accepted")
		}
	})

	t.Run("concurrent first use", func(t *testing.T) {
		var s dest.Set
		s.Init(dest.Config{Budgets: &budget.Registry{}, Breaker: &breaker.Config{}})
		got := make([]*dest.State, 8)
		var wg sync.WaitGroup
		for i := range got {
			wg.Go(func() { got[i] = s.Get("x", nil) })
		}
		wg.Wait()
		for _, st := range got {
			if st != got[0] {
				t.Fatal("concurrent first calls got different states")
			}
		}
	})
}

// Each destination's Hedge is a copy of every setting of the client's, so
// that a setting added to retry.Hedge is not silently dropped.
func TestHedgeCopied(t *testing.T) {
	h := &retry.Hedge{Delay: 1, Quantile: 0.5, MinDelay: 2, MaxDelay: 3, Max: 2}
	var s dest.Set
	if err := s.Init(dest.Config{Policy: retry.Policy{Hedge: h}, Budget: budget.Config{Ratio: -1}}); err != nil {
		t.Fatal(err)
	}
	got := s.Get("a", nil).Policy.Hedge
	if got == h || got == s.Get("b", nil).Policy.Hedge {
		t.Fatal("destinations share a Hedge")
	}
	hv, gv := reflect.ValueOf(h).Elem(), reflect.ValueOf(got).Elem()
	for i := range hv.NumField() {
		if f := hv.Type().Field(i); f.IsExported() && !hv.Field(i).Equal(gv.Field(i)) {
			t.Errorf("Hedge.%s not copied: %v, want %v", f.Name, gv.Field(i), hv.Field(i))
		}
	}
}
