// Package curl is what heed get takes from curl: combined one-letter flags
// (-fsSL), -H headers, -d data (@FILE), -i's head, -w's write-out
// variables, and the writing of a body told apart from reading it.
package curl

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/heed-go/heed/internal/redact"
	"github.com/heed-go/heed/retry"
	"github.com/heed-go/heed/retryhttp"
)

// SplitShortFlags rewrites curl's combined one-letter flags as the flag
// package takes them: "-fsSL" as "-f -s -S -L", "-sSo FILE" as "-s -S -o
// FILE", "-oFILE" as "-o FILE". Words that are values of flags, and words
// after "--", are left alone.
func SplitShortFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	takesValue := func(f *flag.Flag) bool {
		b, ok := f.Value.(interface{ IsBoolFlag() bool })
		return !ok || !b.IsBoolFlag()
	}
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...), nil
		}
		if len(a) < 2 || a[0] != '-' {
			out = append(out, a)
			continue
		}
		name := strings.TrimLeft(a, "-")
		if strings.Contains(name, "=") || fs.Lookup(name) != nil || strings.HasPrefix(a, "--") || len(name) == 1 || name == "help" {
			// A flag as the flag package takes it; its value, if it takes
			// one and has no "=", is the next word.
			out = append(out, a)
			if f := fs.Lookup(name); f != nil && takesValue(f) && i+1 < len(args) {
				out = append(out, args[i+1])
				i++
			}
			continue
		}
		for j := 0; j < len(name); j++ {
			c := name[j : j+1]
			f := fs.Lookup(c)
			if f == nil {
				return nil, fmt.Errorf("flag provided but not defined: -%s (in %s)", c, a)
			}
			out = append(out, "-"+c)
			if takesValue(f) {
				if rest := name[j+1:]; rest != "" {
					out = append(out, rest)
				} else if i+1 < len(args) {
					out = append(out, args[i+1])
					i++
				}
				break
			}
		}
	}
	return out, nil
}

// Stats is what -w reports about a call.
type Stats struct {
	Start     time.Time
	Method    string
	URL       string // the last one requested
	Attempts  int    // in all, over every hop
	Hops      int    // requests sent by the client: 1 + redirects followed
	Redirects int
	Resp      *http.Response // the final one, or nil
	Size      int64          // bytes written of the body (and head, with -i)
	Err       error          // what ended the call, when it failed
	Total     time.Duration
	Code      int // heed get's exit code
}

// writeOutVars are the variables of -w, each with its value as text and as
// JSON.
var writeOutVars = map[string]func(st *Stats) any{
	"http_code":     func(st *Stats) any { return st.status() },
	"response_code": func(st *Stats) any { return st.status() },
	"num_attempts":  func(st *Stats) any { return st.Attempts },
	"num_retries":   func(st *Stats) any { return max(st.Attempts-st.Hops, 0) },
	"num_redirects": func(st *Stats) any { return st.Redirects },
	"time_total":    func(st *Stats) any { return json.Number(strconv.FormatFloat(st.Total.Seconds(), 'f', 6, 64)) },
	"url_effective": func(st *Stats) any { return st.URL },
	"size_download": func(st *Stats) any { return st.Size },
	"method":        func(st *Stats) any { return st.Method },
	"exitcode":      func(st *Stats) any { return st.Code },
	"content_type": func(st *Stats) any {
		if st.Resp == nil {
			return ""
		}
		return st.Resp.Header.Get("Content-Type")
	},
	"errormsg": func(st *Stats) any {
		if st.Err == nil {
			return ""
		}
		return st.Err.Error()
	},
}

func (st *Stats) status() int {
	if st.Resp == nil {
		return 0
	}
	return st.Resp.StatusCode
}

// WriteOut is the -w flag: a format with %{variables}, parsed when the flag
// is set so that an unknown variable is a usage error.
type WriteOut struct {
	set   bool // Set was called
	parts []writeOutPiece
}

type writeOutPiece struct {
	text string // literal text, when name is ""
	name string
}

// String is empty: the flag has no default.
func (w *WriteOut) String() string { return "" }

