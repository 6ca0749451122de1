package jobkinds_test

import (
	"encoding/json"
	"fmt"

	"github.com/heed-go/heed/internal/jobkinds"
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
