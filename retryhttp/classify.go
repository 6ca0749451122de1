package retryhttp

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"syscall"
	"time"

	"github.com/heed-go/heed/retry"
)

// attemptClass is the outcome class of one attempt, as curl users know them:
// a response accepted as it is, a response whose status asks for a retry,
// or a transport failure, split by whether the request may have reached the
// server.
type attemptClass uint8

const (
	// classAccepted: a response the caller takes as it is, whatever its status
	// (a 404 is an answer, not a failure to retry).
	classAccepted attemptClass = iota
	// classRetryableStatus: a response whose status is in the transport's
	// RetryStatus list (408, 429, 500, 502, 503, 504 by default).
	classRetryableStatus
	// classNeverSent: a transport failure before the request could reach the
	// server (DNS, refused connection, dial or TLS handshake failure).
	// Safe to repeat whatever the method.
	classNeverSent
	// classMaybeProcessed: a transport failure after the request may have
	// reached the server (EOF or reset after writing, a timeout awaiting
	// the response). Repeated only when the request is safe to repeat.
	classMaybeProcessed
)

var classNames = [...]string{"accepted", "retryable status", "never sent", "maybe processed"}

// String returns the class in words, such as "never sent".
func (c attemptClass) String() string {
	if int(c) < len(classNames) {
		return classNames[c]
	}
	return "attemptClass(" + strconv.Itoa(int(c)) + ")"
}

// StatusError is the error of an attempt that got a response with a
// retryable status. When the transport gives up it returns that response,
// not this error, except when the server's Retry-After does not fit before
// the deadline: then the error returned wraps a *StatusError marked with
// the server's wait (retry.After), which [RetryAfter] reads.
type StatusError struct {
	// StatusCode is the response's status code, such as 503.
	StatusCode int
	// Status is the status line's text, such as "503 Service Unavailable".
	Status string
	// RetryAfter is the server's Retry-After as parsed (0 when absent or
	// ignored).
	RetryAfter time.Duration
}

// Error returns the status line, such as "503 Service Unavailable".
func (e *StatusError) Error() string {
	if e.Status != "" {
		return e.Status
	}
	return strconv.Itoa(e.StatusCode) + " " + http.StatusText(e.StatusCode)
}

// ErrBodyTooLarge is matched by the error a response body returns on Read,
// or RoundTrip returns, when the body exceeds Transport.MaxResponseBody.
var ErrBodyTooLarge = errors.New("retryhttp: response body too large")

// RetryAfter returns the wait a server asked for, carried by an error from
// a [Transport] that gave up because that wait did not fit before the
// deadline, and true; or 0 and false. A caller (or a job queue) can
// schedule the retry that far ahead.
func RetryAfter(err error) (time.Duration, bool) {
	if err == nil {
		return 0, false
	}
	// A pushback the server sent is what the policy classifies first
	// (after an explicit Permanent), whatever its classifier says.
	var p retry.Policy
	if o, wait := p.Classify(err, false); o == retry.OutcomePushback {
		return wait, true
	}
	return 0, false
}

// neverSent reports whether err proves the request never left: no
// connection could be made (DNS, dial, TLS handshake). gotConn comes from
// httptrace when it was on (-1 unknown, 0 no connection, 1 connection).
func neverSent(err error, gotConn int) bool {
	if gotConn == 0 {
		return true
	}
	if _, ok := errors.AsType[*net.DNSError](err); ok {
		return true
	}
	if oe, ok := errors.AsType[*net.OpError](err); ok && oe.Op == "dial" {
		return true
	}
	return errors.Is(err, syscall.ECONNREFUSED)
}

// permanentTransport reports transport errors that repeating cannot fix:
// certificate verification and other deterministic TLS failures, a DNS name
// that does not exist, a peer that does not speak TLS, an unusable request.
func permanentTransport(err error) bool {
	if _, ok := errors.AsType[*tls.CertificateVerificationError](err); ok {
		return true
	}
	if _, ok := errors.AsType[x509.UnknownAuthorityError](err); ok {
		return true
	}
	if _, ok := errors.AsType[x509.HostnameError](err); ok {
		return true
	}
	if _, ok := errors.AsType[x509.CertificateInvalidError](err); ok {
		return true
	}
	if _, ok := errors.AsType[tls.RecordHeaderError](err); ok {
		return true
	}
	if _, ok := errors.AsType[tls.AlertError](err); ok {
		return true
	}
	if errors.Is(err, http.ErrSchemeMismatch) {
		return true
	}
	if dns, ok := errors.AsType[*net.DNSError](err); ok {
		return dns.IsNotFound || !(dns.IsTimeout || dns.IsTemporary)
	}
	return false
}

// transientTransport reports transport errors known to be transient: a
// refused, reset or aborted connection, a broken pipe, an early EOF, a
// network timeout.
func transientTransport(err error) bool {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.ECONNABORTED) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, net.ErrClosed) {
		return true
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		// A cancellation that is not the caller's (checked before) nor the
		// attempt's own timeout: from a wrapping transport, say. A
		// response-header timeout is also DeadlineExceeded, and a
		// net.Error timeout: handled below.
		ne, ok := errors.AsType[net.Error](err)
		return ok && ne.Timeout()
	}
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
		return true
	}
	return false
}

// classifyErr classifies a transport error for the call protocol and
// returns its class. Unknown errors get OutcomeSuccess, which leaves them to the
// policy's Retryable classifier (retry.IsTransient by default); marks the
// error carries ([retry.Permanent], [retry.Transient]) are honoured by
// that classification too.
func classifyErr(err error, gotConn int) (retry.Outcome, attemptClass) {
	class := classMaybeProcessed
	if neverSent(err, gotConn) {
		class = classNeverSent
	}
	switch {
	case permanentTransport(err):
		return retry.OutcomePermanent, class
	case transientTransport(err):
		return retry.OutcomeTransient, class
	}
	return retry.OutcomeSuccess, class
}

// errKind is a short, secret-free name of a transport error for logs.
func errKind(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrBodyTooLarge):
		return "body_too_large"
	}
	if _, ok := errors.AsType[*tls.CertificateVerificationError](err); ok {
		return "tls_certificate"
	}
	if dns, ok := errors.AsType[*net.DNSError](err); ok {
		if dns.IsNotFound {
			return "dns_not_found"
		}
		return "dns"
	}
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection_refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection_reset"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "eof"
	case errors.Is(err, context.Canceled):
		return "canceled"
	}
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
		return "timeout"
	}
	if _, ok := errors.AsType[tls.RecordHeaderError](err); ok {
		return "tls"
	}
	if _, ok := errors.AsType[tls.AlertError](err); ok {
		return "tls"
	}
	return "other"
}
