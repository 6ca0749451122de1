package retryhttp_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"testing"

	"github.com/heed-go/heed/budget"
	"github.com/heed-go/heed/retry"
	"github.com/heed-go/heed/retryhttp"
)

const canary = "CANARYx7Qp2Lm9Zr4Tv8Wb3N"

// canaryURL has the canary in every place of a URL that a secret takes:
// the user information, every query name of the documented list, a
// fragment, a webhook-style path segment; and a character (") that Go
// quotes in its error messages.
func canaryURL(host string) string {
	q := []string{}
	for _, n := range []string{"token", "access_token", "id_token", "refresh_token", "api_key", "apikey", "key",
		"secret", "client_secret", "password", "pass", "pwd", "jwt", "bearer", "auth", "authorization",
		"signature", "sig", "session", "code", "X-Amz-Signature"} {
		q = append(q, n+"="+canary)
	}
	return "http://u:" + canary + "@" + host + "/hooks/T000/B000/" + canary + "?" + strings.Join(q, "&") +
		`&q="x"#access_token=` + canary
}

// refusing is a base transport whose every attempt fails as a refused
// dial, with an error that quotes the URL, as a proxy's error might.
type refusing struct{}

func (refusing) RoundTrip(r *http.Request) (*http.Response, error) {
	return nil, &net.OpError{Op: "dial", Net: "tcp", Err: &wrapped{msg: "proxy refused " + r.URL.String(), err: syscall.ECONNREFUSED}}
}

type wrapped struct {
	msg string
	err error
}

func (w *wrapped) Error() string { return w.msg }
func (w *wrapped) Unwrap() error { return w.err }

func TestErrorsAreRedacted(t *testing.T) {
	var logs bytes.Buffer
	tr := &retryhttp.Transport{Base: refusing{}, Policy: fast(2), Budget: budget.Config{Ratio: -1},
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	req, err := http.NewRequestWithContext(context.Background(), "GET", canaryURL("svc.test"), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+canary)
	req.Header.Set("Cookie", "sid="+canary)
	req.Header.Set("Idempotency-Key", canary)

	_, rtErr := tr.RoundTrip(req)
	var ue *url.Error
	if errors.As(rtErr, &ue) {
		t.Fatalf("RoundTrip error %T %v has a URL prefix, which http.Client adds again", rtErr, rtErr)
	}
	if !errors.Is(rtErr, retry.ErrExhausted) || !errors.Is(rtErr, syscall.ECONNREFUSED) {
		t.Errorf("error %v does not unwrap to its causes", rtErr)
	}
	_, doErr := (&http.Client{Transport: tr}).Do(req)
	if n := strings.Count(doErr.Error(), "Get \""); n != 1 {
		t.Errorf("http.Client's error says Get %d times: %s", n, doErr)
	}
	safe := retryhttp.RedactError(doErr)
	if !errors.Is(safe, syscall.ECONNREFUSED) || !errors.As(safe, &ue) {
		t.Errorf("RedactError(%v) does not unwrap to its cause, or is not a *url.Error", safe)
	}
	if strings.Count(safe.Error(), "svc.test") != 2 || strings.Count(safe.Error(), "Get \"") != 1 { // the URL once, and the proxy's quote
		t.Errorf("RedactError: %s", safe)
	}
	for name, text := range map[string]string{
		"RoundTrip error":   rtErr.Error(),
		"*url.Error URL":    ue.URL,
		"RedactError(Do)":   safe.Error(),
		"log":               logs.String(),
		"RedactError(text)": retryhttp.RedactError(errors.New("calling " + canaryURL("h"))).Error(),
	} {
		if strings.Contains(text, canary) {
			t.Errorf("%s has the canary: %s", name, text)
		}
	}
	if !strings.Contains(ue.URL, "/hooks/REDACTED/B000/REDACTED?") {
		t.Errorf("URL %s", ue.URL)
	}
	if retryhttp.RedactError(nil) != nil {
		t.Error("RedactError(nil) is not nil")
	}
	plain := errors.New("connection refused")
	if retryhttp.RedactError(plain) != plain {
		t.Error("RedactError changed an error with nothing to redact")
	}
}

func TestContextErrorUnchanged(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://h/?token="+canary, nil)
	_, err := (&retryhttp.Transport{Base: refusing{}}).RoundTrip(req)
	if err != context.Canceled {
		t.Errorf("error %v, want context.Canceled itself", err)
	}
}

// headerBase records the headers of the requests it gets, and whether it
// got the caller's request itself.
type headerBase struct {
	got  []http.Header
	reqs []*http.Request
}

func (h *headerBase) RoundTrip(r *http.Request) (*http.Response, error) {
	h.got = append(h.got, r.Header)
	h.reqs = append(h.reqs, r)
	code := http.StatusOK
	if len(h.got) == 1 {
		code = http.StatusServiceUnavailable
	}
	return &http.Response{StatusCode: code, Body: http.NoBody, Request: r}, nil
}

func TestPropagate(t *testing.T) {
	for _, tt := range []struct {
		name      string
		propagate func(*http.Request) bool
		url       string
		want      bool
	}{
		{"default", nil, "http://api.example.com/", true},
		{"off", func(*http.Request) bool { return false }, "http://api.example.com/", false},
		{"PropagateTo other", retryhttp.PropagateTo("orders.internal", ".svc.local"), "http://api.example.com/", false},
		{"PropagateTo name", retryhttp.PropagateTo("orders.internal"), "http://Orders.Internal:8080/", true},
		{"PropagateTo host:port", retryhttp.PropagateTo("orders.internal:8080"), "http://orders.internal:8080/", true},
		{"PropagateTo suffix", retryhttp.PropagateTo(".svc.local"), "http://a.b.svc.local/", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			base := &headerBase{}
			tr := &retryhttp.Transport{Base: base, Policy: fast(3), Budget: budget.Config{Ratio: -1}, Propagate: tt.propagate}
			ctx, cancel := context.WithTimeout(context.Background(), 1<<40)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, "GET", tt.url, nil)
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if len(base.got) != 2 {
				t.Fatalf("%d attempts, want 2 (503, then 200)", len(base.got))
			}
			for i, h := range base.got {
				_, ra := h["Retry-Attempt"]
				_, tr := h["Timeout-Remaining"]
				if ra != tt.want || tr != tt.want {
					t.Errorf("attempt %d: Retry-Attempt %v, Timeout-Remaining %v, want %v", i+1, ra, tr, tt.want)
				}
			}
			if len(req.Header) != 0 {
				t.Errorf("the caller's header was written: %v", req.Header)
			}
		})
	}
}

// With nothing to add, the base gets the caller's request itself.
func TestPropagateOffPassesRequest(t *testing.T) {
	base := &headerBase{}
	tr := &retryhttp.Transport{Base: base, Policy: fast(3), Budget: budget.Config{Ratio: -1}, Propagate: func(*http.Request) bool { return false }}
	req, _ := http.NewRequestWithContext(context.Background(), "GET", "http://api.example.com/", nil)
	req.Header.Set("Accept", "text/plain")
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if base.reqs[0] != req {
		t.Error("first attempt: the base got a copy, want the request itself")
	}
	if len(req.Header) != 1 {
		t.Errorf("the caller's header was written: %v", req.Header)
	}
}
