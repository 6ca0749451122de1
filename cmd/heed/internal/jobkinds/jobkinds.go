// Package jobkinds is the registry of the job kinds the heed command knows:
// small, built-in handlers for `heed jobs work`, `heed demo`, the crash test
// and the benchmarks. Go programs register their own kinds with queue.Handle;
// these exist so that the command line can enqueue and run something useful
// without writing Go.
//
// Most callers want [Validate] (before enqueueing) and [Register] (on a
// worker). Every kind's arguments are a JSON object; unknown fields are
// rejected by Validate, so a typo is caught at enqueue time rather than
// silently ignored by the worker.
package jobkinds

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/heed-go/heed/budget"
	"github.com/heed-go/heed/internal/redact"
	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/retry"
	"github.com/heed-go/heed/retryhttp"
)

// Kind describes one built-in job kind.
type Kind struct {
	Name    string // such as "fail"
	Example string // a JSON example of its arguments
	Doc     string // one line: what it does

	validate func(raw json.RawMessage) error
	register func(w *queue.Worker, cfg *Config)
}

// Config configures the handlers [Register] installs. The zero value is
// ready to use: exec jobs are refused and HTTP jobs use a default client.
type Config struct {
	// AllowExec lets exec jobs run commands. Without it, the worker gives
	// exec jobs back (they stay available for a worker that allows them):
	// anyone who can enqueue a job would otherwise run commands on the
	// worker's machine.
	AllowExec bool
	// OnExecRefused, when set, is called for every exec job such a worker
	// gives back (queue.Decline: it waits ExecRefusedSnooze, its attempt
	// not counted, and a drain of this worker does not wait for it), to
	// warn whoever runs it.
	OnExecRefused func(job *queue.Job)
	// HTTP is the base transport under the retryhttp.Transport that http
	// jobs make their requests through (default: a clone of
	// http.DefaultTransport, shared by all of them). That transport makes
	// one attempt per job attempt, limited by the job's timeout_ms, so that
	// the queue alone owns retries, and its classification is passed on
	// unchanged.
	HTTP http.RoundTripper
}

// Limits on the arguments of the built-in kinds.
const (
	MaxSleep       = time.Hour        // sleep and fail's "ms"
	DefaultTimeout = 30 * time.Second // http and exec without "timeout_ms"
	maxOutput      = 512              // bytes of a failed command's output kept in its error
)

var kinds = []Kind{
	{
		Name: "noop", Example: `{}`, Doc: "does nothing and succeeds (benchmarks)",
		validate: strict[noopArgs],
		register: func(w *queue.Worker, _ *Config) {
			queue.Handle(w, "noop", func(context.Context, *queue.Job, noopArgs) error { return nil })
		},
	},
	{
		Name: "sleep", Example: `{"ms": 250}`, Doc: "sleeps ms milliseconds (ends early, and fails, if the attempt is cancelled)",
		validate: strict[sleepArgs],
		register: func(w *queue.Worker, _ *Config) { queue.Handle(w, "sleep", runSleep) },
	},
	{
		Name: "fail", Example: `{"times": 2, "permanent": false, "message": "boom", "ms": 0}`,
		Doc:      "sleeps ms, fails transiently on its first N=times attempts, then succeeds (or, with permanent, fails permanently)",
		validate: strict[failArgs],
		register: func(w *queue.Worker, _ *Config) { queue.Handle(w, "fail", runFail) },
	},
	{
		Name: "http", Example: `{"url": "https://example.com/hook", "method": "POST", "body": "{\"id\": 7}", "headers": {"Content-Type": "application/json"}, "timeout_ms": 10000}`,
		Doc:      "one request per attempt, through retryhttp, with body (sent as is) and headers (secret ones redacted wherever the job is shown); 2xx/3xx succeed, 408, 429, 500, 502, 503, 504 and transient network errors are retried (honouring Retry-After) when the request is safe to repeat (GET, HEAD, PUT, DELETE, OPTIONS, or a POST or PATCH with its Idempotency-Key: one is made at enqueue and sent on every attempt; keyed_retries_off for servers that ignore keys), other statuses and errors fail permanently",
		validate: strict[httpArgs],
		register: registerHTTP,
	},
	{
		Name: "exec", Example: `{"argv": ["./sync.sh", "--all"], "timeout_ms": 60000}`,
		Doc:      "runs argv (no shell); exit 0 succeeds, 126/127 fail permanently, other codes are retried; needs heed jobs work --allow-exec",
		validate: strict[execArgs],
		register: registerExec,
	},
}

