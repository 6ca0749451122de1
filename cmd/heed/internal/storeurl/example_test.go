package storeurl_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/heed-go/heed/cmd/heed/internal/storeurl"
	"github.com/heed-go/heed/queue"
)

// Open a database by URL and hand its job store to the queue: the same code
// serves SQLite and PostgreSQL.
func ExampleOpen() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "storeurl-example-")
	defer os.RemoveAll(dir)
	url := "sqlite:" + filepath.Join(dir, "heed.db")

	// Read (the zero Options) creates nothing.
	if _, err := storeurl.Open(ctx, url, storeurl.Options{}); errors.Is(err, fs.ErrNotExist) {
		fmt.Println("read: no database yet")
	}

	db, err := storeurl.Open(ctx, url, storeurl.Options{Mode: storeurl.Migrate})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer db.Close()
	c := queue.NewClient(db.Jobs(), queue.ClientConfig{})
	job, _, err := c.Enqueue(ctx, "email", map[string]string{"to": "a@example.com"}, queue.EnqueueOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	have, known, _ := db.SchemaVersion(ctx)
	fmt.Println("job", job.ID, job.State)
	fmt.Println("schema current:", have == known, "postgres:", db.Postgres() != nil, "check:", db.Check(ctx))
	// Output:
	// read: no database yet
	// job 1 available
	// schema current: true postgres: false check: <nil>
}

// Name a database in messages without its password.
func ExampleName() {
	fmt.Println(storeurl.Name("heed.db"))
	fmt.Println(storeurl.Name("sqlite:/var/lib/heed/jobs.db"))
	fmt.Println(storeurl.Name("postgres://heed:s3cret@db.internal/heed?sslmode=disable"))
	fmt.Println(storeurl.Name("host=db user=heed password=s3cret dbname=heed"))
	// Output:
	// sqlite heed.db
	// sqlite /var/lib/heed/jobs.db
	// postgres postgres://REDACTED@db.internal/heed?sslmode=disable
	// postgres host=db user=heed password=REDACTED dbname=heed
}
