package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

// Arguments over queue.MaxArgs are refused at enqueue, as a usage error
// that says why, and nothing is written.
func TestEnqueueRefusesHugeArgs(t *testing.T) {
	db := filepath.Join(t.TempDir(), "jobs.db")
	code, stdout, stderr := heed(t, "", "jobs", "enqueue", "--db", db, "fail", `{"message": "`+strings.Repeat("m", 2<<20)+`"}`)
	if code != exitUsage || stdout != "" || !strings.Contains(stderr, "queue: args is 2.1 MB (2097167 bytes), at most 1 MiB (1048576 bytes)") {
		t.Errorf("exit %d, stdout %q, stderr %.300q", code, stdout, stderr)
	}
}
