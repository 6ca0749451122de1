package duration_test

import (
	"fmt"

	"github.com/heed-go/heed/internal/duration"
)

func ExampleParse() {
	for _, s := range []string{"300ms", "5", "0.5", "1m30s", "7d", "1d12h", "fast"} {
		d, err := duration.Parse(s)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Println(s, "=", d)
	}
	// Output:
	// 300ms = 300ms
	// 5 = 5s
	// 0.5 = 500ms
	// 1m30s = 1m30s
	// 7d = 168h0m0s
	// 1d12h = 36h0m0s
	// "fast" is not a duration: write seconds (5, 0.5) or a number with a unit: 300ms, 30s, 5m, 2h, 7d
}