// Kinds returns the built-in kinds in the order their help lists them.
func Kinds() []Kind { return slices.Clone(kinds) }

// Names returns the names of the built-in kinds.
func Names() []string {
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = k.Name
	}
	return names
}

// Lookup returns the built-in kind called name.
func Lookup(name string) (Kind, bool) {
	for _, k := range kinds {
		if k.Name == name {
			return k, true
		}
	}
	return Kind{}, false
}

// ErrUnknownKind is matched by the error Validate returns for a kind that is
// not built in.
var ErrUnknownKind = errors.New("jobkinds: unknown job kind")

// Validate checks that kind is built in and that args are valid arguments
// for it (a JSON object with known fields of the right types and values).
// An empty args is taken as {}.
func Validate(kind string, args json.RawMessage) error {
	k, ok := Lookup(kind)
	if !ok {
		return fmt.Errorf("%w %q (built in: %s)", ErrUnknownKind, kind, strings.Join(Names(), ", "))
	}
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage("{}")
	}
	if err := k.validate(args); err != nil {
		return fmt.Errorf("invalid arguments for %s job: %w (example: %s)", kind, err, k.Example)
	}
	return nil
}

// Prepare checks kind and args as [Validate] does and returns the
// arguments to store: those of an http job with method POST or PATCH gain
// an Idempotency-Key header (a random UUID) when they have none, so that
// every attempt of the job sends the same key and retryhttp may repeat it
// (unless keyed_retries_off). Other arguments are returned as they are.
func Prepare(kind string, args json.RawMessage) (json.RawMessage, error) {
	if err := Validate(kind, args); err != nil {
		return nil, err
	}
	if kind != "http" {
		return args, nil
	}
	return prepareHTTP(args)
}

// Register registers a handler for every built-in kind on w. It must be
// called before w starts.
func Register(w *queue.Worker, cfg Config) {
	for _, k := range kinds {
		k.register(w, &cfg)
	}
}

// checker is implemented by argument types with rules beyond their JSON
// types.
type checker interface{ check() error }

// strict decodes raw into a T, rejecting unknown fields and trailing data,
// and checks it.
func strict[T any](raw json.RawMessage) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var v T
	if err := dec.Decode(&v); err != nil {
		return fmt.Errorf("%s", strings.TrimPrefix(err.Error(), "json: "))
	}
	if dec.More() {
		return errors.New("trailing data after the JSON object")
	}
	if c, ok := any(&v).(checker); ok {
		return c.check()
	}
	return nil
}

func checkMillis(name string, ms int64, maxD time.Duration) error {
	if ms < 0 || time.Duration(ms)*time.Millisecond > maxD {
		return fmt.Errorf("%q is %d, must be from 0 to %d", name, ms, maxD.Milliseconds())
	}
	return nil
}

type noopArgs struct{}

type sleepArgs struct {
	MS int64 `json:"ms"`
}

func (a *sleepArgs) check() error { return checkMillis("ms", a.MS, MaxSleep) }

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

func runSleep(ctx context.Context, _ *queue.Job, a sleepArgs) error {
	return sleepCtx(ctx, time.Duration(a.MS)*time.Millisecond)
}

type failArgs struct {
	Times     int    `json:"times"`
	Permanent bool   `json:"permanent"`
	Message   string `json:"message"`
	MS        int64  `json:"ms"`
}

