package ui_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/sqlitestore"
	"github.com/heed-go/heed/ui"
)

// Mount the dashboard in a service, under its own path and behind the
// service's own authentication for reading; actions need the token.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "heed-ui-example")
	defer os.RemoveAll(dir)
	store, err := sqlitestore.Open(ctx, filepath.Join(dir, "jobs.db"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close()
	client := queue.NewClient(store, queue.ClientConfig{Operator: "ops"})
	client.Enqueue(ctx, "email", map[string]string{"to": "ann@example.com"}, queue.EnqueueOptions{Queue: "mail"})

	dash, err := ui.New(client, ui.Config{
		Path:  "/admin/jobs/",
		Token: os.Getenv("JOBS_UI_TOKEN") + "a-token-of-at-least-16-bytes",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer dash.Close()
	mux := http.NewServeMux()
	mux.Handle("/admin/jobs/", dash) // wrap it in your authentication

	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest("GET", "/admin/jobs/", nil))
	fmt.Println(rec.Code, strings.Contains(rec.Body.String(), `data-queue="mail"`))
	fmt.Println(rec.Header().Get("Content-Security-Policy")[:40])

	// An action without the token is refused.
	rec = httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest("POST", "/admin/jobs/dead/apply", strings.NewReader("op=delete&ids=1")))
	fmt.Println(rec.Code)
	// Output:
	// 200 true
	// default-src 'none'; script-src 'self'; s
	// 403
}
