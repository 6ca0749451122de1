package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/heed-go/heed/budget"
	"github.com/heed-go/heed/internal/curl"
	"github.com/heed-go/heed/internal/duration"
	"github.com/heed-go/heed/internal/redact"
	"github.com/heed-go/heed/retry"
	"github.com/heed-go/heed/retryhttp"
)

// Exit codes of heed get, beside the shared ones.
const (
	exitTransport = 7  // no response: DNS, refused, reset, TLS (as curl's "could not connect")
	exitHTTPError = 22 // the final response has status >= 400 (as curl --fail)
)

var getDoc = helpDoc{
	file: "get",
	groups: []flagGroup{
		{"Request flags", []string{"X", "H", "d", "A", "u", "I", "L", "idempotency-key", "connect-timeout", "m", "max-time", "retry-max-time", "retry", "hedge", "propagate"}},
		{"Output flags", []string{"o", "i", "f", "s", "S", "v", "w"}},
		{"curl's long names", []string{"fail", "head", "include", "location", "show-error", "silent", "user", "user-agent", "verbose", "write-out"}},
		policyGroup,
	},
}

// curlLongNames are curl's long names of heed get's one-letter flags, as
// scripts written for curl spell them.
var curlLongNames = map[string]string{
	"fail": "f", "head": "I", "include": "i", "location": "L", "show-error": "S", "silent": "s", "user": "u",
	"user-agent": "A", "verbose": "v", "write-out": "w",
}

