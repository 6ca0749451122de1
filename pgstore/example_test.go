package pgstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/heed-go/heed/pgstore"
	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/queue/jobstore"
)

// Open a store, enqueue a job and claim it, as a worker does. The example
// needs a server, so it has no Output to check; it prints a note and
// returns when HEED_TEST_POSTGRES_URL is not set.
func Example() {
	url := os.Getenv("HEED_TEST_POSTGRES_URL") // postgres://user:pass@host:5432/db
	if url == "" {
		fmt.Println("HEED_TEST_POSTGRES_URL not set")
		return
	}
	ctx := context.Background()
	s, err := pgstore.Open(ctx, url) // connects and migrates
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	now := time.Now()
	in, err := queue.NewJobInsert("email", json.RawMessage(`{"to":"ada@example.com"}`),
		queue.EnqueueOptions{Queue: "example", UniqueKey: "welcome:ada"}, now)
	if err != nil {
		log.Fatal(err)
	}
	job, inserted, err := s.JobInsert(ctx, in)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("job", job.ID, "inserted:", inserted)

	jobs, err := s.JobClaim(ctx, jobstore.ClaimParams{Queue: "example", Limit: 10, Now: now,
		LeaseUntil: now.Add(30 * time.Second), Worker: "example"})
	if err != nil {
		log.Fatal(err)
	}
	for _, j := range jobs {
		err := s.JobTransition(ctx, jobstore.Transition{ID: j.ID, LeaseToken: j.LeaseToken,
			State: jobstore.StateSucceeded, Attempt: j.Attempt, FinishedAt: time.Now(),
			Entry: jobstore.Attempt{Attempt: j.Attempt, Outcome: "success", Action: "done"}})
		if err != nil {
			log.Fatal(err)
		}
	}
}

// Enqueue a job in the same transaction as the caller's own writes: the
// job exists, and workers hear of it, only if the transaction commits.
func ExampleStore_EnqueueTx() {
	url := os.Getenv("HEED_TEST_POSTGRES_URL")
	if url == "" {
		fmt.Println("HEED_TEST_POSTGRES_URL not set")
		return
	}
	ctx := context.Background()
	s, err := pgstore.Open(ctx, url)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	tx, err := s.Pool().Begin(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer tx.Rollback(ctx) // a no-op after Commit
	// ... the caller's own writes, through tx ...
	type shipArgs struct {
		Order int `json:"order"`
	}
	if _, _, err := s.EnqueueTx(ctx, tx, "ship", shipArgs{Order: 42}, queue.EnqueueOptions{Queue: "example"}); err != nil {
		log.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		log.Fatal(err)
	}
}

// Wake up as soon as a job is enqueued anywhere, and poll as well.
func ExampleStore_JobNotify() {
	url := os.Getenv("HEED_TEST_POSTGRES_URL")
	if url == "" {
		fmt.Println("HEED_TEST_POSTGRES_URL not set")
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	s, err := pgstore.Open(ctx, url)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	wake, err := s.JobNotify(ctx)
	if err != nil {
		log.Fatal(err)
	}
	poll := time.NewTicker(time.Second)
	defer poll.Stop()
	for {
		select {
		case q, ok := <-wake:
			if !ok {
				return // ctx ended or the store closed
			}
			fmt.Println("jobs in", q) // claim from q now
		case <-poll.C:
			// claim from every queue this worker serves
		}
	}
}
