package textfmt_test

import (
	"fmt"
	"time"

	"github.com/heed-go/heed/internal/textfmt"
)

func Example() {
	fmt.Println(textfmt.Num(1234567.891), textfmt.Group(1500), textfmt.Plural(2, "job", "jobs"))
	fmt.Println(textfmt.Range(100*time.Millisecond, 1500*time.Millisecond), textfmt.Round(1234*time.Millisecond))
	// Output:
	// 1,234,567.89 1,500 2 jobs
	// 100ms–1.5s 1.2s
}
