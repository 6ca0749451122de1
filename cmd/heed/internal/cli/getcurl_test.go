package cli

import (
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

// heed get answers a status of 400 or more as curl -f does, on stderr, and
// -v does not call it "ok"; -s silences the message, -S brings it back, -f
// drops the body.
func TestGetCurlErrorStatus(t *testing.T) {
	srv, n := getServer(t, func(w http.ResponseWriter, r *http.Request, _ int64) {
		http.Error(w, "no such page", http.StatusNotFound)
	})
	const msg = "heed get: the requested URL returned error: 404 Not Found\n"
	for _, tt := range []struct {
		flags          []string
		stdout, stderr string
	}{
		{nil, "no such page\n", msg},
		{[]string{"-f"}, "", msg},
		{[]string{"-fi"}, "", msg},
		{[]string{"-s"}, "no such page\n", ""},
		{[]string{"-fs"}, "", ""},
		{[]string{"-fsS"}, "", msg},
		{[]string{"--silent", "--show-error", "--fail"}, "", msg},
		{[]string{"-v"}, "no such page\n", "heed: attempt 1: 404 Not Found, not retried (a status that is not retryable)\n" + msg},
	} {
		code, stdout, stderr := heed(t, "", append(append([]string{"get"}, tt.flags...), srv.URL)...)
		if code != exitHTTPError || stdout != tt.stdout || stderr != tt.stderr {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 22, %q, %q", tt.flags, code, stdout, stderr, tt.stdout, tt.stderr)
		}
	}
	if n.Load() != 8 {
		t.Errorf("%d requests, want one per call: a 404 is not retried", n.Load())
	}
}

// Redirects are followed only with -L, as with curl; -fsSL is taken apart
// as curl takes it.
func TestGetCurlRedirects(t *testing.T) {
	srv, _ := getServer(t, func(w http.ResponseWriter, r *http.Request, _ int64) {
		if r.URL.Path == "/old" {
			http.Redirect(w, r, "/new", http.StatusFound)
			return
		}
		io.WriteString(w, "new place")
	})
	code, stdout, stderr := heed(t, "", "-fsS", srv.URL+"/old")
	if code != exitUsage {
		t.Errorf("heed -fsS: exit %d (it is not a command)", code)
	}
	code, stdout, stderr = heed(t, "", "get", "-fsS", srv.URL+"/old")
	if code != 0 || !strings.Contains(stdout, `href="/new"`) || stderr != "" {
		t.Errorf("without -L: exit %d, stdout %q, stderr %q; want the redirect itself", code, stdout, stderr)
	}
	code, stdout, stderr = heed(t, "", "get", "-fsSL", "-w", `\n%{http_code} %{num_redirects} %{url_effective}\n`, srv.URL+"/old")
	if want := "new place\n200 1 " + srv.URL + "/new\n"; code != 0 || stdout != want || stderr != "" {
		t.Errorf("-fsSL: exit %d, stdout %q, stderr %q; want %q", code, stdout, stderr, want)
	}
	code, _, stderr = heed(t, "", "get", "-fsqL", srv.URL)
	if code != exitUsage || !strings.Contains(stderr, "flag provided but not defined: -q (in -fsqL)") {
		t.Errorf("-fsqL: exit %d, stderr %q", code, stderr)
	}
}

// curl's --retry N is --attempts N+1; --retry-max-time is --max-time;
// -w '%{json}' sums the call up; the server's hint is rounded.
func TestGetCurlRetryAndWriteOut(t *testing.T) {
	srv, n := getServer(t, func(w http.ResponseWriter, r *http.Request, _ int64) {
		http.Error(w, "busy", http.StatusServiceUnavailable)
	})
	code, stdout, stderr := heed(t, "", "get", "-s", "--retry", "2", "--base", "1ms", "-w", "%{json}", srv.URL)
	if code != exitHTTPError || n.Load() != 3 {
		t.Fatalf("--retry 2: exit %d after %d requests, want 22 after 3\n%s", code, n.Load(), stderr)
	}
	j := strings.TrimPrefix(stdout, "busy\n")
	var got map[string]any
	if err := json.Unmarshal([]byte(j), &got); err != nil {
		t.Fatalf("%%{json}: %v: %q", err, j)
	}
	for k, want := range map[string]any{"http_code": 503.0, "num_attempts": 3.0, "num_retries": 2.0, "exitcode": 22.0,
		"method": "GET", "url_effective": srv.URL, "errormsg": "the requested URL returned error: 503 Service Unavailable"} {
		if got[k] != want {
			t.Errorf("%%{json} %s = %v, want %v", k, got[k], want)
		}
	}
	if tt, ok := got["time_total"].(float64); !ok || tt <= 0 {
		t.Errorf("time_total %v", got["time_total"])
	}
	for _, args := range [][]string{
		{"--retry", "2", "--attempts", "3"},
		{"--retry", "-1"},
		{"--retry-max-time", "0"},
		{"-w", "%{nope}"},
	} {
		if code, _, stderr := heed(t, "", append(append([]string{"get"}, args...), srv.URL)...); code != exitUsage {
			t.Errorf("%q: exit %d, stderr %q", args, code, stderr)
		}
	}

	// A server that never answers: --retry-max-time ends the call.
	hang, _ := getServer(t, func(w http.ResponseWriter, r *http.Request, _ int64) { <-r.Context().Done() })
	code, stdout, _ = heed(t, "", "get", "--retry-max-time", "0.05", "-w", "%{http_code}", hang.URL)
	if code != exitTimeout || stdout != "000" {
		t.Errorf("--retry-max-time: exit %d, stdout %q; want 124 and 000", code, stdout)
	}

	// Retry-After as a date: the wait is not a round number of seconds,
	// and heed prints it rounded.
	later, _ := getServer(t, func(w http.ResponseWriter, r *http.Request, _ int64) {
		w.Header().Set("Retry-After", time.Now().Add(90*time.Second).UTC().Format(http.TimeFormat))
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	_, _, stderr = heed(t, "", "get", "--max-time", "2", later.URL)
	if !regexp.MustCompile(`the server asked to retry in 1m(\d|\d\d)(\.\d)?s\n`).MatchString(stderr) {
		t.Errorf("hint not rounded to 3 digits:\n%s", stderr)
	}
}