func (a *failArgs) check() error {
	if a.Times < 0 {
		return fmt.Errorf(`"times" is %d, must not be negative`, a.Times)
	}
	return checkMillis("ms", a.MS, MaxSleep)
}

// runFail fails transiently while the job's attempt number is at most
// Times, then succeeds or fails permanently. The attempt number counts lost
// attempts too, so a job whose worker died still follows its script.
func runFail(ctx context.Context, job *queue.Job, a failArgs) error {
	if err := sleepCtx(ctx, time.Duration(a.MS)*time.Millisecond); err != nil {
		return err
	}
	msg := a.Message
	if msg == "" {
		msg = "scripted failure"
	}
	switch {
	case job.Attempt <= a.Times:
		return retry.Transient(fmt.Errorf("%s (transient, %d of %d)", msg, job.Attempt, a.Times))
	case a.Permanent:
		return retry.Permanent(fmt.Errorf("%s (permanent)", msg))
	}
	return nil
}

type httpArgs struct {
	URL     string            `json:"url"`
	Method  string            `json:"method"`
	Body    string            `json:"body"`
	Headers map[string]string `json:"headers"`
	// KeyedRetriesOff: the server is not known to honour Idempotency-Key,
	// so a POST or PATCH is not repeated because it carries one
	// (retryhttp.Transport.KeyedRetriesOff).
	KeyedRetriesOff bool  `json:"keyed_retries_off"`
	TimeoutMS       int64 `json:"timeout_ms"`
}

// headersManaged are the request headers net/http and retryhttp write
// themselves: a job may not set them.
var headersManaged = []string{"Host", "Content-Length", "Transfer-Encoding", "Connection", "Retry-Attempt", "Timeout-Remaining"}

func (a *httpArgs) check() error {
	u, err := url.Parse(a.URL)
	switch {
	case a.URL == "":
		return errors.New(`"url" is missing`)
	case err != nil:
		return fmt.Errorf(`"url" is not a URL`)
	case u.Scheme != "http" && u.Scheme != "https" || u.Host == "":
		return fmt.Errorf(`"url" must be an absolute http or https URL`)
	}
	switch a.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch, http.MethodOptions:
	default:
		return fmt.Errorf(`"method" %q is not one of GET, HEAD, POST, PUT, DELETE, PATCH, OPTIONS`, a.Method)
	}
	for name, v := range a.Headers {
		if !validHeaderName(name) {
			return fmt.Errorf(`"headers": %q is not a header name`, name)
		}
		if slices.Contains(headersManaged, http.CanonicalHeaderKey(name)) {
			return fmt.Errorf(`"headers": %s is set by the request itself, not by a job`, http.CanonicalHeaderKey(name))
		}
		if strings.ContainsAny(v, "\r\n\x00") {
			return fmt.Errorf(`"headers": the value of %s has a line break or NUL`, name)
		}
	}
	return checkMillis("timeout_ms", a.TimeoutMS, MaxSleep)
}

// validHeaderName reports whether name is an HTTP token (RFC 9110 §5.6.2).
func validHeaderName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// keyed reports whether an http job with method gets an Idempotency-Key at
// enqueue: the methods retryhttp repeats only with one.
func keyed(method string) bool { return method == http.MethodPost || method == http.MethodPatch }

// headerIn returns the value of the header name in h, matched without
// regard to case, and whether it is there.
func headerIn(h map[string]string, name string) (string, bool) {
	for k, v := range h {
		if strings.EqualFold(k, name) {
			return v, true
		}
	}
	return "", false
}

// prepareHTTP returns the arguments of an http job as they are stored: a
// POST or PATCH without an Idempotency-Key header gets one, a random UUID
// quoted as the IETF draft's sf-string, so that every attempt of the job
// sends the same key.
func prepareHTTP(raw json.RawMessage) (json.RawMessage, error) {
	var a httpArgs
	if err := json.Unmarshal(raw, &a); err != nil {
		return nil, err
	}
	if !keyed(a.Method) {
		return raw, nil
	}
	if _, ok := headerIn(a.Headers, retryhttp.IdempotencyKeyHeader); ok {
		return raw, nil
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		return nil, err
	}
	if a.Headers == nil {
		a.Headers = map[string]string{}
	}
	a.Headers[retryhttp.IdempotencyKeyHeader] = newKey()
	h, err := json.Marshal(a.Headers)
	if err != nil {
		return nil, err
	}
	top["headers"] = h
	return json.Marshal(top)
}

