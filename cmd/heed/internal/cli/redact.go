package cli

import (
	"errors"
	"flag"

	"github.com/heed-go/heed/internal/redact"
	"github.com/heed-go/heed/retry"
)

// maxLine is the most of a decision a worker line prints: 1 KiB, with the
// cut marked. The history keeps more (queue.MaxErrorText): see heed jobs
// show.
const maxLine = 1 << 10

// workerDecision is d as a worker line prints it: its error redacted and
// the whole cut at maxLine.
func workerDecision(d retry.Decision) string {
	if d.Err != nil {
		// Room for the rest of the line ("attempt N: ", the decision).
		d.Err = errors.New(redact.Text(redact.Cut(d.Err.Error(), maxLine-128)))
	}
	return redact.Cut(d.String(), maxLine)
}

// addRevealFlag adds --reveal, which prints job arguments as stored.
func addRevealFlag(fs *flag.FlagSet) *bool {
	return fs.Bool("reveal", false, "print job arguments as stored, secrets included (default: values of secret-looking names such as token or password, URL credentials and credential-like words are REDACTED)")
}
