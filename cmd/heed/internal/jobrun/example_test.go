package jobrun_test

import (
	"fmt"
	"os"

	"github.com/heed-go/heed/cmd/heed/internal/jobrun"
)

// The worker's own messages as heed's lines, with their attributes.
func ExampleLogger() {
	log := jobrun.Logger(os.Stdout, jobrun.LogText, "heed jobs work: ")
	log.Info("worker w1 on sqlite heed.db", "queues", "default (10 at once)")
	log.Warn("exec job 7 given back", "job_id", 7)
	// Output:
	// heed jobs work: worker w1 on sqlite heed.db queues="default (10 at once)"
	// heed jobs work: warning: exec job 7 given back job_id=7
}

func ExampleParseQueues() {
	qs, _ := jobrun.ParseQueues("emails=20,reports", 2)
	fmt.Println(qs)
	_, err := jobrun.ParseQueues("emails=0", 2)
	fmt.Println(err)
	// Output:
	// map[emails:20 reports:2]
	// queue "emails": concurrency "0" must be a whole number of at least 1
}
