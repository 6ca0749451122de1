package overtimetest_test

import (
	"fmt"
	"strings"

	"github.com/heed-go/heed/retry/overtimetest"
)

// The scenarios every executor runs, the outage once per offset.
func ExampleScenarios() {
	n := 0
	for _, s := range overtimetest.Scenarios() {
		if strings.HasPrefix(s.Name, "outage") {
			n++
			continue
		}
		fmt.Println(s.Name)
	}
	fmt.Println("outage at", n, "offsets")
	// Output:
	// cold start
	// steady
	// recovery
	// half failures
	// overload
	// black hole
	// outage at 10 offsets
}