// getMain is "heed get".
func getMain(ctx context.Context, s streams, args []string) int {
	fs := newFlagSet("get")
	pf := addPolicyFlags(fs, false)
	method := fs.String("X", "", "request `METHOD` (default GET, or POST with -d)")
	var headers curl.Headers
	fs.Var(&headers, "H", "request `HEADER` 'Name: value'; repeatable")
	data := fs.String("d", "", "request body `DATA`, or @FILE to read it from FILE (- for stdin)")
	key := fs.String("idempotency-key", "", "send Idempotency-Key: `KEY`, which makes any method safe to retry; auto generates one")
	connectTimeout := durationFlag(fs, "connect-timeout", 0, "time limit of each connection's dial and TLS handshake (default 10s)")
	maxTime := durationFlag(fs, "max-time", 0, "time limit of everything, the body's download included (default: none)")
	fs.Var(fs.Lookup("max-time").Value, "m", "the same as --max-time `DUR` (curl's -m: seconds, or a duration)")
	retryMaxTime := durationFlag(fs, "retry-max-time", 0, "time limit of the retries, and the longest Retry-After waited for (default: 30s, within --max-time)")
	agent := fs.String("A", "", "send User-Agent: `AGENT` (default heed-get)")
	user := fs.String("u", "", "send `USER:PASSWORD` as Basic authentication")
	head := fs.Bool("I", false, "send HEAD and write the status line and headers (curl's --head)")
	hedge := durationFlag(fs, "hedge", 0, "send a hedge, a second copy of a request that is safe to repeat, when an attempt has not answered after `DUR`; the first answer wins (default: none)")
	retries := fs.Int("retry", 0, "curl's retry count: `N` retries, the same as --attempts N+1")
	output := fs.String("o", "", "write the body to `FILE` instead of stdout")
	include := fs.Bool("i", false, "write the status line and response headers before the body")
	verbose := fs.Bool("v", false, "print one line per decision on stderr")
	propagate := fs.Bool("propagate", true, "send Retry-Attempt and Timeout-Remaining, so that a heed server retries no further and adopts the deadline; --propagate=false for third-party APIs, to which they mean nothing")
	fail := fs.Bool("f", false, "do not write the body of a response with status 400 or more (curl's --fail)")
	silent := fs.Bool("s", false, "print no error messages on stderr (decision lines of -v still are)")
	showError := fs.Bool("S", false, "with -s, print error messages all the same")
	location := fs.Bool("L", false, "follow redirects, at most 10 (default: the redirect is the response)")
	var wo curl.WriteOut
	fs.Var(&wo, "w", "write `FORMAT` to stdout after the body, with %{variables} filled in (see below)")
	for long, short := range curlLongNames {
		usage := "the same as -" + short
		switch short {
		case "w":
			usage += " `FORMAT`"
		case "A":
			usage += " `AGENT`"
		case "u":
			usage += " `USER:PASSWORD`"
		}
		fs.Var(fs.Lookup(short).Value, long, usage)
	}

	args, err := curl.SplitShortFlags(fs, args)
	if err != nil {
		return usageError(s, "get", err)
	}
	// Flags may follow the URL, as with curl.
	positional, code, stop := parseInterleaved(fs, args, s, getDoc)
	if stop {
		return code
	}
	if isSet(fs, "retry") {
		switch {
		case isSet(fs, "attempts"):
			return usageError(s, "get", errors.New("give --retry or --attempts, not both (--retry N is --attempts N+1)"))
		case *retries < 0:
			return usageError(s, "get", flagError("retry", "%d, must not be negative", *retries))
		}
		pf.attempts = *retries + 1
	}
	p, err := pf.policy()
	if err != nil {
		return usageError(s, "get", err)
	}
	if isSet(fs, "retry-max-time") {
		// curl's --retry-max-time: retries stop once it has passed, and
		// a Retry-After up to it is waited for.
		if *retryMaxTime <= 0 {
			return usageError(s, "get", flagError("retry-max-time", "%v, must be positive", *retryMaxTime))
		}
		p.MaxPushback = *retryMaxTime
		if p.TimeBudget == 0 || p.TimeBudget > *retryMaxTime {
			p.TimeBudget = *retryMaxTime
		}
	}
	if *head {
		if isSet(fs, "X") || isSet(fs, "d") {
			return usageError(s, "get", errors.New("-I sends HEAD: give it without -X or -d"))
		}
		*method, *include = http.MethodHead, true
	}
	switch {
	case len(positional) == 0:
		return usageError(s, "get", errors.New("no URL given: heed get [FLAGS] URL"))
	case len(positional) > 1:
		safe := make([]string, len(positional))
		for i, p := range positional {
			safe[i] = redact.URLString(p)
		}
		return usageError(s, "get", fmt.Errorf("more than one URL: %s", strings.Join(safe, " ")))
	case headers.Check() != nil:
		return usageError(s, "get", headers.Check())
	case *connectTimeout < 0:
		return usageError(s, "get", flagError("connect-timeout", "%v, must not be negative", *connectTimeout))
	case *maxTime < 0:
		return usageError(s, "get", flagError("max-time", "%v, must not be negative", *maxTime))
	case *hedge < 0:
		return usageError(s, "get", flagError("hedge", "%v, must not be negative", *hedge))
	}
	if *hedge > 0 {
		p.Hedge = &retry.Hedge{Delay: *hedge}
	}
	u, err := url.Parse(positional[0])
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return usageError(s, "get", fmt.Errorf("%q is not an http or https URL", redact.URLString(positional[0])))
	}

	// The request.
	cr := curl.Request{Method: *method, URL: u.String(), Headers: headers, Key: *key, Agent: *agent, User: *user}
	if isSet(fs, "d") {
		b, err := curl.ReadData(*data, s.stdin)
		if err != nil {
			return usageError(s, "get", flagError("d", "%v", err))
		}
		cr.Body = &b
	}
	if *maxTime > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *maxTime)
		defer cancel()
	}
	req, err := cr.New(ctx)
	if err != nil {
		return usageError(s, "get", retryhttp.RedactError(err))
	}
	tr := &retryhttp.Transport{Budget: budget.Config{Ratio: -1}, ConnectTimeout: *connectTimeout}
	if !*propagate {
		tr.Propagate = func(*http.Request) bool { return false }
	}
	tr.GenerateKey = *key == "auto"
	defer tr.CloseIdleConnections()

	// Error messages go to errs: stderr, unless -s without -S.
	es := s
	if *silent && !*showError {
		es.stderr = io.Discard
	}
	st := &curl.Stats{Start: time.Now(), Method: req.Method, URL: u.String()}
	trace := &curl.Trace{Stats: st, Line: func(d retry.Decision) string { return redact.ErrorText(workerDecision(d), u) }}
	if *verbose {
		trace.W = s.stderr
	}
	p.Observe = trace.Observe
	tr.Policy = p
	client := curl.Client(trace.RoundTripper(tr), *location, st)

	code = func() int {
		resp, err := client.Do(req)
		if err != nil {
			st.Err = err
			return getErrorCode(ctx, es, u, err, cmp.Or(p.MaxPushback, retry.DefaultMaxPushback), *maxTime > 0 || isSet(fs, "deadline"))
		}
		defer resp.Body.Close()
		st.Resp = resp
		st.URL = resp.Request.URL.String()

		out := s.stdout
		if *output != "" {
			f, err := os.Create(*output)
			if err != nil {
				st.Err = err
				fmt.Fprintf(es.stderr, "heed get: %v\n", err)
				return exitFailure
			}
			defer f.Close()
			out = f
		}
		n, err := curl.WriteBody(out, resp, *include, *fail)
		if errors.As(err, new(*curl.WriteError)) {
			st.Err = err
			fmt.Fprintf(es.stderr, "heed get: writing output: %v\n", err)
			return exitFailure
		}
		st.Size = n
		if err != nil {
			st.Err = err
			// A time limit cut the body: --max-time, or retryhttp's
			// attempt, which ends a little before it (or at --timeout,
			// or --deadline).
			if ctx.Err() != nil {
				return ctxExit(ctx, es)
			}
			if errors.Is(err, context.DeadlineExceeded) {
				fmt.Fprintf(es.stderr, "heed get: reading the body: a time limit ended it (--max-time, --deadline or --timeout)\n")
				return exitTimeout
			}
			fmt.Fprintf(es.stderr, "heed get: reading the body: %v\n", err)
			return exitTransport
		}
		if *output != "" {
			if f, ok := out.(*os.File); ok {
				if err := f.Close(); err != nil {
					st.Err = err
					fmt.Fprintf(es.stderr, "heed get: %v\n", err)
					return exitFailure
				}
			}
		}
		if code, ok := reasonExit(trace.Last.Reason); ok && trace.Last.Action == retry.GiveUp {
			return code
		}
		if resp.StatusCode >= 400 {
			st.Err = fmt.Errorf("the requested URL returned error: %s", resp.Status)
			fmt.Fprintf(es.stderr, "heed get: %v\n", st.Err)
			return exitHTTPError
		}
		return exitOK
	}()
	if wo.IsSet() {
		st.Total = time.Since(st.Start)
		st.Code = code
		if err := wo.Write(s.stdout, st); err != nil {
			fmt.Fprintf(es.stderr, "heed get: writing --write-out: %v\n", err)
			if code == exitOK {
				code = exitFailure
			}
		}
	}
	return code
}

