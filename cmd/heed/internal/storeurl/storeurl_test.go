package storeurl

import (
	"context"
	"errors"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/heed-go/heed/queue"
)

func TestWithPoolSize(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"postgres://h/db", "postgres://h/db?pool_max_conns=7"},
		{"postgres://h/db?sslmode=disable", "postgres://h/db?pool_max_conns=7&sslmode=disable"},
		{"postgresql://h/db?pool_max_conns=2", "postgresql://h/db?pool_max_conns=2"},
		{"host=h dbname=db", "host=h dbname=db pool_max_conns=7"},
		{"host=h pool_max_conns=3", "host=h pool_max_conns=3"},
	} {
		if got := withPoolSize(tt.in, 7); got != tt.want {
			t.Errorf("withPoolSize(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestIsPostgres(t *testing.T) {
	for in, want := range map[string]bool{
		"heed.db": false, "sqlite:heed.db": false, "file:heed.db?mode=ro": false, "host.db": false,
		"postgres://h/db": true, "postgresql://h/db": true, "host=db user=heed": true, " dbname = x": true,
		"hostname=x": false,
	} {
		if got := IsPostgres(in); got != want {
			t.Errorf("IsPostgres(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestNameHidesPasswords(t *testing.T) {
	for _, in := range []string{
		"postgres://u:pw1secret@h/db?password=pw2secret",
		"host=h password=pw1secret",
		"postgres://u:pw1secret@h:notaport/db",
	} {
		got := Name(in)
		if strings.Contains(got, "secret") || !strings.HasPrefix(got, "postgres ") {
			t.Errorf("Name(%q) = %q", in, got)
		}
	}
	if got := Name("file:///tmp/a%20b.db?mode=ro"); got != "sqlite /tmp/a b.db" {
		t.Errorf("Name(file URI) = %q", got)
	}
}

func TestFile(t *testing.T) {
	for in, want := range map[string]string{
		"heed.db": "heed.db", "sqlite:x.db": "x.db", "sqlite:///abs/x.db": "/abs/x.db", "file:x.db?mode=rw": "x.db",
	} {
		if got, ok := File(in); !ok || got != want {
			t.Errorf("File(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	for _, in := range []string{"postgres://h/db", "sqlite:", ""} {
		if got, ok := File(in); ok {
			t.Errorf("File(%q) = %q, true", in, got)
		}
	}
}

func TestOpenModes(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "jobs.db")
	for _, m := range []Mode{Read, Write} {
		if _, err := Open(ctx, path, Options{Mode: m}); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("mode %d on a missing file: %v, want fs.ErrNotExist", m, err)
		}
		if _, err := os.Stat(path); err == nil {
			t.Fatalf("mode %d created the file", m)
		}
	}
	db, err := Open(ctx, path, Options{Mode: Create})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := queue.NewClient(db.Jobs(), queue.ClientConfig{}).Enqueue(ctx, "k", nil, queue.EnqueueOptions{}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	ro, err := Open(ctx, "sqlite:"+path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if _, _, err := queue.NewClient(ro.Jobs(), queue.ClientConfig{}).Enqueue(ctx, "k", nil, queue.EnqueueOptions{}); err == nil {
		t.Errorf("enqueue on a Read database succeeded")
	}
	if ro.Keys() == nil || ro.Name() != "sqlite "+path {
		t.Errorf("Keys %v, Name %q", ro.Keys(), ro.Name())
	}
}

func TestOpenUnsupportedScheme(t *testing.T) {
	_, err := Open(context.Background(), "mysql://u:pw@h/db", Options{})
	var se *SchemeError
	if !errors.As(err, &se) || se.Scheme != "mysql" || strings.Contains(err.Error(), "pw") {
		t.Errorf("err = %v", err)
	}
}

// A search_path naming no schema is ErrNoSchema, told by the error's type
// (SQLSTATE 3F000), not its text.
func TestOpenNoSchema(t *testing.T) {
	base := os.Getenv("HEED_TEST_POSTGRES_URL")
	if base == "" {
		t.Skip("HEED_TEST_POSTGRES_URL is not set: PostgreSQL tests skipped")
	}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", "heed_storeurl_no_such_schema")
	u.RawQuery = q.Encode()
	_, err = Open(context.Background(), u.String(), Options{Mode: Migrate})
	if !errors.Is(err, ErrNoSchema) {
		t.Errorf("err = %v, want ErrNoSchema", err)
	}
}
