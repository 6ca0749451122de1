package heedasynq_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/heed-go/heed/heedasynq"
)

// redisURL names the Redis the tests run asynq on, with a database number
// of its own (redis://127.0.0.1:6379/11 in CI). Each test uses queues of
// its own (heedasynq_...) and deletes them at the end; nothing else is
// touched (asynq's daily statistics keys of those queues expire by
// themselves).
const redisURL = "HEED_TEST_REDIS_URL"

var queueSeq atomic.Int64

// openQueue returns the Redis connection of the tests and a new queue
// name, deleted when t ends. It skips t when redisURL is not set.
func openQueue(t testing.TB) (asynq.RedisConnOpt, string) {
	t.Helper()
	url := os.Getenv(redisURL)
	if url == "" {
		t.Skipf("heedasynq: %s is not set; set it to a Redis URL with a database of its own (such as redis://127.0.0.1:6379/11) to run the tests against asynq", redisURL)
	}
	opt, err := asynq.ParseRedisURI(url)
	if err != nil {
		t.Fatal(err)
	}
	q := fmt.Sprintf("heedasynq_%d_%d_%d", os.Getpid(), time.Now().UnixNano()%1e6, queueSeq.Add(1))
	t.Cleanup(func() {
		in := asynq.NewInspector(opt)
		defer in.Close()
		queues, err := in.Queues()
		if err != nil {
			t.Errorf("listing queues: %v", err)
		}
		if slices.Contains(queues, q) { // the queue was used
			if _, err := in.DeleteAllCompletedTasks(q); err != nil {
				t.Errorf("deleting the completed tasks of queue %s: %v", q, err)
			}
			if err := in.DeleteQueue(q, true); err != nil {
				t.Errorf("deleting queue %s: %v", q, err)
			}
		}
		// What asynq keeps of a deleted queue: its daily statistics.
		rc := opt.MakeRedisClient().(redis.UniversalClient)
		defer rc.Close()
		ctx := context.Background()
		keys, err := rc.Keys(ctx, "asynq:{"+q+"}:*").Result()
		if err == nil && len(keys) > 0 {
			err = rc.Del(ctx, keys...).Err()
		}
		if err != nil {
			t.Errorf("deleting the keys of queue %s: %v", q, err)
		}
	})
	return opt, q
}

// quiet is an asynq.Logger that prints nothing.
type quiet struct{}

func (quiet) Debug(...any) {}
func (quiet) Info(...any)  {}
func (quiet) Warn(...any)  {}
func (quiet) Error(...any) {}
func (quiet) Fatal(...any) {}

const taskType = "heed_script"

// serve runs an asynq server on queue q with handler work under h, which
// checks for due tasks often so that short delays are kept. The server
// stops when t ends.
func serve(t testing.TB, opt asynq.RedisConnOpt, q string, h *heedasynq.Policy, work asynq.HandlerFunc, concurrency int) {
	t.Helper()
	cfg := asynq.Config{
		Queues:                   map[string]int{q: 1},
		Concurrency:              concurrency,
		TaskCheckInterval:        20 * time.Millisecond,
		DelayedTaskCheckInterval: 100 * time.Millisecond,
		Logger:                   quiet{},
		LogLevel:                 asynq.FatalLevel,
		ShutdownTimeout:          5 * time.Second,
	}
	mux := asynq.NewServeMux()
	if h != nil {
		cfg.RetryDelayFunc, cfg.IsFailure = h.RetryDelay, h.IsFailure
		mux.Use(h.Middleware)
	}
	mux.Handle(taskType, work)
	srv := asynq.NewServer(opt, cfg)
	if err := srv.Start(mux); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
}

// enqueue adds n tasks to q, their payloads 0 to n-1, kept an hour after
// they complete so that the tests can count them.
func enqueue(t testing.TB, opt asynq.RedisConnOpt, q string, n int) []string {
	t.Helper()
	c := asynq.NewClient(opt)
	defer c.Close()
	ids := make([]string, n)
	for i := range n {
		info, err := c.Enqueue(asynq.NewTask(taskType, []byte(strconv.Itoa(i))), asynq.Queue(q), asynq.MaxRetry(25), asynq.Retention(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = info.ID
	}
	return ids
}

func payload(t *asynq.Task) int {
	n, _ := strconv.Atoi(string(t.Payload()))
	return n
}

// waitFinal waits until n tasks of q are completed or archived, for at
// most limit, and returns the queue's counts.
func waitFinal(t testing.TB, opt asynq.RedisConnOpt, q string, n int, limit time.Duration) *asynq.QueueInfo {
	t.Helper()
	in := asynq.NewInspector(opt)
	defer in.Close()
	deadline := time.Now().Add(limit)
	for {
		qi, err := in.GetQueueInfo(q)
		if err == nil && qi.Completed+qi.Archived >= n {
			return qi
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %+v (%v)", limit, qi, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// taskInfo returns the task id of q as Redis has it, and heed's record
// (its result).
func taskInfo(t testing.TB, opt asynq.RedisConnOpt, q, id string) (*asynq.TaskInfo, map[string]any) {
	t.Helper()
	in := asynq.NewInspector(opt)
	defer in.Close()
	info, err := in.GetTaskInfo(q, id)
	if err != nil {
		t.Fatal(err)
	}
	var r map[string]any
	if len(info.Result) > 0 {
		if err := json.Unmarshal(info.Result, &r); err != nil {
			t.Fatalf("task %s result %q: %v", id, info.Result, err)
		}
	}
	return info, r
}
