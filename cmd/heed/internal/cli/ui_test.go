package cli

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/sqlitestore"
)

// heed ui refuses to serve actions beyond loopback without a token, and
// rejects bad flags.
func TestUIRefuses(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  string
		want string
	}{
		{[]string{"--addr", "0.0.0.0:0"}, "", "not a loopback address: set --token or $HEED_UI_TOKEN"},
		{[]string{"--addr", ":0"}, "", "not a loopback address"},
		{[]string{"--addr", "127.0.0.1:0", "--token", "short"}, "", "at least 16"},
		{[]string{"--addr", "0.0.0.0:0"}, "tiny", "at least 16"},
		{[]string{"--addr", "nope"}, "", "not HOST:PORT"},
		{[]string{"extra"}, "", "unexpected argument"},
	} {
		t.Setenv(envUIToken, tc.env)
		var stdout, stderr strings.Builder
		code := Main(context.Background(), append([]string{"ui", "--db", filepath.Join(t.TempDir(), "none.db")}, tc.args...), strings.NewReader(""), &stdout, &stderr)
		if code != exitUsage || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("heed ui %v: exit %d, stderr %q; want 2 and %q", tc.args, code, stderr.String(), tc.want)
		}
	}
}

// heed ui serves the dashboard of a database until interrupted; on
// loopback without a token it generates one and prints it on stderr.
func TestUIServes(t *testing.T) {
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "jobs.db")
	st, err := sqlitestore.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := queue.NewClient(st, queue.ClientConfig{}).Enqueue(ctx, "email", map[string]string{"to": "a@example.com"}, queue.EnqueueOptions{Queue: "mail"}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	t.Setenv(envUIToken, "")
	for _, args := range [][]string{{"--read-only"}, {}} {
		uctx, stop := context.WithCancel(ctx)
		var stdout, stderr syncBuffer
		code := make(chan int, 1)
		go func() {
			code <- Main(uctx, append([]string{"ui", "--db", db, "--addr", "127.0.0.1:0"}, args...), strings.NewReader(""), &stdout, &stderr)
		}()
		var url string
		line := regexp.MustCompile(`serving sqlite .*jobs\.db on (http://127\.0\.0\.1:\d+/)`)
		deadline := time.Now().Add(10 * time.Second)
		for url == "" {
			if m := line.FindStringSubmatch(stdout.String()); m != nil {
				url = m[1]
			} else if time.Now().After(deadline) {
				t.Fatalf("heed ui %v: no address on stdout:\n%s\n%s", args, stdout.String(), stderr.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
		client := &http.Client{Transport: &http.Transport{}, Timeout: 5 * time.Second}
		resp, err := client.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		// A page whose name was rebound to 127.0.0.1 is refused.
		req, _ := http.NewRequest("GET", url, nil)
		req.Host = "rebound.evil.example"
		if r, err := client.Do(req); err != nil {
			t.Error(err)
		} else {
			r.Body.Close()
			if r.StatusCode != http.StatusMisdirectedRequest {
				t.Errorf("heed ui %v: GET / with Host %s: %d, want 421", args, req.Host, r.StatusCode)
			}
		}
		client.CloseIdleConnections()
		body := string(b)
		if resp.StatusCode != 200 || !strings.Contains(body, `data-queue="mail"`) {
			t.Errorf("heed ui %v: GET /: %d\n%.300s", args, resp.StatusCode, body)
		}
		readOnly := len(args) > 0
		if got := strings.Contains(stderr.String(), "sign-in token"); got == readOnly {
			t.Errorf("heed ui %v: token printed %v; stderr %q", args, got, stderr.String())
		}
		if readOnly != strings.Contains(body, "read-only") {
			t.Errorf("heed ui %v: page read-only badge: %v", args, strings.Contains(body, "read-only"))
		}
		stop()
		if c := <-code; c != exitOK {
			t.Errorf("heed ui %v: exit %d after interrupt; stderr %q", args, c, stderr.String())
		}
	}
}
