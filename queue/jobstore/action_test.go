package jobstore

import (
	"strings"
	"testing"

	"github.com/heed-go/heed/retry"
)

// A history's action key reads back as the retry.Action it was written
// from; the store's own actions and misspellings are refused by name.
func TestParseAction(t *testing.T) {
	for _, a := range []retry.Action{retry.Done, retry.Retry, retry.GiveUp, retry.Defer} {
		if got, err := ParseAction(a.Key()); err != nil || got != a {
			t.Errorf("ParseAction(%q) = %v, %v", a.Key(), got, err)
		}
	}
	for _, bad := range []string{"give up", "", "unknown", ActionSnooze, ActionCut} {
		if _, err := ParseAction(bad); err == nil || !strings.Contains(err.Error(), `"`+bad+`"`) {
			t.Errorf("ParseAction(%q) error = %v, want one naming it", bad, err)
		}
	}
}
