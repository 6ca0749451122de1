package cli

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	_ "modernc.org/sqlite"

	"github.com/heed-go/heed/budget"
	"github.com/heed-go/heed/cmd/heed/internal/storeurl"
	"github.com/heed-go/heed/idempotency"
	"github.com/heed-go/heed/pgstore/pgstoretest"
	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/retry"
	"github.com/heed-go/heed/retryhttp"
	"github.com/heed-go/heed/ui"
)

// canary is planted wherever a secret can be; it must come out nowhere.
// It looks like a credential (long, mixed classes) as real tokens do.
const canary = "CANARYx7Qp2Lm9Zr4Tv8Wb3N"

// shortCanary is a secret that does not look like one: short, as
// passwords are. Only the structure around it (a secret key, a scheme)
// says it is secret.
const shortCanary = "Hu7ter2"

// canaryURL has the canary in the user information, in every query name
// of the documented list, in a fragment and in a webhook-style path
// segment, and a character (") that Go quotes in its error messages.
func canaryURL(host, path string) string {
	var q []string
	for _, n := range []string{"token", "access_token", "id_token", "refresh_token", "api_key", "apikey", "key",
		"secret", "client_secret", "password", "pass", "pwd", "jwt", "bearer", "auth", "authorization",
		"signature", "sig", "session", "code"} {
		q = append(q, n+"="+canary)
	}
	return "http://u:" + canary + "@" + host + path + "/hooks/T000/B000/" + canary + "?" + strings.Join(q, "&") +
		`&q="x"#access_token=` + canary
}

// lineWriter is a goroutine-safe buffer that calls onLine, under its lock,
// with every complete line written.
type lineWriter struct {
	mu     sync.Mutex
	b      bytes.Buffer
	part   []byte
	onLine func(string)
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b.Write(p)
	w.part = append(w.part, p...)
	for {
		i := bytes.IndexByte(w.part, '\n')
		if i < 0 {
			break
		}
		if w.onLine != nil {
			w.onLine(string(w.part[:i]))
		}
		w.part = w.part[i+1:]
	}
	return len(p), nil
}

func (w *lineWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// TestCanary plants the canary in an Authorization and a Cookie header,
// user information, every listed query name, a fragment, a credential-like
// path segment, a DSN password and an idempotency key, runs every output
// path (retryhttp logs and errors, heed get -v with good and malformed
// URLs, a failing http job through heed jobs work, heed jobs show, ls and
// dead show with and without --json, the metrics endpoint, the database
// tables) and finds it nowhere, on SQLite and on PostgreSQL.
func TestCanary(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		runCanary(t, filepath.Join(t.TempDir(), "jobs.db"))
	})
	t.Run("postgres", func(t *testing.T) {
		_, u := pgstoretest.Schema(t)
		runCanary(t, u)
	})
}

// pgTables dumps every row of every heed table of the PostgreSQL schema,
// but the args of jobs: see runCanary.
func pgTables(t *testing.T, ctx context.Context, u string) map[string]string {
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	out := map[string]string{}
	for _, table := range []string{"heed_jobs", "heed_idempotency_keys", "heed_migrations"} {
		rows, err := conn.Query(ctx, "SELECT (to_jsonb(t) - 'args')::text FROM "+table+" t")
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				t.Fatal(err)
			}
			b.WriteString(s + "\n")
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		out["table "+table] = b.String()
	}
	return out
}

// sqliteTables dumps every row of every heed table of the SQLite file, but
// the args of jobs: see runCanary.
func sqliteTables(t *testing.T, path string) map[string]string {
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	out := map[string]string{}
	for _, table := range []string{"heed_jobs", "heed_idempotency_keys", "heed_schema_migrations"} {
		rows, err := db.Query("SELECT * FROM " + table)
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rows.Columns()
		var b strings.Builder
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			for i, v := range vals {
				if cols[i] == "args" {
					continue
				}
				if bs, ok := v.([]byte); ok {
					v = string(bs)
				}
				fmt.Fprintf(&b, "%s=%v\t", cols[i], v)
			}
			b.WriteString("\n")
		}
		rows.Close()
		out["table "+table] = b.String()
	}
	return out
}

