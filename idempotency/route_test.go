package idempotency

import (
	"strings"
	"testing"
)

func TestPathRouteHidesCredentials(t *testing.T) {
	const tok = "CANARYx7Qp2Lm9Zr4Tv8Wb3N"
	if got := pathRoute("/orders/42"); got != "/orders/42" {
		t.Errorf("pathRoute changed an innocent path: %q", got)
	}
	got := pathRoute("/hooks/T000/B000/" + tok)
	if strings.Contains(got, tok) || !strings.HasPrefix(got, "/hooks/T000/B000/sha256:") || len(got) != len("/hooks/T000/B000/sha256:")+32 {
		t.Errorf("pathRoute = %q", got)
	}
	if a, b := pathRoute("/hooks/"+tok), pathRoute("/hooks/"+tok+"2"); a == b {
		t.Errorf("two tokens share the route %q", a)
	}
}
