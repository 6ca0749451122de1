package cli

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/heed-go/heed/cmd/heed/internal/storeurl"
	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/ui"
)

var uiDoc = helpDoc{
	file:   "ui",
	groups: []flagGroup{{"Flags", []string{"db", "addr", "read-only", "token", "time-budget"}}},
}

// envUIToken names the variable that holds the dashboard's token.
const envUIToken = "HEED_UI_TOKEN"

// uiShutdown bounds the wait for open requests at shutdown.
const uiShutdown = 5 * time.Second

// uiMain is "heed ui".
func uiMain(ctx context.Context, s streams, args []string) int {
	fs := newFlagSet("ui")
	dbFlag := addDBFlag(fs)
	addr := fs.String("addr", "127.0.0.1:8080", "listen on `HOST:PORT` (a non-loopback host needs a token)")
	readOnly := fs.Bool("read-only", false, "serve the pages without any action (no token needed)")
	tokenFlag := fs.String("token", "", "the `TOKEN` actions need, at least 16 bytes (default $"+envUIToken+", better: a flag shows in ps; on loopback, generated and printed)")
	budget := durationFlag(fs, "time-budget", 0, "the workers' time budget (`DUR`), drawn on timelines of jobs without their own")
	if code, done := parseNoArgs(fs, args, s, uiDoc); done {
		return code
	}
	host, _, err := net.SplitHostPort(*addr)
	if err != nil {
		return usageError(s, "ui", fmt.Errorf("--addr %q is not HOST:PORT", *addr))
	}
	token := *tokenFlag
	if token == "" {
		token = os.Getenv(envUIToken)
	}
	if *readOnly {
		token = ""
	} else {
		switch {
		case token == "" && !loopback(host):
			return usageError(s, "ui", fmt.Errorf("--addr %s is not a loopback address: set --token or $%s (at least %d bytes), or use --read-only", *addr, envUIToken, ui.MinToken))
		case token == "":
			token = newToken()
			fmt.Fprintf(s.stderr, "heed ui: sign-in token (generated for this run; set --token or $%s to choose one): %s\n", envUIToken, token)
		case len(token) < ui.MinToken:
			return usageError(s, "ui", fmt.Errorf("the token has %d bytes; it needs at least %d", len(token), ui.MinToken))
		}
	}
	mode := storeurl.Write
	if *readOnly {
		mode = storeurl.Read
	}
	d, _, code := openReader(ctx, s, "ui", *dbFlag, mode)
	if d == nil {
		return code
	}
	defer d.Close()
	h, err := ui.New(queue.NewClient(d.Jobs(), queue.ClientConfig{Operator: "heed ui"}),
		ui.Config{Token: token, ReadOnly: *readOnly, TimeBudget: *budget, Hosts: []string{cmp.Or(host, "0.0.0.0")}})
	if err != nil {
		fmt.Fprintf(s.stderr, "heed ui: %v\n", err)
		return exitFailure
	}
	defer h.Close()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintf(s.stderr, "heed ui: %v\n", err)
		return exitFailure
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute,
		WriteTimeout: 2 * time.Minute, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10}
	mode2 := ""
	if *readOnly {
		mode2 = " (read-only)"
	}
	fmt.Fprintf(s.stdout, "heed ui: serving %s on http://%s/%s\n", d.Name(), ln.Addr(), mode2)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		fmt.Fprintf(s.stderr, "heed ui: %v\n", err)
		return exitFailure
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), uiShutdown)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintf(s.stderr, "heed ui: %v\n", err)
	}
	return exitOK
}

// loopback reports whether host names only this machine.
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// newToken returns a random token of 32 URL-safe characters.
func newToken() string {
	b := make([]byte, 24)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
