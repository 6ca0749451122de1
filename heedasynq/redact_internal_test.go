package heedasynq

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/heed-go/heed/retry"
)

// TestKeepRedacts: the error text a decision keeps as the task's result,
// which asynq stores in Redis and its tools show, holds no secret.
func TestKeepRedacts(t *testing.T) {
	h := &Policy{records: map[string]record{}}
	d := retry.Decision{Action: retry.Defer, Attempt: 1, Delay: time.Second, At: time.Now().Add(time.Second),
		Err: errors.New("deferred: https://u:hunter2@api.example/v1?token=hunter2 said pwd=hunter2, X-Api-Key: hunter2")}
	h.keep(context.Background(), asynq.NewTask("k", nil), "t1", d, &retry.History{Attempts: 1, Start: time.Now()}, 0)
	if r := h.records["t1"]; !strings.Contains(r.Error, "REDACTED") || strings.Contains(r.Error, "hunter2") {
		t.Errorf("record error %q: the secret is kept", r.Error)
	}
}
