package cli

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/heed-go/heed/budget"
	"github.com/heed-go/heed/cmd/heed/internal/curl"
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
		{"Output flags", []string{"o", "i", "f", "s", "S", "v", "w", "reveal"}},
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
	g := newGetFlags()
	args, err := curl.SplitShortFlags(g.fs, args)
	if err != nil {
		return usageError(s, "get", err)
	}
	// Flags may follow the URL, as with curl.
	positional, code, stop := parseInterleaved(g.fs, args, s, getDoc)
	if stop {
		return code
	}
	p, err := g.policy()
	if err != nil {
		return usageError(s, "get", err)
	}
	u, err := g.target(positional, &p)
	if err != nil {
		return usageError(s, "get", err)
	}

	// The request.
	cr, err := g.request(u, s)
	if err != nil {
		return usageError(s, "get", err)
	}
	if *g.maxTime > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *g.maxTime)
		defer cancel()
	}
	req, err := cr.New(ctx)
	if err != nil {
		return usageError(s, "get", retryhttp.RedactError(err))
	}
	tr := g.transport()
	defer tr.CloseIdleConnections()

	// Error messages go to errs: stderr, unless -s without -S.
	es := s
	if *g.silent && !*g.showError {
		es.stderr = io.Discard
	}
	st := &curl.Stats{Start: time.Now(), Method: req.Method, URL: u.String()}
	trace := &curl.Trace{Stats: st, Line: func(d retry.Decision) string { return redact.ErrorText(workerDecision(d), u) }}
	if *g.verbose {
		trace.W = s.stderr
	}
	p.Observe = trace.Observe
	tr.Policy = p
	client := curl.Client(trace.RoundTripper(tr), *g.location, st)

	code = g.fetch(ctx, s, es, client, req, u, st, trace, cmp.Or(p.MaxPushback, retry.DefaultMaxPushback))
	return g.writeOut(s, es, st, u, code)
}

// getFlags are the flags of heed get.
type getFlags struct {
	fs                                     *flag.FlagSet
	pf                                     *policyFlags
	method, data, key, agent, user, output *string
	headers                                curl.Headers
	connectTimeout, maxTime, retryMaxTime  *time.Duration
	hedge                                  *time.Duration
	retries                                *int
	head, include, verbose, propagate      *bool
	reveal                                 *bool
	fail, silent, showError, location      *bool
	wo                                     curl.WriteOut
}

// newGetFlags defines the flags of heed get, with curl's long names.
func newGetFlags() *getFlags {
	fs := newFlagSet("get")
	g := &getFlags{fs: fs}
	g.pf = addPolicyFlags(fs, false)
	g.method = fs.String("X", "", "request `METHOD` (default GET, or POST with -d)")
	fs.Var(&g.headers, "H", "request `HEADER` 'Name: value'; repeatable")
	g.data = fs.String("d", "", "request body `DATA`, or @FILE to read it from FILE (- for stdin)")
	g.key = fs.String("idempotency-key", "", "send Idempotency-Key: `KEY`, which makes any method safe to retry; auto generates one")
	g.connectTimeout = durationFlag(fs, "connect-timeout", 0, "time limit of each connection's dial and TLS handshake (default 10s)")
	g.maxTime = durationFlag(fs, "max-time", 0, "time limit of everything, the body's download included (default: none)")
	fs.Var(fs.Lookup("max-time").Value, "m", "the same as --max-time `DUR` (curl's -m: seconds, or a duration)")
	g.retryMaxTime = durationFlag(fs, "retry-max-time", 0, "time limit of the retries, and the longest Retry-After waited for (default: 30s, within --max-time)")
	g.agent = fs.String("A", "", "send User-Agent: `AGENT` (default heed-get)")
	g.user = fs.String("u", "", "send `USER:PASSWORD` as Basic authentication")
	g.head = fs.Bool("I", false, "send HEAD and write the status line and headers (curl's --head)")
	g.hedge = durationFlag(fs, "hedge", 0, "send a hedge, a second copy of a request that is safe to repeat, when an attempt has not answered after `DUR`; the first answer wins (default: none)")
	g.retries = fs.Int("retry", 0, "curl's retry count: `N` retries, the same as --attempts N+1")
	g.output = fs.String("o", "", "write the body to `FILE` instead of stdout")
	g.include = fs.Bool("i", false, "write the status line and response headers before the body")
	g.verbose = fs.Bool("v", false, "print one line per decision on stderr")
	g.reveal = fs.Bool("reveal", false, "write secrets as received: the values of secret response headers (Set-Cookie, WWW-Authenticate's, ...) with -i and -I, and -w's %{url_effective} and %{errormsg} unredacted (default: REDACTED, as everywhere else)")
	g.propagate = fs.Bool("propagate", true, "send Retry-Attempt and Timeout-Remaining, so that a heed server retries no further and adopts the deadline; --propagate=false for third-party APIs, to which they mean nothing")
	g.fail = fs.Bool("f", false, "do not write the body of a response with status 400 or more (curl's --fail)")
	g.silent = fs.Bool("s", false, "print no error messages on stderr (decision lines of -v still are)")
	g.showError = fs.Bool("S", false, "with -s, print error messages all the same")
	g.location = fs.Bool("L", false, "follow redirects, at most 10 (default: the redirect is the response)")
	fs.Var(&g.wo, "w", "write `FORMAT` to stdout after the body, with %{variables} filled in (see below)")
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
	return g
}

