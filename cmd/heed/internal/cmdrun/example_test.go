package cmdrun_test

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/heed-go/heed/cmd/heed/internal/cmdrun"
	"github.com/heed-go/heed/retry"
)

// A command that exits 3, with 3 listed as permanent: retry.Do gives up
// after one attempt.
func Example() {
	var codes cmdrun.Codes
	codes.Permanent.Set("3")
	r := cmdrun.New([]string{"sh", "-c", "exit 3"}, nil, os.Stdout, os.Stderr, &codes, 0)
	err := retry.Do(context.Background(), retry.Policy{Attempts: 3}, r.Attempt)
	ee, _ := errors.AsType[*cmdrun.ExitError](err)
	fmt.Println(ee.Code, retry.IsPermanent(err))
	// Output: 3 true
}
