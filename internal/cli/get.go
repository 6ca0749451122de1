package cli

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"

	"github.com/heed-go/heed/retry"
	"github.com/heed-go/heed/retryhttp"
)

// Exit codes of heed get, beside the shared ones.
const (
	exitTransport = 7  // no response: DNS, refused, reset, TLS (as curl's "could not connect")
	exitHTTPError = 22 // the final response has status >= 400 (as curl --fail)
)

var getDoc = helpDoc{
	head: `Usage: heed get [FLAGS] URL

Sends one HTTP request, like a small curl, retrying only what is safe to
repeat: GET, HEAD, OPTIONS, TRACE, PUT and DELETE; other methods only when
the request never left, or with --idempotency-key. Retried: responses 408,
429, 500, 502, 503 and 504 (honouring Retry-After), refused connections,
resets and timeouts. Never retried: certificate errors, unknown hosts, and
a POST whose fate is unknown.

The response body goes to stdout (or -o FILE); with -v, one line per
decision goes to stderr:

  heed: attempt 1: 503 Service Unavailable, retry in 180ms
  heed: attempt 2: ok

Flags may come before or after URL; -X, -H, -d, -o, -i and -v may be
written with one dash or two.
`,
	groups: []flagGroup{
		{"Request flags", []string{"X", "H", "d", "idempotency-key", "connect-timeout", "max-time"}},
		{"Output flags", []string{"o", "i", "v"}},
		policyGroup,
	},
	foot: `Exit codes:
  0    a response with status below 400
  2    usage error: bad flag, no URL
  7    transport failure: no response (unknown host, refused, reset, TLS
       certificate, or a POST that may have been processed)
  22   the final response has status 400 or more (its body is still
       written); after retries, the last one
  75   the retry budget or the circuit breaker refused a retry
  124  a deadline ended the call: --max-time, --deadline, an attempt killed
       by --timeout, or a Retry-After that does not fit before them
  130  interrupted (SIGINT or SIGTERM)
  1    any other failure (writing the output, say)

Examples:
  heed get https://example.com/health
  heed get -v --attempts 5 --max-time 10s https://api.example.com/items
  heed get -X POST -d @order.json -H 'Content-Type: application/json' \
    --idempotency-key auto https://api.example.com/orders
`,
}

// headerList is a flag.Value for repeated -H 'Name: value'.
type headerList []string

func (h *headerList) String() string { return strings.Join(*h, ", ") }

func (h *headerList) Set(s string) error {
	name, _, ok := strings.Cut(s, ":")
	if !ok || strings.TrimSpace(name) == "" || strings.ContainsAny(strings.TrimSpace(name), " \t") {
		return fmt.Errorf("%q is not 'Name: value'", s)
	}
	*h = append(*h, s)
	return nil
}

// getMain is "heed get".
func getMain(ctx context.Context, s streams, args []string) int {
	fs := newFlagSet("get")
	pf := addPolicyFlags(fs)
	method := fs.String("X", "", "request `METHOD` (default GET, or POST with -d)")
	var headers headerList
	fs.Var(&headers, "H", "request `HEADER` 'Name: value'; repeatable")
	data := fs.String("d", "", "request body `DATA`, or @FILE to read it from FILE (- for stdin)")
	key := fs.String("idempotency-key", "", "send Idempotency-Key: `KEY`, which makes any method safe to retry; auto generates one")
	connectTimeout := durationFlag(fs, "connect-timeout", 0, "time limit of each connection's dial and TLS handshake (default 10s)")
	maxTime := durationFlag(fs, "max-time", 0, "time limit of everything, the body's download included (default: none)")
	output := fs.String("o", "", "write the body to `FILE` instead of stdout")
	include := fs.Bool("i", false, "write the status line and response headers before the body")
	verbose := fs.Bool("v", false, "print one line per decision on stderr")

	// Flags may follow the URL, as with curl.
	var positional []string
	rest := args
	for {
		if code, done := parseFlags(fs, rest, s, getDoc); done {
			return code
		}
		if fs.NArg() == 0 {
			break
		}
		positional = append(positional, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	p, err := pf.policy()
	if err != nil {
		return usageError(s, "get", err)
	}
	switch {
	case len(positional) == 0:
		return usageError(s, "get", errors.New("no URL given: heed get [FLAGS] URL"))
	case len(positional) > 1:
		return usageError(s, "get", fmt.Errorf("more than one URL: %s", strings.Join(positional, " ")))
	case *connectTimeout < 0:
		return usageError(s, "get", flagError("connect-timeout", "%v, must not be negative", *connectTimeout))
	case *maxTime < 0:
		return usageError(s, "get", flagError("max-time", "%v, must not be negative", *maxTime))
	}
	u, err := url.Parse(positional[0])
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return usageError(s, "get", fmt.Errorf("%q is not an http or https URL", positional[0]))
	}

	// The request.
	var body io.Reader
	hasBody := isSet(fs, "d")
	if hasBody {
		b, err := readData(*data, s.stdin)
		if err != nil {
			return usageError(s, "get", flagError("d", "%v", err))
		}
		body = strings.NewReader(b) // rewindable: http.NewRequest sets GetBody
	}
	m := strings.ToUpper(*method)
	if m == "" {
		m = http.MethodGet
		if hasBody {
			m = http.MethodPost
		}
	}
	if *maxTime > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *maxTime)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, m, u.String(), body)
	if err != nil {
		return usageError(s, "get", err)
	}
	req.Header.Set("User-Agent", "heed-get")
	if hasBody {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for _, h := range headers {
		name, value, _ := strings.Cut(h, ":")
		req.Header.Set(strings.TrimSpace(name), strings.TrimSpace(value))
	}
	tr := &retryhttp.Transport{NoBudget: true, ConnectTimeout: *connectTimeout}
	switch *key {
	case "":
	case "auto":
		tr.GenerateKey = true
	default:
		req.Header.Set(retryhttp.IdempotencyKeyHeader, *key)
	}
	defer tr.CloseIdleConnections()

	var last retry.Decision
	p.Observe = func(_ context.Context, e retry.Event) {
		last = e.Decision
		if *verbose {
			fmt.Fprintf(s.stderr, "heed: %s\n", e.Decision)
		}
	}
	tr.Policy = p

	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return getErrorCode(ctx, s, err)
	}
	defer resp.Body.Close()

	out := s.stdout
	if *output != "" {
		f, err := os.Create(*output)
		if err != nil {
			fmt.Fprintf(s.stderr, "heed get: %v\n", err)
			return exitFailure
		}
		defer f.Close()
		out = f
	}
	w := bufio.NewWriter(markWriter{out})
	if *include {
		writeHead(w, resp)
	}
	_, copyErr := io.Copy(w, resp.Body)
	if err := w.Flush(); err != nil {
		fmt.Fprintf(s.stderr, "heed get: writing output: %v\n", err)
		return exitFailure
	}
	if copyErr != nil {
		if ctx.Err() != nil {
			return ctxExit(ctx, s)
		}
		fmt.Fprintf(s.stderr, "heed get: reading the body: %v\n", copyErr)
		var we *writeError
		if errors.As(copyErr, &we) {
			return exitFailure
		}
		return exitTransport
	}
	if *output != "" {
		if f, ok := out.(*os.File); ok {
			if err := f.Close(); err != nil {
				fmt.Fprintf(s.stderr, "heed get: %v\n", err)
				return exitFailure
			}
		}
	}
	if last.Action == retry.GiveUp {
		switch last.Reason {
		case retry.ReasonDeadline, retry.ReasonTimeBudget:
			return exitTimeout
		case retry.ReasonBudget, retry.ReasonBreakerOpen:
			return exitRefused
		}
	}
	if resp.StatusCode >= 400 {
		if *verbose {
			fmt.Fprintf(s.stderr, "heed get: %s\n", resp.Status)
		}
		return exitHTTPError
	}
	return exitOK
}