// Set parses format; an unknown variable is an error.
func (w *WriteOut) Set(format string) error {
	var parts []writeOutPiece
	var lit strings.Builder
	for i := 0; i < len(format); i++ {
		c := format[i]
		switch {
		case c == '\\' && i+1 < len(format):
			i++
			switch format[i] {
			case 'n':
				lit.WriteByte('\n')
			case 't':
				lit.WriteByte('\t')
			case 'r':
				lit.WriteByte('\r')
			case '\\':
				lit.WriteByte('\\')
			default:
				lit.WriteByte('\\')
				lit.WriteByte(format[i])
			}
		case c == '%' && strings.HasPrefix(format[i:], "%%"):
			lit.WriteByte('%')
			i++
		case c == '%' && strings.HasPrefix(format[i:], "%{"):
			end := strings.IndexByte(format[i:], '}')
			if end < 0 {
				return fmt.Errorf("%q: %%{ without a closing }", format)
			}
			name := format[i+2 : i+end]
			if _, ok := writeOutVars[name]; !ok && name != "json" {
				return fmt.Errorf("unknown variable %%{%s} (see heed get --help)", name)
			}
			if lit.Len() > 0 {
				parts = append(parts, writeOutPiece{text: lit.String()})
				lit.Reset()
			}
			parts = append(parts, writeOutPiece{name: name})
			i += end
		default:
			lit.WriteByte(c)
		}
	}
	if lit.Len() > 0 {
		parts = append(parts, writeOutPiece{text: lit.String()})
	}
	w.set, w.parts = true, parts
	return nil
}

// IsSet reports whether the flag was given.
func (w *WriteOut) IsSet() bool { return w.set }

// Write writes the format with st's values to out.
func (w *WriteOut) Write(out io.Writer, st *Stats) error {
	var b strings.Builder
	for _, p := range w.parts {
		switch p.name {
		case "":
			b.WriteString(p.text)
		case "json":
			all := make(map[string]any, len(writeOutVars))
			for name, v := range writeOutVars {
				all[name] = v(st)
			}
			j, err := json.Marshal(all) // keys sorted
			if err != nil {
				return err
			}
			b.Write(j)
		case "http_code", "response_code":
			fmt.Fprintf(&b, "%03d", st.status())
		default:
			fmt.Fprint(&b, writeOutVars[p.name](st))
		}
	}
	_, err := io.WriteString(out, b.String())
	return err
}

// Headers is a flag.Value for repeated -H 'Name: value'.
type Headers []string

// String joins the headers.
func (h *Headers) String() string { return strings.Join(*h, ", ") }

// Set accepts any value; check reports a bad one after parsing, because
// the flag package would quote the whole value, a token perhaps, in its
// error.
func (h *Headers) Set(s string) error {
	*h = append(*h, s)
	return nil
}

// Check returns an error for the first header that is not 'Name: value',
// naming it without its value.
func (h *Headers) Check() error {
	for _, s := range *h {
		name, _, ok := strings.Cut(s, ":")
		if !ok || strings.TrimSpace(name) == "" || strings.ContainsAny(strings.TrimSpace(name), " \t") {
			first, _, _ := strings.Cut(strings.TrimSpace(s), " ")
			return fmt.Errorf("invalid --H: %q... is not 'Name: value'", redact.Text(first))
		}
	}
	return nil
}

// RoundTripFunc is an http.RoundTripper that is a function.
type RoundTripFunc func(*http.Request) (*http.Response, error)

