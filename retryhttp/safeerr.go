package retryhttp

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/heed-go/heed/internal/redact"
)

// urlError returns err, an error of the call for req that is not its
// context's, with the request URL's secrets removed from its message, so
// that err.Error() is safe to log. It has no "Get \"URL\":" prefix:
// http.Client adds one (see [RedactError]). It unwraps to err.
func urlError(req *http.Request, err error) error {
	if err == nil {
		return nil
	}
	if ctx := req.Context(); err == ctx.Err() || err == context.Cause(ctx) {
		return err // the caller's own error, unchanged
	}
	return &safeError{err: err, u: req.URL}
}

// safeError is an error whose message has the secrets of u removed, lazily:
// they are looked for only when the message is asked for. It unwraps to
// the original error and passes on its Timeout and Temporary.
type safeError struct {
	err error
	u   *url.URL // may be nil
}

func (e *safeError) Error() string { return redact.ErrorText(e.err.Error(), e.u) }

func (e *safeError) Unwrap() error { return e.err }

// Timeout reports whether the error is a timeout, as net.Error does.
func (e *safeError) Timeout() bool {
	var t interface{ Timeout() bool }
	return errors.As(e.err, &t) && t.Timeout()
}

// Temporary reports whether the error says it is temporary (deprecated in
// net.Error; passed on for callers that still ask).
func (e *safeError) Temporary() bool {
	var t interface{ Temporary() bool }
	return errors.As(e.err, &t) && t.Temporary()
}

// RedactError returns err fit for logs, with the secrets of the URL it
// quotes removed as [RedactURL] removes them. It is for the errors of
// http.Client.Do: the Client wraps every error of its Transport, a
// [Transport]'s included, in a *url.Error of its own that quotes the
// request's URL whole (query tokens included; only a password is masked),
// which a Transport cannot change. RedactError returns a *url.Error with
// the redacted URL instead (folding in a base transport's own *url.Error,
// if any), so the message names the URL once, redacted, with one "Get"
// prefix:
//
//	resp, err := client.Do(req)
//	if err != nil {
//		log.Printf("fetch: %v", retryhttp.RedactError(err))
//	}
//
// Any other error is returned with URLs and credential-like words in its
// message redacted (or as it is, when there are none). The result unwraps
// to err's causes, so errors.Is and errors.As see what they saw in err.
// RedactError(nil) is nil.
func RedactError(err error) error {
	if err == nil {
		return nil
	}
	if ue, ok := err.(*url.Error); ok {
		inner := ue.Err
		if iu, ok := inner.(*url.Error); ok && iu.Op == ue.Op {
			inner = iu.Err // a base transport's own: say the URL once
		}
		u, perr := url.Parse(ue.URL)
		if perr != nil {
			u = nil
		}
		return &url.Error{Op: ue.Op, URL: redact.URLString(ue.URL), Err: &safeError{err: inner, u: u}}
	}
	if msg := err.Error(); redact.Text(msg) == msg {
		return err
	}
	return &safeError{err: err}
}

// PropagateTo returns a [Transport].Propagate function that sends the
// propagation headers only to the given hosts, each a host name
// ("orders.internal"), a host and port ("orders.internal:8443"), or a
// domain suffix starting with a dot (".svc.cluster.local") that matches
// every host under it. Names are matched without regard to case.
func PropagateTo(hosts ...string) func(*http.Request) bool {
	exact := make(map[string]bool, len(hosts))
	var suffixes []string
	for _, h := range hosts {
		h = strings.ToLower(h)
		if strings.HasPrefix(h, ".") {
			suffixes = append(suffixes, h)
		} else {
			exact[h] = true
		}
	}
	return func(r *http.Request) bool {
		if r.URL == nil {
			return false
		}
		host := strings.ToLower(r.URL.Host)
		name := strings.ToLower(r.URL.Hostname())
		if exact[host] || exact[name] {
			return true
		}
		for _, s := range suffixes {
			if strings.HasSuffix(name, s) {
				return true
			}
		}
		return false
	}
}
