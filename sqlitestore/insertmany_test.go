package sqlitestore_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/queue/jobstore"
)

// TestInsertManyFullStatements inserts, into a fresh store, a batch long
// enough for full 500-row statements: the first one is prepared before the
// transaction takes the writer's one connection (prepared inside it, it
// waited for that connection forever).
func TestInsertManyFullStatements(t *testing.T) {
	s := open(t)
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	now := time.Now()
	ins := make([]jobstore.JobInsert, 1234)
	for i := range ins {
		in, err := queue.NewJobInsert("noop", json.RawMessage(`{}`), queue.EnqueueOptions{}, now)
		if err != nil {
			t.Fatal(err)
		}
		ins[i] = in
	}
	for round := range 2 { // the second finds the statement prepared
		res, err := s.JobInsertMany(ctx, ins)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		for i := 1; i < len(res); i++ {
			if !res[i].Inserted || res[i].Job.ID != res[i-1].Job.ID+1 {
				t.Fatalf("round %d: result %d: inserted %v, ID %d after %d", round, i, res[i].Inserted, res[i].Job.ID, res[i-1].Job.ID)
			}
		}
	}
	st, err := s.Stats(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Queues[0].Available; got != 2*len(ins) {
		t.Errorf("%d jobs available, want %d", got, 2*len(ins))
	}
}