// policy returns the retry policy of the policy flags, with curl's --retry
// and --retry-max-time applied.
func (g *getFlags) policy() (retry.Policy, error) {
	fs := g.fs
	if isSet(fs, "retry") {
		switch {
		case isSet(fs, "attempts"):
			return retry.Policy{}, errors.New("give --retry or --attempts, not both (--retry N is --attempts N+1)")
		case *g.retries < 0:
			return retry.Policy{}, flagError("retry", "%d, must not be negative", *g.retries)
		}
		g.pf.attempts = *g.retries + 1
	}
	p, err := g.pf.policy()
	if err != nil {
		return retry.Policy{}, err
	}
	if isSet(fs, "retry-max-time") {
		// curl's --retry-max-time: retries stop once it has passed, and
		// a Retry-After up to it is waited for.
		if *g.retryMaxTime <= 0 {
			return retry.Policy{}, flagError("retry-max-time", "%v, must be positive", *g.retryMaxTime)
		}
		p.MaxPushback = *g.retryMaxTime
		if p.TimeBudget == 0 || p.TimeBudget > *g.retryMaxTime {
			p.TimeBudget = *g.retryMaxTime
		}
	}
	return p, nil
}

// target checks the remaining flags and the one URL, applies -I and
// --hedge (to p), and returns the URL.
func (g *getFlags) target(positional []string, p *retry.Policy) (*url.URL, error) {
	fs := g.fs
	if *g.head {
		if isSet(fs, "X") || isSet(fs, "d") {
			return nil, errors.New("-I sends HEAD: give it without -X or -d")
		}
		*g.method, *g.include = http.MethodHead, true
	}
	switch {
	case len(positional) == 0:
		return nil, errors.New("no URL given: heed get [FLAGS] URL")
	case len(positional) > 1:
		safe := make([]string, len(positional))
		for i, p := range positional {
			safe[i] = redact.URLString(p)
		}
		return nil, fmt.Errorf("more than one URL: %s", strings.Join(safe, " "))
	case g.headers.Check() != nil:
		return nil, g.headers.Check()
	case *g.connectTimeout < 0:
		return nil, flagError("connect-timeout", "%v, must not be negative", *g.connectTimeout)
	case *g.maxTime < 0:
		return nil, flagError("max-time", "%v, must not be negative", *g.maxTime)
	case *g.hedge < 0:
		return nil, flagError("hedge", "%v, must not be negative", *g.hedge)
	}
	if *g.hedge > 0 {
		p.Hedge = &retry.Hedge{Delay: *g.hedge}
	}
	u, err := url.Parse(positional[0])
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%q is not an http or https URL", redact.URLString(positional[0]))
	}
	return u, nil
}

