package retry

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"net/url"
	"strings"
	"syscall"
	"time"
)

type transientError struct{ err error }

func (e *transientError) Error() string { return e.err.Error() }
func (e *transientError) Unwrap() error { return e.err }

type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// pushbackError is an error that carries how long the server asked the
// caller to wait before trying again. Make one with [After].
type pushbackError struct {
	// Wait is the wait the server asked for. A negative Wait means the
	// server said not to retry at all.
	Wait time.Duration
	// Err is the underlying error.
	Err error
}

func (e *pushbackError) Error() string {
	if e.Err == nil {
		return "retry: server pushback " + e.Wait.String()
	}
	return e.Err.Error()
}

// Unwrap returns the underlying error.
func (e *pushbackError) Unwrap() error { return e.Err }

// Transient marks err as one that may pass if the call is repeated, whatever
// the policy's classifier says. Transient(nil) is nil.
func Transient(err error) error {
	if err == nil {
		return nil
	}
	return &transientError{err}
}

// Permanent marks err as one that will fail the same way again: the call
// gives up at once, whatever the policy's classifier says. Permanent(nil) is
// nil. errors.Is and errors.As still see err through the mark.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err}
}

// After marks err as transient with a wait requested by the server (an HTTP
// Retry-After, a gRPC pushback): the next attempt waits at least d, capped
// at the policy's MaxPushback. A negative d means the server said not to
// retry, and the call gives up. After(d, nil) is nil.
func After(d time.Duration, err error) error {
	if err == nil {
		return nil
	}
	return &pushbackError{Wait: d, Err: err}
}

// IsPermanent reports whether err was marked with [Permanent].
func IsPermanent(err error) bool {
	return findMarks(err).permanent
}

// marks are heed's own marks found in an error tree.
type marks struct {
	permanent bool
	transient bool
	pushback  *pushbackError // the first one found
}

// findMarks walks err's tree once (Unwrap() error and Unwrap() []error,
// depth first) and collects heed's marks. The mark types are unexported (or,
// for pushbackError, have no As method), so type assertions find them all;
// this is errors.As without its allocation and with one walk for three
// types.
func findMarks(err error) marks {
	var m marks
	m.walk(err)
	return m
}

func (m *marks) walk(err error) {
	for err != nil {
		switch e := err.(type) {
		case *permanentError:
			m.permanent = true
			return
		case *transientError:
			m.transient = true
		case *pushbackError:
			if m.pushback == nil {
				m.pushback = e
			}
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				if m.walk(e); m.permanent {
					return
				}
			}
			return
		default:
			return
		}
	}
}

// IsTransient is the default classifier. It reports whether err is known to
// be transient:
//   - marked with [Transient] or [After];
//   - having a Transient() bool method that returns true (checked with
//     errors.As, so wrapped errors count);
//   - a network timeout (net.Error whose Timeout() is true), which includes
//     net/http's TLS handshake timeout;
//   - a refused, reset or aborted connection or a broken pipe
//     (ECONNREFUSED, ECONNRESET, ECONNABORTED, EPIPE), or a temporary DNS
//     failure;
//   - a connection that ended early: io.EOF or io.ErrUnexpectedEOF inside
//     a *url.Error (what net/http's Client returns, for a server that
//     closed without answering or cut the headers) or a *net.OpError (a
//     read or write on a connection), and io.ErrUnexpectedEOF anywhere
//     (see below);
//   - a connection the server ended or a request it refused over HTTP/2
//     (a GOAWAY frame, a stream reset with REFUSED_STREAM) or HTTP/1 (a
//     kept-alive connection closed under the request), recognised by the
//     text of golang.org/x/net/http2's and net/http's errors, so that
//     x/net is not imported;
//   - driver.ErrBadConn (database/sql gives it back when its own retries
//     on a fresh connection failed too);
//   - a transient database error, recognised by behaviour so that no
//     driver is imported: an error with a SQLState() string method (pgx's
//     *pgconn.PgError) whose code is in class 08 (connection exception),
//     40001 (serialization failure), 40P01 (deadlock detected), 53300
//     (too many connections), 55P03 (lock not available), 57P01 to 57P03
//     (admin or crash shutdown, cannot connect now); or an error with a
//     Code() int method (modernc.org/sqlite's *sqlite.Error) whose primary
//     result code is SQLITE_BUSY (5) or SQLITE_LOCKED (6).
//
// io.EOF is how every reader says its input ended, so a bare io.EOF (a
// decoder given an empty input, a handler returning its reader's error) is
// not transient: only an EOF that a transport wrapped, as net/http and net
// do, is. io.ErrUnexpectedEOF says that input ended in the middle of
// something; net/http returns it bare from the Read of a response body the
// server cut, so it is transient wherever it is found. A truncated local
// file gives it too and spends the retries the policy allows before it
// fails: mark such an error with [Permanent].
//
// Whether an error is transient is not whether the work is safe to repeat:
// a reset after a POST was sent is transient, and only its executor knows
// it must not be repeated. retryhttp and heedgrpc decide that themselves;
// when one gives up because the request was not safe to repeat
// ([ReasonNotRepeatable]), the *ExhaustedError it returns is not transient
// either, so a job queue that runs the call does not repeat it.
//
// Anything else, including context.Canceled and context.DeadlineExceeded
// that did not come from the attempt's own timeout, is not retried by
// default: a failure that will fail the same way again must not be repeated.
// A plain error with none of these traits is permanent. An error marked with
// [Permanent] is never transient.
func IsTransient(err error) bool {
	if err == nil {
		return false
	}
	if m := findMarks(err); m.permanent {
		return false
	} else if m.transient || m.pushback != nil {
		return true
	}
	if tr, ok := errors.AsType[interface {
		error
		Transient() bool
	}](err); ok {
		return tr.Transient()
	}
	if ex, ok := errors.AsType[*ExhaustedError](err); ok && ex.Reason == ReasonNotRepeatable {
		return false
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	if transientDB(err) {
		return true
	}
	if dns, ok := errors.AsType[*net.DNSError](err); ok {
		return dns.IsTimeout || dns.IsTemporary
	}
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
		return true
	}
	if errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.ECONNABORTED) ||
		errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, driver.ErrBadConn) {
		return true
	}
	return transportEOF(err) || connectionEnded(err)
}

