package jobbench_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/heed-go/heed/cmd/heed/internal/jobbench"
	"github.com/heed-go/heed/cmd/heed/internal/storeurl"
)

// A burn-down of 20 jobs on a new SQLite file.
func Example() {
	dir, _ := os.MkdirTemp("", "jobbench-")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	db, err := storeurl.Open(ctx, filepath.Join(dir, "bench.db"), storeurl.Options{Mode: storeurl.Migrate})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer db.Close()
	b := &jobbench.Bench{DB: db, Concurrency: 4}
	if _, err := b.Insert(ctx, "bench", 20, 2); err != nil {
		fmt.Println(err)
	}
	if _, err := b.Drain(ctx, "bench", 20, nil, nil); err != nil {
		fmt.Println(err)
	}
	fmt.Println(b.Inserted.Load(), "inserted,", b.Drained.Load(), "drained")
	// Output: 20 inserted, 20 drained
}
