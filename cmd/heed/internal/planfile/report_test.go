package planfile

import (
	"errors"
	"testing"

	"github.com/heed-go/heed/deadline"
)

func TestInputError(t *testing.T) {
	step := &deadline.PlanError{Step: 1, Name: "stock", Field: "Budget", Reason: "is 0s, must be positive"}
	top := &deadline.PlanError{Step: -1, Field: "Deadline", Reason: "is 0s, must be positive"}
	for _, tt := range []struct {
		err          error
		file         string
		deadlineFlag bool
		want         string
	}{
		{step, "", false, "--step 2 (stock): budget is 0s, must be positive"},
		{step, "plan.yaml", false, "plan.yaml: step 2 (stock): budget is 0s, must be positive"},
		{step, "-", false, "stdin: step 2 (stock): budget is 0s, must be positive"},
		{top, "", false, "invalid --deadline: 0s, must be positive"},
		{top, "plan.yaml", false, "plan.yaml: deadline is 0s, must be positive"},
		{top, "plan.yaml", true, "invalid --deadline: 0s, must be positive"},
		{errors.New("other"), "plan.yaml", false, "other"},
	} {
		if got := InputError(tt.err, tt.file, tt.deadlineFlag, false).Error(); got != tt.want {
			t.Errorf("InputError(%v, %q, %v) = %q, want %q", tt.err, tt.file, tt.deadlineFlag, got, tt.want)
		}
	}
}
