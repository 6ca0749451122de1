package jobkinds

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/retry"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		kind, args string
		want       string // "" for valid
	}{
		{"noop", `{}`, ""},
		{"noop", ``, ""},
		{"noop", `{"x": 1}`, `unknown field "x"`},
		{"sleep", `{"ms": 10}`, ""},
		{"sleep", `{"ms": -1}`, `"ms" is -1`},
		{"sleep", `{"ms": "10"}`, "cannot unmarshal"},
		{"sleep", `{} {}`, "trailing data"},
		{"fail", `{"times": 2, "permanent": true, "message": "m", "ms": 1}`, ""},
		{"fail", `{"times": -2}`, `"times" is -2`},
		{"http", `{"url": "https://example.com/x"}`, ""},
		{"http", `{}`, `"url" is missing`},
		{"http", `{"url": "/relative"}`, "absolute"},
		{"http", `{"url": "https://x", "method": "BREW"}`, `"method"`},
		{"http", `{"url": "https://x", "method": "POST", "body": "{}", "headers": {"Content-Type": "application/json"}, "keyed_retries_off": true}`, ""},
		{"http", `{"url": "https://x", "headers": {"Bad Name": "v"}}`, `"Bad Name" is not a header name`},
		{"http", `{"url": "https://x", "headers": {"content-length": "3"}}`, `Content-Length is set by the request itself`},
		{"http", `{"url": "https://x", "headers": {"X-A": "v\r\nX-B: w"}}`, `line break`},
		{"http", `{"url": "https://x", "headers": {"X-A": 1}}`, `cannot unmarshal`},
		{"exec", `{"argv": ["true"]}`, ""},
		{"exec", `{"argv": [""]}`, `"argv"`},
		{"nope", `{}`, "unknown job kind"},
	}
	for _, tt := range tests {
		err := Validate(tt.kind, json.RawMessage(tt.args))
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("Validate(%s, %s) = %v", tt.kind, tt.args, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("Validate(%s, %s) = %v, want %q", tt.kind, tt.args, err, tt.want)
		}
	}
	if err := Validate("nope", nil); !errors.Is(err, ErrUnknownKind) {
		t.Errorf("unknown kind: %v", err)
	}
}

func TestFail(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		args    failArgs
		attempt int
		want    string // "ok", "transient", "permanent"
	}{
		{failArgs{Times: 2}, 1, "transient"},
		{failArgs{Times: 2}, 2, "transient"},
		{failArgs{Times: 2}, 3, "ok"},
		{failArgs{Permanent: true}, 1, "permanent"},
		{failArgs{Times: 1, Permanent: true}, 1, "transient"},
		{failArgs{Times: 1, Permanent: true}, 2, "permanent"},
	} {
		err := runFail(ctx, &queue.Job{Attempt: tt.attempt}, tt.args)
		got := "ok"
		switch {
		case retry.IsPermanent(err):
			got = "permanent"
		case err != nil:
			got = "transient"
		}
		if got != tt.want {
			t.Errorf("%+v attempt %d: %v, want %s", tt.args, tt.attempt, err, tt.want)
		}
	}
}

func TestHTTP(t *testing.T) {
	status, retryAfter := 200, ""
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if retryAfter != "" {
			w.Header().Set("Retry-After", retryAfter)
		}
		w.WriteHeader(status)
	}))
	defer srv.Close()
	client := newHTTPClient(nil)
	run := func() error {
		return runHTTP(context.Background(), client, httpArgs{URL: srv.URL + "/x?token=secret"})
	}
	if err := run(); err != nil {
		t.Errorf("200: %v", err)
	}
	status = 404
	if err := run(); !retry.IsPermanent(err) || strings.Contains(err.Error(), "secret") {
		t.Errorf("404: %v, want permanent, without the token", err)
	}
	status = 500
	if err := run(); err == nil || retry.IsPermanent(err) {
		t.Errorf("500: %v, want transient", err)
	}
	status, retryAfter = 503, "7"
	if err := run(); func() bool {
		o, wait := (&retry.Policy{}).Classify(err, false)
		return o != retry.OutcomePushback || wait != 7*time.Second
	}() {
		t.Errorf("503 Retry-After 7: %v, want a pushback of 7s", err)
	}
	if err := runHTTP(context.Background(), client, httpArgs{URL: "http://127.0.0.1:1/"}); err == nil || retry.IsPermanent(err) {
		t.Errorf("refused: %v, want transient", err)
	}
	status, retryAfter = 503, ""
	if err := runHTTP(context.Background(), client, httpArgs{URL: srv.URL, Method: "POST"}); !retry.IsPermanent(err) {
		t.Errorf("POST answered 503: %v, want permanent: retryhttp does not repeat an unkeyed POST", err)
	}
}

