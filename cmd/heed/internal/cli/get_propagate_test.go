package cli

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// heed get sends Retry-Attempt and Timeout-Remaining unless
// --propagate=false.
func TestGetPropagate(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get("Retry-Attempt")+"|"+r.Header.Get("Timeout-Remaining"))
	}))
	defer srv.Close()
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"get", "--max-time", "1m", srv.URL}, "1|"},
		{[]string{"get", "--propagate=false", "--max-time", "1m", srv.URL}, "|"},
	} {
		got = nil
		if code, _, stderr := heed(t, "", tt.args...); code != 0 || len(got) != 1 {
			t.Fatalf("%v: exit %d, %d requests: %s", tt.args, code, len(got), stderr)
		}
		if tt.want == "1|" && (got[0][:2] != "1|" || len(got[0]) == 2) || tt.want == "|" && got[0] != "|" {
			t.Errorf("%v: Retry-Attempt|Timeout-Remaining = %q", tt.args, got[0])
		}
	}
}
