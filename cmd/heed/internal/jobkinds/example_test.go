package jobkinds_test

import (
	"encoding/json"
	"fmt"

	"github.com/heed-go/heed/cmd/heed/internal/jobkinds"
	"github.com/heed-go/heed/internal/redact"
)

// Arguments are checked before a job is enqueued: unknown kinds, unknown
// fields and bad values are refused, with an example of what is expected.
func ExampleValidate() {
	fmt.Println(jobkinds.Validate("fail", json.RawMessage(`{"times": 2}`)))
	fmt.Println(jobkinds.Validate("sleep", json.RawMessage(`{"seconds": 2}`)))
	fmt.Println(jobkinds.Validate("email", json.RawMessage(`{}`)))
	// Output:
	// <nil>
	// invalid arguments for sleep job: unknown field "seconds" (example: {"ms": 250})
	// jobkinds: unknown job kind "email" (built in: noop, sleep, fail, http, exec)
}

// An http job that POSTs gets its Idempotency-Key when it is enqueued, so
// that every attempt sends the same key; its secret headers are stored for
// the worker and redacted wherever the job is shown.
func ExamplePrepare() {
	args, err := jobkinds.Prepare("http", json.RawMessage(`{"url": "https://api.example.com/orders", "method": "POST",
		"body": "{\"sku\": 7}", "headers": {"Content-Type": "application/json", "Authorization": "Bearer abc"}}`))
	if err != nil {
		panic(err)
	}
	var a struct{ Headers map[string]string }
	json.Unmarshal(args, &a)
	fmt.Println("key:", len(a.Headers["Idempotency-Key"]), "bytes, a quoted UUID")
	fmt.Println(string(redact.JSON(args)))
	// Output:
	// key: 38 bytes, a quoted UUID
	// {"body":"{\"sku\": 7}","headers":{"Authorization":"REDACTED","Content-Type":"application/json","Idempotency-Key":"REDACTED"},"method":"POST","url":"https://api.example.com/orders"}
}