// request returns the request to send to u, its body read (-d) if given.
func (g *getFlags) request(u *url.URL, s streams) (curl.Request, error) {
	cr := curl.Request{Method: *g.method, URL: u.String(), Headers: g.headers, Key: *g.key, Agent: *g.agent, User: *g.user}
	if isSet(g.fs, "d") {
		b, err := curl.ReadData(*g.data, s.stdin)
		if err != nil {
			return cr, flagError("d", "%v", err)
		}
		cr.Body = &b
	}
	return cr, nil
}

// transport returns the retrying transport, without its policy yet.
func (g *getFlags) transport() *retryhttp.Transport {
	tr := &retryhttp.Transport{Budget: budget.Config{Ratio: -1}, ConnectTimeout: *g.connectTimeout}
	if !*g.propagate {
		tr.Propagate = func(*http.Request) bool { return false }
	}
	tr.GenerateKey = *g.key == "auto"
	return tr
}

// fetch sends req, writes the response, and returns the exit code; errors
// go to es.
func (g *getFlags) fetch(ctx context.Context, s, es streams, client *http.Client, req *http.Request, u *url.URL, st *curl.Stats, trace *curl.Trace, maxPushback time.Duration) int {
	resp, err := client.Do(req)
	if err != nil {
		st.Err = err
		return getErrorCode(ctx, es, u, err, maxPushback, *g.maxTime > 0 || isSet(g.fs, "deadline"))
	}
	defer resp.Body.Close()
	st.Resp = resp
	st.URL = resp.Request.URL.String()

	if code, ok := g.writeBody(ctx, s, es, resp, st); !ok {
		return code
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
}

// writeBody writes the response to stdout or -o FILE; on failure it
// returns the exit code and false.
func (g *getFlags) writeBody(ctx context.Context, s, es streams, resp *http.Response, st *curl.Stats) (int, bool) {
	out := s.stdout
	if *g.output != "" {
		f, err := os.Create(*g.output)
		if err != nil {
			st.Err = err
			fmt.Fprintf(es.stderr, "heed get: %v\n", err)
			return exitFailure, false
		}
		defer f.Close()
		out = f
	}
	n, err := curl.WriteBody(out, resp, *g.include, *g.fail, *g.reveal)
	if errors.As(err, new(*curl.WriteError)) {
		st.Err = err
		fmt.Fprintf(es.stderr, "heed get: writing output: %v\n", err)
		return exitFailure, false
	}
	st.Size = n
	if err != nil {
		st.Err = err
		return bodyErrorCode(ctx, es, err), false
	}
	if *g.output != "" {
		if f, ok := out.(*os.File); ok {
			if err := f.Close(); err != nil {
				st.Err = err
				fmt.Fprintf(es.stderr, "heed get: %v\n", err)
				return exitFailure, false
			}
		}
	}
	return exitOK, true
}

// bodyErrorCode reports err, which cut the body, and returns the exit code.
func bodyErrorCode(ctx context.Context, es streams, err error) int {
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

// writeOut writes -w's format after the body and returns the exit code,
// code unless that write failed.
func (g *getFlags) writeOut(s, es streams, st *curl.Stats, u *url.URL, code int) int {
	if g.wo.IsSet() {
		st.Total = time.Since(st.Start)
		st.Code = code
		if !*g.reveal {
			// As stderr says them: an error quotes the URL raw, and the
			// effective URL may hold the user's password or a token a
			// redirect handed out.
			st.URL = redact.URLString(st.URL)
			if st.Err != nil {
				st.Err = errors.New(redact.ErrorText(st.Err.Error(), u))
			}
		}
		if err := g.wo.Write(s.stdout, st); err != nil {
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
