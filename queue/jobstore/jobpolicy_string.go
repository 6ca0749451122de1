package jobstore

import (
	"fmt"
	"strings"
)

// String describes the overrides in words, as heed jobs show prints them:
// "linear backoff from 1s capped at 5s (jitter: equal); time budget 5s;
// attempt timeout 2s", or "" when p overrides nothing.
func (p JobPolicy) String() string {
	var parts []string
	if b := p.Backoff; b != nil {
		cp := ""
		if b.Cap > 0 {
			cp = fmt.Sprintf(" capped at %v", b.Cap)
		}
		parts = append(parts, fmt.Sprintf("%s backoff from %v%s (jitter: %s)", b.Kind, b.Base, cp, b.Jitter))
	}
	if p.TimeBudget > 0 {
		parts = append(parts, fmt.Sprintf("time budget %v", p.TimeBudget))
	}
	if p.AttemptTimeout > 0 {
		parts = append(parts, fmt.Sprintf("attempt timeout %v", p.AttemptTimeout))
	}
	return strings.Join(parts, "; ")
}