// newKey returns a random UUID (version 4) quoted as an sf-string.
func newKey() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return `"` + h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:] + `"`
}

func registerHTTP(w *queue.Worker, cfg *Config) {
	hc := newHTTPClient(cfg.HTTP)
	queue.Handle(w, "http", func(ctx context.Context, job *queue.Job, a httpArgs) error {
		return runHTTP(ctx, hc, a)
	})
}

// httpClient makes an http job's request through retryhttp, one attempt
// per job attempt (the queue owns retries: one owner per chain, and its
// backoff, attempts and time budget apply), with the job's timeout_ms as
// that attempt's limit (retry.Policy.AttemptTimeout), and keeps retryhttp's
// decision about that attempt, so that what retryhttp would not repeat (a
// request not safe to repeat, a permanent error, an unkeyed POST that timed
// out after it was sent) the queue does not repeat either.
type httpClient struct {
	base http.RoundTripper // shared by every request, for its connections
}

// decisionKey is the context key of the *retry.Decision an http job's
// request records retryhttp's decision in. It stays the zero Decision
// (Action Done, never GiveUp) when retryhttp decided nothing: the
// request's context ended first.
type decisionKey struct{}

func newHTTPClient(base http.RoundTripper) *httpClient {
	if base == nil {
		base = http.DefaultTransport.(*http.Transport).Clone()
	}
	return &httpClient{base: base}
}

// transport returns the retryhttp.Transport of one request whose attempt
// may take timeout. A Transport is cheap to make; the connections are the
// base's.
func (hc *httpClient) transport(timeout time.Duration) *retryhttp.Transport {
	return &retryhttp.Transport{Base: hc.base, Budget: budget.Config{Ratio: -1}, Policy: retry.Policy{
		Attempts:       1,
		AttemptTimeout: timeout,
		Observe: func(ctx context.Context, e retry.Event) {
			if d, ok := ctx.Value(decisionKey{}).(*retry.Decision); ok {
				*d = e.Decision
			}
		},
	}}
}

func runHTTP(ctx context.Context, hc *httpClient, a httpArgs) error {
	timeout := DefaultTimeout
	if a.TimeoutMS > 0 {
		timeout = time.Duration(a.TimeoutMS) * time.Millisecond
	}
	method := a.Method
	if method == "" {
		method = http.MethodGet
	}
	var d retry.Decision
	var body io.Reader
	if a.Body != "" {
		body = strings.NewReader(a.Body) // sent again as is: GetBody is set
	}
	req, err := http.NewRequestWithContext(context.WithValue(ctx, decisionKey{}, &d), method, a.URL, body)
	if err != nil {
		return retry.Permanent(fmt.Errorf("http: %s", redact.Text(err.Error())))
	}
	for k, v := range a.Headers {
		req.Header.Set(k, v)
	}
	safe := retryhttp.RedactURL(req.URL)
	tr := hc.transport(timeout)
	tr.KeyedRetriesOff = a.KeyedRetriesOff
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		err = fmt.Errorf("http %s %s: %s", method, safe, causeText(req.URL, err))
		switch {
		case d.Action == retry.GiveUp && notRetryable(d.Reason):
			return retry.Permanent(err) // a timed-out unkeyed POST too
		case d.Action == retry.GiveUp:
			return retry.Transient(err) // only the one-attempt limit stopped it
		}
		return err // the attempt's context ended: the queue knows why
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	err = fmt.Errorf("http %s %s: %s", method, safe, resp.Status)
	switch code := resp.StatusCode; {
	case code < 400:
		return nil
	case d.Action == retry.GiveUp && notRetryable(d.Reason):
		return retry.Permanent(fmt.Errorf("%w (%s)", err, d.Reason))
	case slices.Contains(retryhttp.DefaultRetryStatus, code):
		if d, ok := retryhttp.ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now()); ok {
			return retry.After(d, fmt.Errorf("%w (Retry-After %v)", err, d))
		}
		return retry.Transient(err)
	}
	return retry.Permanent(err)
}