// runCanary runs every output path over the database db. The one place the
// canary stays is the args column of heed_jobs: a job's arguments are
// stored as enqueued, because the worker needs them (an http job's URL,
// token included, is what it calls); heed jobs show --reveal prints them,
// and the test checks that it does, so that it could see the canary
// anywhere else.
func runCanary(t *testing.T, db string) {
	ctx := context.Background()
	outputs := map[string]string{}
	record := func(name string, code int, stdout, stderr string) {
		outputs[name+" (stdout)"] = stdout
		outputs[name+" (stderr)"] = stderr
		outputs[name+" (exit)"] = fmt.Sprint(code)
	}

	// A service that fails every request, and scrapes the worker's
	// metrics while the worker runs the job.
	var metricsURL atomic.Pointer[string]
	var metricsMu sync.Mutex
	var scraped strings.Builder
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u := metricsURL.Load(); u != nil {
			resp, err := http.Get(*u)
			if err != nil {
				t.Errorf("scrape %s: %v", *u, err)
			} else {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				metricsMu.Lock()
				scraped.Write(b)
				metricsMu.Unlock()
			}
		}
		// Secrets a server hands out, in the headers -i and -I write.
		w.Header().Set("Set-Cookie", "sid="+shortCanary+"; Path=/; HttpOnly")
		w.Header().Set("X-Api-Key", shortCanary)
		w.Header().Set("WWW-Authenticate", `Bearer realm="api", error="invalid_token", token="`+shortCanary+`"`)
		w.Header().Set("Location", "/cb?code="+shortCanary+"#access_token="+shortCanary)
		http.Error(w, "no", http.StatusInternalServerError)
	}))
	defer failing.Close()
	host := strings.TrimPrefix(failing.URL, "http://")

	// A service behind idempotency middleware on the store under test.
	d, err := openDB(ctx, db, storeurl.Migrate)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	idem := d.Keys()
	keyed := httptest.NewServer(idempotency.Middleware{Store: idem}.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintln(w, "made")
	})))
	defer keyed.Close()

	// heed get -v, good URLs: the headers, the URL and the key carry the
	// canary; once answered at once, once retried until it gives up.
	code, stdout, stderr := heed(t, "", "get", "-v", "-X", "POST", "-d", "x",
		"-H", "Authorization: Bearer "+canary, "-H", "Cookie: sid="+canary, "--idempotency-key", canary,
		canaryURL(strings.TrimPrefix(keyed.URL, "http://"), "/orders"))
	record("heed get -v (keyed)", code, stdout, stderr)
	if code != 0 || stdout != "made\n" || !strings.Contains(stderr, "attempt 1: ok") {
		t.Errorf("heed get: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	code, stdout, stderr = heed(t, "", "get", "-v", "--attempts", "2", "--base", "1ms",
		"-H", "Authorization: Bearer "+canary, "-H", "Cookie: sid="+canary, canaryURL(host, ""))
	record("heed get -v (failing)", code, stdout, stderr)
	if code != exitHTTPError || !strings.Contains(stderr, "attempt 2: 500 Internal Server Error, gave up") {
		t.Errorf("heed get: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	// Malformed URLs, refused connections, bad headers.
	for name, args := range map[string][]string{
		"heed get malformed URL": {"get", "-v", "http://u:" + canary + "@[::1" + canary + "/?token=" + canary},
		"heed get not http":      {"get", "ftp://u:" + canary + "@h/?token=" + canary},
		"heed get two URLs":      {"get", canaryURL("a", ""), canaryURL("b", "")},
		"heed get refused":       {"get", "-v", "--attempts", "2", "--base", "1ms", canaryURL("127.0.0.1:1", "")},
		"heed get bad header":    {"get", "-H", "Authorization Bearer " + canary, "http://h/"},
		"heed get -i":            {"get", "-i", "--attempts", "1", canaryURL(host, "")},
		"heed get -I":            {"get", "-I", "--attempts", "1", canaryURL(host, "")},
		"heed get -w (refused)": {"get", "--attempts", "1", "-w", "%{errormsg} %{url_effective} %{json}",
			canaryURL("127.0.0.1:1", "")},
		"heed get -w (answered)": {"get", "--attempts", "1", "-w", "%{errormsg} %{url_effective} %{json}", canaryURL(host, "")},
	} {
		code, stdout, stderr := heed(t, "", args...)
		record(name, code, stdout, stderr)
		if code == 0 {
			t.Errorf("%s: exit 0", name)
		}
	}

	// A DSN password in --db.
	for name, dsn := range map[string]string{
		"--db keyword/value": "host=127.0.0.1 port=1 user=u password=" + canary + " dbname=x connect_timeout=2",
		"--db URL":           "postgres://u:" + canary + "@127.0.0.1:1/x?connect_timeout=2&password=" + canary,
	} {
		code, stdout, stderr := heed(t, "", "jobs", "ls", "--db", dsn)
		record(name, code, stdout, stderr)
		if code != 1 || !strings.Contains(stderr, "REDACTED") {
			t.Errorf("%s: exit %d, stderr %q", name, code, stderr)
		}
	}

	// retryhttp's logs and returned errors, in process.
	var logs bytes.Buffer
	tr := &retryhttp.Transport{Policy: retry.Policy{Attempts: 2}, Budget: budget.Config{Ratio: -1},
		Logger: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	defer tr.CloseIdleConnections()
	for _, u := range []string{canaryURL(host, ""), canaryURL("127.0.0.1:1", "")} {
		req, _ := http.NewRequestWithContext(ctx, "GET", u, nil)
		req.Header.Set("Authorization", "Bearer "+canary)
		req.Header.Set("Cookie", "sid="+canary)
		req.Header.Set("Idempotency-Key", canary)
		if resp, err := tr.RoundTrip(req); err != nil {
			outputs["retryhttp RoundTrip error "+u[len(u)-10:]] = err.Error()
		} else {
			resp.Body.Close() // or its connection stays busy, its goroutines with it
		}
		if resp, err := (&http.Client{Transport: tr}).Do(req); err != nil {
			outputs["retryhttp RedactError(Client.Do error)"] = retryhttp.RedactError(err).Error()
		} else {
			resp.Body.Close()
		}
	}
	outputs["retryhttp log"] = logs.String()

	// A failing http job, run by heed jobs work with metrics on.
	code, stdout, stderr = heed(t, "", "jobs", "enqueue", "--db", db, "--attempts", "2", "http", `{"url": "`+strings.ReplaceAll(canaryURL(host, ""), `"`, `\"`)+`"}`)
	record("heed jobs enqueue", code, stdout, stderr)
	if code != 0 {
		t.Fatalf("enqueue: exit %d: %s", code, stderr)
	}
	id := regexp.MustCompile(`job (\d+)`).FindStringSubmatch(stdout)
	if id == nil {
		t.Fatalf("enqueue printed no job ID: %q", stdout)
	}
	code, stdout, stderr = heed(t, "", "jobs", "enqueue", "--db", db, "--json", "fail", `{"permanent": true, "message": "token=`+canary+` login failed: pwd=`+shortCanary+` password: `+shortCanary+` Authorization: Bearer `+shortCanary+` X-Api-Key: `+shortCanary+` https://h/cb#access_token=`+shortCanary+`"}`)
	record("heed jobs enqueue --json", code, stdout, stderr)
	// Secrets in the forms a handler's error quotes from elsewhere: a
	// webhook URL (Slack's, Discord's), a callback URL escaped inside a
	// query, an XML fault, a PEM key, a curl command line.
	forms := strings.Join([]string{
		"POST https://hooks.slack.com/services/T0A1B2C3/B0D4E5F6/" + shortCanary + ": 404",
		"https://discord.com/api/webhooks/123456789012345678/" + shortCanary,
		"redirect_uri=https%3A%2F%2Fapp.example%2Fcb%3Ftoken%3D" + shortCanary,
		"<fault><password>" + shortCanary + "</password></fault>",
		`-----BEGIN PRIVATE KEY-----\n` + shortCanary + `\n-----END PRIVATE KEY-----`,
		"exec: curl -u bob:" + shortCanary + " https://example.com/",
		// And what would drive the operator's terminal: a title, a
		// clear screen, text written backwards.
		`\u001b]0;pwned\u0007\u001b[2J\u202e`,
	}, "; ")
	code, stdout, stderr = heed(t, "", "jobs", "enqueue", "--db", db, "fail", `{"permanent": true, "message": "`+strings.ReplaceAll(forms, `"`, `\"`)+`"}`)
	record("heed jobs enqueue (forms)", code, stdout, stderr)
	if code != 0 {
		t.Fatalf("enqueue: exit %d: %s", code, stderr)
	}
	code, stdout, stderr = heed(t, "", "jobs", "enqueue", "--db", db, "--attempts", "1", "http",
		`{"url": "http://`+host+`/api/webhooks/123456789012345678/`+shortCanary+`?redirect_uri=https%3A%2F%2Fapp.example%2Fcb%3Faccess_token%3D`+shortCanary+`"}`)
	record("heed jobs enqueue (webhook)", code, stdout, stderr)
	if code != 0 {
		t.Fatalf("enqueue: exit %d: %s", code, stderr)
	}

	addrLine := regexp.MustCompile(`metrics at (http://127\.0\.0\.1:\d+/metrics)`)
	workOut := &lineWriter{}
	workErr := &lineWriter{onLine: func(l string) {
		if m := addrLine.FindStringSubmatch(l); m != nil {
			metricsURL.Store(&m[1])
		}
	}}
	code = Main(ctx, []string{"jobs", "work", "--db", db, "--until-empty", "--base", "1ms", "--cap", "2ms", "--poll", "5ms",
		"--metrics-addr", "127.0.0.1:0"}, strings.NewReader(""), workOut, workErr)
	record("heed jobs work", code, workOut.String(), workErr.String())
	metricsMu.Lock()
	outputs["metrics endpoint"] = scraped.String()
	metricsMu.Unlock()
	if code != 0 || !strings.Contains(workOut.String(), "-> dead-letter") || !strings.Contains(outputs["metrics endpoint"], "heed_queue_jobs_started_total") {
		t.Errorf("heed jobs work: exit %d\nstdout: %s\nstderr: %s\nmetrics: %.300s", code, workOut.String(), workErr.String(), outputs["metrics endpoint"])
	}

	// Every way to look at the job.
	for _, args := range [][]string{
		{"jobs", "show", id[1]}, {"jobs", "show", "--json", id[1]},
		{"jobs", "ls"}, {"jobs", "ls", "--json"},
		{"jobs", "dead", "ls"}, {"jobs", "dead", "ls", "--json"},
		{"jobs", "dead", "show", id[1]}, {"jobs", "dead", "show", "--json", id[1]},
	} {
		code, stdout, stderr := heed(t, "", append(args, "--db", db)...)
		name := "heed " + strings.Join(args, " ")
		record(name, code, stdout, stderr)
		if code != 0 || !strings.Contains(stdout, "REDACTED") {
			t.Errorf("%s: exit %d, no REDACTED in its output:\n%s%s", name, code, stdout, stderr)
		}
	}
	// The test can see the canary: --reveal shows the args as stored.
	if _, stdout, _ := heed(t, "", "jobs", "show", "--reveal", "--db", db, id[1]); !strings.Contains(stdout, canary) {
		t.Errorf("jobs show --reveal does not show the canary, so this test could not see it either:\n%s", stdout)
	}

	// The dashboard, signed in or not: every page, full and partial.
	h, err := ui.New(queue.NewClient(d.Jobs(), queue.ClientConfig{Operator: "test"}), ui.Config{Token: "canary-test-token-0123456789"})
	if err != nil {
		t.Fatal(err)
	}
	dash := httptest.NewServer(h)
	pages := []string{"/", "/jobs", "/jobs?state=dead", "/dead", "/periodic"}
	for _, s := range []string{"fail", "http"} {
		pages = append(pages, "/jobs?kind="+s)
	}
	getPage := func(p string, hdr ...string) string {
		req, _ := http.NewRequest("GET", dash.URL+p, nil)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.Status + "\n" + string(b)
	}
	body := getPage("/jobs?state=dead")
	for _, m := range regexp.MustCompile(`href="/jobs/(\d+)"`).FindAllStringSubmatch(body, -1) {
		pages = append(pages, "/jobs/"+m[1])
	}
	for _, m := range regexp.MustCompile(`href="/dead/([^"]+)"`).FindAllStringSubmatch(getPage("/dead"), -1) {
		pages = append(pages, "/dead/"+m[1])
	}
	if len(pages) < 12 {
		t.Errorf("the dashboard lists too few jobs and groups to read: %v\n%s", pages, body)
	}
	for _, p := range pages {
		outputs["heed ui "+p] = getPage(p)
		outputs["heed ui "+p+" (partial)"] = getPage(p, "X-Heed-Partial", "1")
		outputs["heed ui "+p+" (signed in)"] = getPage(p, "Authorization", "Bearer canary-test-token-0123456789")
	}
	dash.Close()
	h.Close()

	// The tables.
	d.Close()
	dumps := map[string]string{}
	if d.Postgres() == nil {
		dumps = sqliteTables(t, db)
	} else {
		dumps = pgTables(t, ctx, db)
	}
	for name, dump := range dumps {
		outputs[name] = dump
	}
	if !strings.Contains(outputs["table heed_jobs"], "500 Internal Server Error") || !strings.Contains(outputs["table heed_idempotency_keys"], "201") {
		t.Errorf("the tables lack the job's history or the stored response:\n%s\n%s", outputs["table heed_jobs"], outputs["table heed_idempotency_keys"])
	}

	for name, text := range outputs {
		if strings.Contains(text, canary) {
			t.Errorf("%s has the canary:\n%s", name, text)
		}
		if strings.Contains(text, shortCanary) {
			t.Errorf("%s has the short canary:\n%s", name, text)
		}
		if i := strings.IndexAny(text, "\x1b\x07\u202e"); i >= 0 {
			t.Errorf("%s has a terminal control character: %q", name, text[max(0, i-40):min(len(text), i+40)])
		}
	}
}
