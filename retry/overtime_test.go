package retry_test

import (
	"context"
	"testing"

	"github.com/heed-go/heed/budget"
	"github.com/heed-go/heed/retry"
	"github.com/heed-go/heed/retry/overtimetest"
)

// TestOverTime runs the over-time conformance scenarios through retry.Do
// with the zero Policy and one default budget for the process (what
// retryhttp and heedgrpc give each destination), in virtual time.
func TestOverTime(t *testing.T) {
	overtimetest.Run(t, overtimetest.Calls(func(t *testing.T, dep *overtimetest.Dependency) overtimetest.Client {
		b, err := budget.New(budget.Config{})
		if err != nil {
			t.Fatal(err)
		}
		p := retry.Policy{Budget: b}
		return func(ctx context.Context, user int) bool {
			return retry.Do(ctx, p, func(ctx context.Context) error {
				return overtimetest.Err(ctx, dep.Attempt(ctx, user))
			}) == nil
		}
	}))
}
