package heedriver

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river/rivertype"

	"github.com/heed-go/heed/retry"
)

// TestRecordRedacts: the error text a decision keeps in the job's
// metadata, which River stores and its UI shows, holds no secret.
func TestRecordRedacts(t *testing.T) {
	job := &rivertype.JobRow{}
	d := retry.Decision{Action: retry.Retry, Reason: retry.ReasonPushback, Attempt: 1, Delay: time.Second,
		Err: errors.New("429 from https://u:hunter2@api.example/v1?token=hunter2: login failed: pwd=hunter2 Authorization: Bearer hunter2")}
	(&state{}).record(context.Background(), job, d, &retry.History{Attempts: 1, Start: time.Now()}, nil, 0)
	if md := string(job.Metadata); !strings.Contains(md, "REDACTED") || strings.Contains(md, "hunter2") {
		t.Errorf("metadata %s: the secret is kept", md)
	}
}