// notRetryable reports whether retryhttp gave up for a reason no later
// attempt can change: the error is permanent, the server refused, or the
// request is not safe to repeat.
func notRetryable(r retry.Reason) bool {
	return r == retry.ReasonPermanent || r == retry.ReasonServerRefused || r == retry.ReasonNotRepeatable
}

// causeText is the message of err without the `Get "url": ` of the
// *url.Errors around it (net/http's, which quotes the URL whole, and
// retryhttp's), and with the secrets of u removed: the job's line already
// names the redacted URL.
func causeText(u *url.URL, err error) string {
	for {
		ue, ok := err.(*url.Error)
		if !ok {
			break
		}
		err = ue.Err
	}
	return redact.ErrorText(err.Error(), u)
}

type execArgs struct {
	Argv      []string `json:"argv"`
	TimeoutMS int64    `json:"timeout_ms"`
}

func (a *execArgs) check() error {
	if len(a.Argv) == 0 || a.Argv[0] == "" {
		return errors.New(`"argv" must name a command, such as ["./sync.sh", "--all"]`)
	}
	return checkMillis("timeout_ms", a.TimeoutMS, 24*time.Hour)
}

// ErrExecDisabled says why a worker that does not allow exec jobs gives
// them back.
var ErrExecDisabled = errors.New("exec jobs are disabled on this worker (start it with heed jobs work --allow-exec)")

// ExecRefusedSnooze is how long an exec job given back by a worker that
// does not allow exec jobs waits before a worker may claim it again.
const ExecRefusedSnooze = time.Minute

func registerExec(w *queue.Worker, cfg *Config) {
	allow, refused := cfg.AllowExec, cfg.OnExecRefused
	queue.Handle(w, "exec", func(ctx context.Context, job *queue.Job, a execArgs) error {
		if !allow {
			// Not the job's fault: it stays available for a worker that
			// may run it, without using an attempt.
			if refused != nil {
				refused(job)
			}
			return queue.Decline(ExecRefusedSnooze, ErrExecDisabled)
		}
		return runExec(ctx, a)
	})
}

// tail keeps the last max bytes written to it.
type tail struct {
	b   []byte
	max int
}

func (t *tail) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = t.b[len(t.b)-t.max:]
	}
	return len(p), nil
}

func runExec(ctx context.Context, a execArgs) error {
	if err := (&a).check(); err != nil {
		return retry.Permanent(err)
	}
	timeout := DefaultTimeout
	if a.TimeoutMS > 0 {
		timeout = time.Duration(a.TimeoutMS) * time.Millisecond
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, a.Argv[0], a.Argv[1:]...)
	out := &tail{max: maxOutput}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	if err == nil {
		return nil
	}
	msg := strings.TrimSpace(string(out.b))
	if msg != "" {
		msg = ": " + strings.ReplaceAll(msg, "\n", " | ")
	}
	var xe *exec.ExitError
	switch {
	case errors.As(err, &xe):
		code := xe.ExitCode()
		e := fmt.Errorf("exec %s: %v%s", a.Argv[0], err, msg)
		if code == 126 || code == 127 {
			return retry.Permanent(e)
		}
		return retry.Transient(e)
	case ctx.Err() != nil:
		return retry.Transient(fmt.Errorf("exec %s: %v", a.Argv[0], ctx.Err()))
	}
	// Could not start (not found, not executable): it will not start later.
	return retry.Permanent(fmt.Errorf("exec %s: %v", a.Argv[0], err))
}
