package main

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The example runs against the test database when HEED_TEST_POSTGRES_URL
// is set: four jobs complete (some after retries) and the malformed one is
// cancelled.
func TestExample(t *testing.T) {
	url := os.Getenv("HEED_TEST_POSTGRES_URL")
	if url == "" {
		t.Skip("example: HEED_TEST_POSTGRES_URL is not set; set it to a PostgreSQL URL to run the example against River")
	}
	ctx := context.Background()
	// A schema of this run's own: two runs at once on one database (a
	// developer's and CI's) must not drop each other's tables.
	own := fmt.Sprintf("%s_%d_%d", schema, os.Getpid(), rand.Uint32())
	t.Cleanup(func() {
		pool, err := pgxpool.New(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		defer pool.Close()
		if _, err := pool.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{own}.Sanitize()+" CASCADE"); err != nil {
			t.Error(err)
		}
	})
	var out bytes.Buffer
	if err := run(ctx, url, own, &out); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + out.String())
	if c := strings.Count(out.String(), ": completed after"); c != 4 {
		t.Errorf("%d jobs completed, want 4", c)
	}
	if !strings.Contains(out.String(), "cancelled after 1 attempt(s); heed's last decision: give_up (permanent)") {
		t.Errorf("the malformed job was not cancelled as permanent")
	}
}