// writeError is an error writing the output, told apart from an error
// reading the body.
type writeError struct{ error }

func (e *writeError) Unwrap() error { return e.error }

// markWriter marks its writer's errors as writeErrors.
type markWriter struct{ w io.Writer }

func (m markWriter) Write(p []byte) (int, error) {
	n, err := m.w.Write(p)
	if err != nil {
		err = &writeError{err}
	}
	return n, err
}

// readData returns -d's value: itself, or the contents of @FILE (@- is
// stdin).
func readData(d string, stdin io.Reader) (string, error) {
	name, ok := strings.CutPrefix(d, "@")
	if !ok {
		return d, nil
	}
	var b []byte
	var err error
	if name == "-" {
		b, err = io.ReadAll(stdin)
	} else {
		b, err = os.ReadFile(name)
	}
	return string(b), err
}

// writeHead writes the status line and the headers, sorted, then a blank
// line.
func writeHead(w io.Writer, resp *http.Response) {
	fmt.Fprintf(w, "%s %s\r\n", resp.Proto, resp.Status)
	names := make([]string, 0, len(resp.Header))
	for name := range resp.Header {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		for _, v := range resp.Header[name] {
			fmt.Fprintf(w, "%s: %s\r\n", name, v)
		}
	}
	io.WriteString(w, "\r\n")
}

// getErrorCode reports an error with no response and returns the exit
// code.
func getErrorCode(ctx context.Context, s streams, err error) int {
	if ctx.Err() != nil {
		return ctxExit(ctx, s)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err // the URL is known to the user; keep the message short
	}
	fmt.Fprintf(s.stderr, "heed get: %v\n", err)
	if wait, ok := retryhttp.RetryAfter(err); ok {
		fmt.Fprintf(s.stderr, "heed get: the server asked to retry in %v\n", wait)
	}
	var ex *retry.ExhaustedError
	if errors.As(err, &ex) {
		switch ex.Reason {
		case retry.ReasonDeadline, retry.ReasonTimeBudget:
			return exitTimeout
		case retry.ReasonBudget, retry.ReasonBreakerOpen:
			return exitRefused
		}
		if n := len(ex.Trace); n > 0 && ex.Trace[n-1].Outcome == retry.OutcomeTimeout {
			return exitTimeout
		}
	}
	if errors.Is(err, retryhttp.ErrBodyTooLarge) {
		return exitFailure
	}
	return exitTransport
}

// ctxExit reports the end of ctx: the --max-time deadline, or an
// interruption.
func ctxExit(ctx context.Context, s streams) int {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		fmt.Fprintln(s.stderr, "heed get: --max-time reached")
		return exitTimeout
	}
	fmt.Fprintln(s.stderr, "heed get: interrupted")
	return exitInterrupted
}

var _ flag.Value = (*headerList)(nil)