// RoundTrip calls f.
func (f RoundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Output counts the bytes written to W and marks W's errors as
// [*WriteError], so that an error of io.Copy tells writing the output
// apart from reading the body.
type Output struct {
	W io.Writer
	N int64 // bytes written
}

// Write writes p to W and counts it.
func (o *Output) Write(p []byte) (int, error) {
	n, err := o.W.Write(p)
	o.N += int64(n)
	if err != nil {
		err = &WriteError{err}
	}
	return n, err
}

// WriteError is an error writing the output, told apart from an error
// reading the body.
type WriteError struct{ error }

// Unwrap returns the writer's error.
func (e *WriteError) Unwrap() error { return e.error }

// ReadData returns -d's value: itself, or the contents of @FILE (@- is
// stdin).
func ReadData(d string, stdin io.Reader) (string, error) {
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

// WriteHead writes the status line and the headers, sorted, then a blank
// line; unless reveal, with secrets redacted as everywhere else (the
// values of secret headers, secrets in URLs and challenges): a head
// printed by -i or -I ends up in terminals, CI logs and bug reports.
func WriteHead(w io.Writer, resp *http.Response, reveal bool) {
	fmt.Fprintf(w, "%s %s\r\n", resp.Proto, resp.Status)
	names := make([]string, 0, len(resp.Header))
	for name := range resp.Header {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		for _, v := range resp.Header[name] {
			if !reveal {
				v = headerValue(name, v)
			}
			fmt.Fprintf(w, "%s: %s\r\n", name, v)
		}
	}
	io.WriteString(w, "\r\n")
}

// headerValue is the value v of the response header name as -i and -I
// write it without --reveal: REDACTED for a secret header (Set-Cookie,
// X-Api-Key, ...), secrets removed from a URL (Location, Link) or from a
// challenge's parameters (WWW-Authenticate), and any other as received
// (an ETag or a digest may look random, and is no secret).
func headerValue(name, v string) string {
	switch n := strings.ToLower(name); {
	case redact.SecretHeader(name):
		return redact.Mark
	case n == "location" || n == "content-location":
		return redact.URLString(v) // relative too: "/cb?code=..."
	case n == "link" || n == "refresh" || strings.HasSuffix(n, "-authenticate"):
		return redact.Text(v)
	}
	return v
}

// Request is what heed get sends, from its flags.
type Request struct {
	Method  string  // -X; default GET, or POST with a body
	URL     string  // checked by the caller
	Body    *string // -d's value (see [ReadData]); nil: no body
	Headers Headers // -H
	Key     string  // --idempotency-key, unless "auto"
	Agent   string  // -A: the User-Agent (default heed-get)
	User    string  // -u USER:PASSWORD, sent as Basic authentication
}

// New returns the request r describes under ctx: with a User-Agent, the
// form Content-Type of curl -d (an -H overrides it), and Idempotency-Key.
func (r Request) New(ctx context.Context) (*http.Request, error) {
	var body io.Reader
	m := strings.ToUpper(r.Method)
	if r.Body != nil {
		body = strings.NewReader(*r.Body) // rewindable: http.NewRequest sets GetBody
	}
	if m == "" && r.Body != nil {
		m = http.MethodPost
	} else if m == "" {
		m = http.MethodGet
	}
	req, err := http.NewRequestWithContext(ctx, m, r.URL, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", cmp.Or(r.Agent, "heed-get"))
	if r.User != "" {
		user, pass, _ := strings.Cut(r.User, ":")
		req.SetBasicAuth(user, pass)
	}
	if r.Body != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for _, h := range r.Headers {
		name, value, _ := strings.Cut(h, ":")
		req.Header.Set(strings.TrimSpace(name), strings.TrimSpace(value))
	}
	if r.Key != "" && r.Key != "auto" {
		req.Header.Set(retryhttp.IdempotencyKeyHeader, r.Key)
	}
	return req, nil
}

// Client returns a client over rt that follows redirects, at most 10,
// only when follow is set (curl -L), counting them in st.
func Client(rt http.RoundTripper, follow bool, st *Stats) *http.Client {
	return &http.Client{Transport: rt, CheckRedirect: func(r *http.Request, via []*http.Request) error {
		if !follow {
			return http.ErrUseLastResponse
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		st.Redirects++
		return nil
	}}
}

// WriteBody writes resp's body to out, after its head with include (curl
// -i; secrets redacted unless reveal: see [WriteHead]), or nothing of a
// response with status 400 or more with fail (curl -f), and returns the
// bytes written. An error writing out is a
// [*WriteError]; any other error is one reading the body.
func WriteBody(out io.Writer, resp *http.Response, include, fail, reveal bool) (int64, error) {
	body := io.Reader(resp.Body)
	failed := fail && resp.StatusCode >= 400
	if failed {
		body = strings.NewReader("") // curl --fail: nothing of an error
	}
	cw := &Output{W: out}
	w := bufio.NewWriter(cw)
	if include && !failed {
		WriteHead(w, resp, reveal)
	}
	_, copyErr := io.Copy(w, body)
	if err := w.Flush(); err != nil {
		return cw.N, err // a *WriteError: only out fails a flush
	}
	return cw.N, copyErr
}

// Trace follows a call's decisions: it counts attempts and hops (requests
// sent: 1 + redirects followed) in Stats and keeps the last decision. With
// W set, it writes "heed: " and Line of each decision to W, the last
// attempt of a hop once its status is known: Line's "ok", or, for a status
// of 400 or more that is final without being retried, that status.
type Trace struct {
	Stats *Stats
	W     io.Writer                   // nil: no lines
	Line  func(retry.Decision) string // a decision as a line
	Last  retry.Decision              // the last decision made

	done *retry.Decision // the last attempt of a hop, said once its status is known
}

// Observe is the retry policy's observer.
func (t *Trace) Observe(_ context.Context, e retry.Event) {
	t.Last = e.Decision
	t.Stats.Attempts++
	switch {
	case t.W == nil:
	case e.Action == retry.Done:
		t.done = &e.Decision
	default:
		fmt.Fprintf(t.W, "heed: %s\n", t.Line(e.Decision))
	}
}

// RoundTripper returns rt, seen by t: each call through it is one hop.
func (t *Trace) RoundTripper(rt http.RoundTripper) http.RoundTripper {
	return RoundTripFunc(func(r *http.Request) (*http.Response, error) {
		t.Stats.Hops++
		resp, err := rt.RoundTrip(r)
		if t.done != nil {
			line := t.Line(*t.done)
			if resp != nil && resp.StatusCode >= 400 {
				line = fmt.Sprintf("attempt %d: %s, not retried (a status that is not retryable)", t.done.Attempt, resp.Status)
			}
			fmt.Fprintf(t.W, "heed: %s\n", line)
			t.done = nil
		}
		return resp, err
	})
}
