package queue

import (
	"github.com/heed-go/heed/internal/redact"
	"github.com/heed-go/heed/queue/jobstore"
)

// errorText is the text of err as a history entry keeps it: redacted, and
// cut at MaxErrorText.
func errorText(err error) string {
	return redact.Cut(redact.Text(redact.Cut(err.Error(), jobstore.MaxErrorText)), jobstore.MaxErrorText)
}

// panicText is a panic's value and stack as a history entry keeps it:
// redacted (a panic's value may quote a secret), and cut at MaxPanicText.
func panicText(stack string) string {
	if stack == "" {
		return ""
	}
	return redact.Cut(redact.Text(redact.Cut(stack, jobstore.MaxPanicText)), jobstore.MaxPanicText)
}
