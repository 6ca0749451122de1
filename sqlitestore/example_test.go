package sqlitestore_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/sqlitestore"
)

// Open a database file (created and migrated on first use) and enqueue a
// job into it.
func ExampleOpen() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "heed")
	defer os.RemoveAll(dir)

	st, err := sqlitestore.Open(ctx, filepath.Join(dir, "heed.db")) // or "sqlite:heed.db"
	if err != nil {
		fmt.Println(err)
		return
	}
	defer st.Close()

	c := queue.NewClient(st, queue.ClientConfig{})
	if _, _, err := c.Enqueue(ctx, "email", map[string]string{"to": "ada@example.com"}, queue.EnqueueOptions{}); err != nil {
		fmt.Println(err)
		return
	}
	stats, _ := c.Stats(ctx)
	fmt.Printf("%+v\n", stats.Queues)
	fmt.Println("schema current:", st.Check(ctx) == nil)
	// Output:
	// [{Queue:default Available:1 Scheduled:0 Running:0 Succeeded:0 Dead:0}]
	// schema current: true
}
