package main

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
)

// The example runs against the test Redis when HEED_TEST_REDIS_URL is set:
// four tasks complete (some after retries) and the malformed one is
// archived.
func TestExample(t *testing.T) {
	url := os.Getenv("HEED_TEST_REDIS_URL")
	if url == "" {
		t.Skip("example: HEED_TEST_REDIS_URL is not set; set it to a Redis URL with a database of its own to run the example against asynq")
	}
	ctx := context.Background()
	// A queue of this run's own: two runs at once on one Redis database (a
	// developer's and CI's) must not take each other's tasks or delete
	// each other's queue.
	queue := fmt.Sprintf("%s_%d_%d", queue, os.Getpid(), rand.Uint32())
	t.Cleanup(func() {
		opt, err := asynq.ParseRedisURI(url)
		if err != nil {
			t.Fatal(err)
		}
		in := asynq.NewInspector(opt)
		defer in.Close()
		in.DeleteAllCompletedTasks(queue)
		in.DeleteQueue(queue, true)
		rc := opt.MakeRedisClient().(redis.UniversalClient)
		defer rc.Close()
		if keys, err := rc.Keys(ctx, "asynq:{"+queue+"}:*").Result(); err == nil && len(keys) > 0 {
			rc.Del(ctx, keys...)
		}
	})
	var out bytes.Buffer
	if err := run(ctx, url, queue, &out); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + out.String())
	if c := strings.Count(out.String(), ": completed after"); c != 4 {
		t.Errorf("%d tasks completed, want 4", c)
	}
	if !strings.Contains(out.String(), "archived after 0 retries; heed's last decision: give_up (permanent)") {
		t.Errorf("the malformed task was not archived as permanent")
	}
}