// The http kind passes retryhttp's classification on: what retryhttp
// would not repeat, the queue does not repeat either.
func TestHTTPClassificationIsRetryhttps(t *testing.T) {
	var posts atomic.Int64
	reset := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		posts.Add(1)
		io.Copy(io.Discard, r.Body)
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close() // the request was read: it may have been processed
		}
	}))
	defer reset.Close()
	client := newHTTPClient(nil)
	err := runHTTP(context.Background(), client, httpArgs{URL: reset.URL, Method: "POST"})
	if !retry.IsPermanent(err) || posts.Load() != 1 {
		t.Errorf("POST reset after sending: %v after %d requests, want permanent after 1", err, posts.Load())
	}
	if err := runHTTP(context.Background(), client, httpArgs{URL: reset.URL, Method: "GET"}); err == nil || retry.IsPermanent(err) {
		t.Errorf("GET reset after sending: %v, want transient", err)
	}
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer tlsSrv.Close()
	if err := runHTTP(context.Background(), client, httpArgs{URL: tlsSrv.URL}); !retry.IsPermanent(err) {
		t.Errorf("untrusted certificate: %v, want permanent", err)
	}
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	defer slow.Close()
	if err := runHTTP(context.Background(), client, httpArgs{URL: slow.URL, TimeoutMS: 20}); err == nil || retry.IsPermanent(err) {
		t.Errorf("timeout_ms ran out: %v, want transient", err)
	}
}

// timeout_ms is retryhttp's attempt limit: a POST without a key that a
// server read and never answered may have been processed, so the job is not
// sent again; a GET that timed out is retried.
func TestHTTPTimeoutOfUnkeyedPOSTIsNotRepeated(t *testing.T) {
	var received atomic.Int64
	hung := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		received.Add(1)
		<-r.Context().Done() // read the request, never answer
	}))
	defer hung.Close()
	client := newHTTPClient(nil)
	for _, tc := range []struct {
		method    string
		permanent bool
	}{
		{"POST", true},
		{"GET", false},
	} {
		received.Store(0)
		// On a busy machine timeout_ms may cut the request before the
		// handler counts it: at most one request, and what the queue does
		// next is the outcome's.
		err := runHTTP(context.Background(), client, httpArgs{URL: hung.URL, Method: tc.method, TimeoutMS: 200})
		if err == nil || retry.IsPermanent(err) != tc.permanent || received.Load() > 1 {
			t.Errorf("%s cut by timeout_ms: %v after %d requests, want permanent=%v after at most 1", tc.method, err, received.Load(), tc.permanent)
		}
	}
}

func TestExec(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("uses sh")
	}
	ctx := context.Background()
	if err := runExec(ctx, execArgs{Argv: []string{"sh", "-c", "exit 0"}}); err != nil {
		t.Errorf("exit 0: %v", err)
	}
	err := runExec(ctx, execArgs{Argv: []string{"sh", "-c", "echo oops >&2; exit 3"}})
	if err == nil || retry.IsPermanent(err) || !strings.Contains(err.Error(), "oops") {
		t.Errorf("exit 3: %v, want transient with the output", err)
	}
	if err := runExec(ctx, execArgs{Argv: []string{"/no/such/command"}}); !retry.IsPermanent(err) {
		t.Errorf("not found: %v, want permanent", err)
	}
	if err := runExec(ctx, execArgs{Argv: []string{"sh", "-c", "exit 127"}}); !retry.IsPermanent(err) {
		t.Errorf("exit 127: %v, want permanent", err)
	}
	if err := runExec(ctx, execArgs{Argv: []string{"sleep", "5"}, TimeoutMS: 50}); err == nil || retry.IsPermanent(err) {
		t.Errorf("timeout: %v, want transient", err)
	}
}

// quotingBase fails every request with an error that quotes its URL, as a
// proxy's or a custom transport's error may.
type quotingBase struct{}

func (quotingBase) RoundTrip(r *http.Request) (*http.Response, error) {
	return nil, errors.New("upstream refused " + r.URL.String())
}

func TestHTTPErrorsAreRedacted(t *testing.T) {
	const canary = "CANARYx7Qp2Lm9Zr4Tv8Wb3N"
	u := `http://u:` + canary + `@127.0.0.1:1/hooks/T0/B0/` + canary + `?access_token=` + canary + `&q="x"#jwt=` + canary
	for name, base := range map[string]http.RoundTripper{
		"default base": nil,
		"quoting base": quotingBase{},
	} {
		err := runHTTP(context.Background(), newHTTPClient(base), httpArgs{URL: u})
		if err == nil || strings.Contains(err.Error(), canary) || !strings.HasPrefix(err.Error(), "http GET http://REDACTED@127.0.0.1:1/hooks/REDACTED/B0/REDACTED?") {
			t.Errorf("%s: %v", name, err)
		}
	}
	// A URL that does not parse is quoted by net/url's error.
	err := runHTTP(context.Background(), newHTTPClient(nil), httpArgs{URL: "http://u:" + canary + "@[::1" + canary + "/"})
	if err == nil || strings.Contains(err.Error(), canary) {
		t.Errorf("unparseable URL: %v", err)
	}
}