// getErrorCode reports an error with no response and returns the exit
// code.
func getErrorCode(ctx context.Context, s streams, u *url.URL, err error, maxPushback time.Duration, hasDeadline bool) int {
	if ctx.Err() != nil {
		return ctxExit(ctx, s)
	}
	msg := err
	for {
		ue, ok := msg.(*url.Error)
		if !ok {
			break
		}
		msg = ue.Err // the URL is known to the user; keep the message short
	}
	fmt.Fprintf(s.stderr, "heed get: %s\n", redact.ErrorText(msg.Error(), u))
	if ex, ok := errors.AsType[*retry.ExhaustedError](err); ok && ex.Reason == retry.ReasonPushbackTooLong && !hasDeadline {
		// No deadline was set: the server answered, with a wait longer
		// than heed get may take. (With one, the wait does not fit
		// before it: 124.)
		wait, _ := retryhttp.RetryAfter(err)
		fmt.Fprintf(s.stderr, "heed get: the server asked to retry in %v, longer than --retry-max-time (%v): not waited for\n",
			duration.Round(wait), duration.Round(maxPushback))
		return exitHTTPError
	}
	if wait, ok := retryhttp.RetryAfter(err); ok {
		fmt.Fprintf(s.stderr, "heed get: the server asked to retry in %v\n", duration.Round(wait))
	}
	if code, ok := giveUpExit(err); ok {
		return code
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
