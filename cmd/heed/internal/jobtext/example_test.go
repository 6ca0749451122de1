package jobtext_test

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/heed-go/heed/cmd/heed/internal/jobtext"
	"github.com/heed-go/heed/queue"
)

// A job's arguments are redacted before they are printed.
func ExampleWriteTable() {
	now := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	j := &queue.Job{ID: 7, Kind: "http", Queue: "default", State: queue.StateAvailable, Attempt: 1,
		Args: json.RawMessage(`{"token":"s3cret"}`), CreatedAt: now.Add(-time.Minute), AvailableAt: now.Add(time.Minute)}
	jobtext.WriteTable(os.Stdout, jobtext.RedactAll([]*queue.Job{j}, false), now)
	fmt.Println(jobtext.State(j, now))
	// Output:
	// ID  KIND  QUEUE    STATE              ATTEMPTS  CREATED   LAST ERROR  ARGS
	// 7   http  default  scheduled in 1m0s  1         1m0s ago              {"token":"REDACTED"}
	// scheduled in 1m0s
}