// transportEOF reports whether err holds an io.EOF that a transport
// wrapped: inside a *url.Error or a *net.OpError.
func transportEOF(err error) bool {
	if !errors.Is(err, io.EOF) {
		return false
	}
	if ue, ok := errors.AsType[*url.Error](err); ok && errors.Is(ue.Err, io.EOF) {
		return true
	}
	oe, ok := errors.AsType[*net.OpError](err)
	return ok && errors.Is(oe.Err, io.EOF)
}

// connectionEnded reports whether an error in err's tree is one by which
// net/http or golang.org/x/net/http2 says that the server ended the
// connection under the request or refused its stream: HTTP/2's GOAWAY
// (http2.GoAwayError, "server sent GOAWAY and closed the connection", and
// the graceful-shutdown error of a request that found its connection
// going away), a stream reset with REFUSED_STREAM (http2.StreamError,
// also quoted by net/http's "cannot retry err [...]" when it could not
// resend a body), and HTTP/1's "server closed idle connection". The types
// are unexported in net/http and would need x/net here, so they are
// recognised by the start of each error's own message, never by text a
// caller could put in a wrapper (a URL, say).
func connectionEnded(err error) bool {
	for err != nil {
		msg := err.Error()
		switch {
		case strings.HasPrefix(msg, "http2: server sent GOAWAY"),
			strings.HasPrefix(msg, "http2: Transport received Server's graceful shutdown GOAWAY"),
			strings.HasPrefix(msg, "http: server closed idle connection"):
			return true
		case strings.HasPrefix(msg, "stream error: ") || strings.HasPrefix(msg, "http2: Transport: cannot retry err [stream error: "):
			if strings.Contains(msg, "; REFUSED_STREAM") {
				return true
			}
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				if connectionEnded(e) {
					return true
				}
			}
			return false
		default:
			return false
		}
	}
	return false
}

// Outcome is the class of an attempt's result, as the policy sees it.
type Outcome uint8

const (
	// OutcomeSuccess: the attempt succeeded.
	OutcomeSuccess Outcome = iota
	// OutcomeTransient: a failure that may pass on a retry.
	OutcomeTransient
	// OutcomeTimeout: the attempt ran out of its own timeout.
	OutcomeTimeout
	// OutcomePushback: the server asked for a wait ([After]).
	OutcomePushback
	// OutcomePermanent: a failure that will happen again.
	OutcomePermanent
	// OutcomeRefused: the server said not to retry ([After] with a
	// negative wait).
	OutcomeRefused
)

// String returns the outcome's short name, such as "transient": its
// [Outcome.Key].
func (o Outcome) String() string { return o.Key() }

// failure reports whether the outcome says the dependency is unwell:
// transient, timeout, pushback and refused do; ok and permanent do not.
// Breakers count these as failures.
func (o Outcome) failure() bool {
	return o == OutcomeTransient || o == OutcomeTimeout || o == OutcomePushback || o == OutcomeRefused
}

// Classify sorts err as the policy would: explicit marks ([Permanent],
// [After], [Transient]) win over the policy's Retryable classifier. timedOut
// says the attempt ran out of its own per-attempt timeout. For
// OutcomePushback it also returns the requested wait. Classify(nil, _) is
// OutcomeSuccess.
func (p *Policy) Classify(err error, timedOut bool) (Outcome, time.Duration) {
	if err == nil {
		return OutcomeSuccess, 0
	}
	m := findMarks(err)
	if m.permanent {
		return OutcomePermanent, 0
	}
	if pb := m.pushback; pb != nil {
		if pb.Wait < 0 {
			return OutcomeRefused, 0
		}
		return OutcomePushback, pb.Wait
	}
	if timedOut {
		return OutcomeTimeout, 0
	}
	if m.transient {
		return OutcomeTransient, 0
	}
	retryable := p.Retryable
	if retryable == nil {
		retryable = IsTransient
	}
	if retryable(err) {
		return OutcomeTransient, 0
	}
	return OutcomePermanent, 0
}

// transientDB reports whether err is a database error that may pass on a
// retry (see IsTransient), by its SQLSTATE or SQLite result code.
func transientDB(err error) bool {
	if e, ok := errors.AsType[interface {
		error
		SQLState() string
	}](err); ok {
		switch code := e.SQLState(); {
		case strings.HasPrefix(code, "08"):
			return true
		default:
			switch code {
			case "40001", "40P01", "53300", "55P03", "57P01", "57P02", "57P03":
				return true
			}
		}
		return false
	}
	if e, ok := errors.AsType[interface {
		error
		Code() int
	}](err); ok {
		switch e.Code() & 0xff { // the primary code; extended codes add bits above
		case 5, 6: // SQLITE_BUSY, SQLITE_LOCKED
			return true
		}
	}
	return false
}
