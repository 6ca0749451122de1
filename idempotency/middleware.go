package idempotency

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/heed-go/heed/idempotency/keystore"
	"github.com/heed-go/heed/internal/redact"
)

// Defaults for the zero fields of a [Middleware].
const (
	// defaultTTL is how long a key is kept after its request completes:
	// 24 h. A request with the key after that runs the handler again.
	defaultTTL = 24 * time.Hour
	// defaultLease is how long a claim holds a key without being renewed:
	// 30 s. The process running the handler renews it every 15 s; a claim
	// left behind by a handler that panicked or a process that died is
	// taken over by the first request with the key after the lease; until
	// then such requests get 409.
	defaultLease = 30 * time.Second
	// defaultRetryAfter is the Retry-After sent with a 409 (the key's
	// first request is still running): 1 s.
	defaultRetryAfter = time.Second
	// defaultMaxRequestBody is how much of a request body is read and
	// hashed into the fingerprint: 1 MiB.
	defaultMaxRequestBody = 1 << 20
	// defaultMaxResponseBody is the largest response body stored for
	// replay: 1 MiB. A larger response is sent to the client but not
	// stored, and the key is released.
	defaultMaxResponseBody = 1 << 20
)

// StoreHeadersOff as Middleware.StoreHeaders stores and replays no header
// (heed's convention: the zero value is the default, an explicit Off value
// turns a setting off; the empty name is no header).
var StoreHeadersOff = []string{""}

// DefaultStoreHeaders lists the response headers stored and replayed when
// Middleware.StoreHeaders is empty. Set-Cookie and other per-response
// secrets are deliberately absent.
var DefaultStoreHeaders = []string{
	"Cache-Control", "Content-Disposition", "Content-Encoding", "Content-Language",
	"Content-Location", "Content-Type", "Etag", "Last-Modified", "Link", "Location", "Vary",
}

// Middleware is the server side of the Idempotency-Key header: wrapped in
// it, a handler runs at most once per key. Wrap a handler with
// [Middleware.Wrap]; most callers set Store, Principal and, for routes
// that must not run without a key, Required.
//
// For a request whose method is in Methods (default POST and PATCH; other
// methods pass straight through):
//
//  1. The key is read from the Idempotency-Key header ([ParseKey]: a
//     quoted sf-string or a bare token, 1 to 255 bytes). Without one, the
//     request passes through, or, when Required, is answered 400. A
//     malformed key, or more than one header, is always answered 400. The
//     400 bodies are application/problem+json saying why.
//  2. The scope is the principal, the method and the route: the key is
//     looked up within it, so two principals (or two routes) that send the
//     same key never see each other's responses.
//  3. The fingerprint is a SHA-256 over the method, the request target
//     (path and query), the body (its first MaxRequestBody bytes, and its
//     declared length) and the headers named in FingerprintHeaders. The
//     handler still reads the whole body.
//  4. The key is claimed in the Store with one atomic operation. The
//     winner runs the handler; its response streams to the client as
//     usual and is also recorded: the final status, the headers in
//     StoreHeaders, and the body if it is at most MaxResponseBody bytes.
//     When the handler returns, the response is stored, whatever its
//     status (a 500 is replayed too, as the draft says), and the key
//     expires TTL later.
//  5. Another request with the key gets: 422 if its fingerprint differs
//     (the key was reused for another payload); otherwise 409 with
//     Retry-After while the first is running; otherwise the stored
//     response, byte for byte, with "Idempotent-Replayed: true". The
//     handler does not run.
//
// What is not stored: a response whose body exceeds MaxResponseBody, a
// status outside 200-599 (a 101 upgrade) or a hijacked connection. The
// client gets the response, the key is released, and a retry runs the
// handler again. A handler that panics (http.ErrAbortHandler included)
// leaves its claim in place: retries get 409 until the lease (default 30
// s) ends, then the next one runs the handler. The same happens when
// the process dies. Set Lease above the longest time your handler takes:
// a request that outlives its lease can be run a second time.
//
// When the store fails, the request is answered 503 with Retry-After and
// the handler does not run: without the store nothing can be promised.
//
// Without a Principal function every request is in one anonymous scope:
// any client that sends a key another client used (on the same method and
// route) gets that client's stored response, or a 409 or 422. That is
// right only when there is one client identity, or when keys are random
// and secret (UUIDs) and the responses hold nothing another client may not
// see. With authenticated users, set Principal.
//
// Keys are never logged whole: logs show the first 8 hex digits of the
// SHA-256 of the header value, the hash retryhttp logs for the same request.
//
// The zero Middleware is not usable: Store is required. A Middleware is a
// plain value; the handler Wrap returns is safe for concurrent use. Call
// [Reaper] or [Reap] to delete expired keys.
type Middleware struct {
	// Store keeps the keys and responses (required): a sqlitestore.Store,
	// a pgstore.Store, or [NewMemoryStore]'s for tests and one process.
	Store keystore.Store

	// Methods are the methods the middleware applies to (default POST and
	// PATCH). Requests with other methods pass through untouched.
	Methods []string

	// Required makes the key mandatory: a request without one is answered
	// 400 (problem+json) and the handler does not run. Default: a request
	// without a key passes through and is not deduplicated.
	Required bool

	// Principal returns who is asking (the authenticated user, API key ID
	// or tenant), to scope keys per principal. Nil, or an empty result,
	// puts the request in the anonymous scope: see the type's doc.
	Principal func(r *http.Request) string

	// Route returns the route part of the scope (default: r.Pattern, the
	// http.ServeMux pattern that matched, such as "POST /payments"; if
	// empty, the escaped URL path, with segments that look like
	// credentials replaced by a hash of them). Scopes are stored in
	// clear: a Route of your own must not return secrets.
	Route func(r *http.Request) string

	// FingerprintHeaders names request headers that belong in the
	// fingerprint, for example "Content-Type" or a "Stripe-Account"-like
	// header that changes the request's meaning (default: none).
	FingerprintHeaders []string

	// MaxRequestBody is how much of the request body is hashed into the
	// fingerprint (default 1 MiB). Of longer bodies,
	// only the first MaxRequestBody bytes and the declared Content-Length
	// are compared. That many bytes are held in memory per request.
	MaxRequestBody int64

	// MaxResponseBody is the largest response body stored (default
	// 1 MiB, at most 4 MiB: [keystore.MaxStoredBody]).
	MaxResponseBody int

	// StoreHeaders are the response headers stored and replayed (empty:
	// [DefaultStoreHeaders]). [StoreHeadersOff], or any list holding the
	// empty name, stores none.
	StoreHeaders []string

	// TTL is how long a key is kept after its request completed (default
	// 24 h). Publish it to your clients, as the draft asks.
	TTL time.Duration

	// Lease is how long a claim holds a key without being renewed
	// (default 30 s): how long retries of a request whose
	// process died get 409 before the key can be used again. The running
	// handler's process renews it every Lease/2.
	Lease time.Duration

	// RetryAfter is the Retry-After of a 409 (default
	// 1 s; rounded up to whole seconds).
	RetryAfter time.Duration

	// Logger, when set, receives a record for every problem worth an
	// operator's eye (store errors, panics, lost claims, oversized
	// responses) and, at Debug, for every replay and conflict. Keys appear
	// only as key_hash.
	Logger *slog.Logger

	// Now is the clock (default time.Now), for tests.
	Now func() time.Time
}

// Validate returns an error naming the first bad field, or nil. The error
// matches [ErrInvalid].
func (m Middleware) Validate() error {
	bad := func(field, reason string) error {
		return &configError{field, reason}
	}
	switch {
	case m.Store == nil:
		return bad("Store", "required")
	case m.MaxRequestBody < 0:
		return bad("MaxRequestBody", "negative")
	case m.MaxResponseBody < 0 || m.MaxResponseBody > keystore.MaxStoredBody:
		return bad("MaxResponseBody", fmt.Sprintf("want 0 to %d", keystore.MaxStoredBody))
	case m.TTL < 0:
		return bad("TTL", "negative")
	case m.Lease < 0:
		return bad("Lease", "negative")
	case m.RetryAfter < 0:
		return bad("RetryAfter", "negative")
	}
	ttl, lease := m.TTL, m.Lease
	if ttl == 0 {
		ttl = defaultTTL
	}
	if lease == 0 {
		lease = defaultLease
	}
	if ttl < lease {
		return bad("TTL", "shorter than Lease")
	}
	for _, meth := range m.Methods {
		if meth == "" {
			return bad("Methods", "empty method")
		}
	}
	return nil
}

// Wrap returns a handler that applies m to every request, then calls next
// when it must. It panics if m is not valid ([Middleware.Validate]): that
// is a programming error found at start-up.
func (m Middleware) Wrap(next http.Handler) http.Handler {
	if err := m.Validate(); err != nil {
		panic(err)
	}
	h := &handler{m: m, next: next, methods: map[string]bool{}}
	methods := m.Methods
	if len(methods) == 0 {
		methods = []string{http.MethodPost, http.MethodPatch}
	}
	for _, meth := range methods {
		h.methods[meth] = true
	}
	stored := m.StoreHeaders
	switch {
	case len(stored) == 0:
		stored = DefaultStoreHeaders
	case slices.Contains(stored, ""):
		stored = nil // off
	}
	for _, name := range stored {
		h.stored = append(h.stored, http.CanonicalHeaderKey(name))
	}
	for _, name := range m.FingerprintHeaders {
		h.fpHeaders = append(h.fpHeaders, http.CanonicalHeaderKey(name))
	}
	slices.Sort(h.fpHeaders)
	h.fpHeaders = slices.Compact(h.fpHeaders)
	h.ttl = or(m.TTL, defaultTTL)
	h.lease = or(m.Lease, defaultLease)
	h.retryAfter = strconv.FormatInt(int64((or(m.RetryAfter, defaultRetryAfter)+time.Second-1)/time.Second), 10)
	h.maxReq = m.MaxRequestBody
	if h.maxReq == 0 {
		h.maxReq = defaultMaxRequestBody
	}
	h.maxResp = m.MaxResponseBody
	if h.maxResp == 0 {
		h.maxResp = defaultMaxResponseBody
	}
	h.now = m.Now
	if h.now == nil {
		h.now = time.Now
	}
	return h
}

func or(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

type handler struct {
	m          Middleware
	next       http.Handler
	methods    map[string]bool
	stored     []string // canonical names
	fpHeaders  []string // canonical, sorted
	ttl, lease time.Duration
	retryAfter string
	maxReq     int64
	maxResp    int
	now        func() time.Time
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !h.methods[r.Method] {
		h.next.ServeHTTP(w, r)
		return
	}
	vals := r.Header[keyHeader]
	if len(vals) == 0 {
		if h.m.Required {
			problem(w, http.StatusBadRequest, "idempotency_key_missing",
				"this operation requires an Idempotency-Key header; send a new random key (a UUID) with each operation and the same key when you retry it", "")
			return
		}
		h.next.ServeHTTP(w, r)
		return
	}
	raw := vals[0]
	if len(vals) > 1 {
		problem(w, http.StatusBadRequest, "idempotency_key_invalid", "send exactly one Idempotency-Key header", "")
		return
	}
	key, err := ParseKey(raw)
	if err != nil {
		var ke *keyError
		errors.As(err, &ke)
		problem(w, http.StatusBadRequest, "idempotency_key_invalid",
			"the Idempotency-Key header is not valid: "+ke.Reason+`; send a quoted string such as "8e03978e-40d5-43e8-bc93-6894a57f9324", at most 255 bytes`, "")
		return
	}
	ctx := r.Context()
	scope := h.scope(r)
	fp, err := h.fingerprint(r)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			problem(w, http.StatusRequestEntityTooLarge, "request_too_large", "the request body is too large", "")
			return
		}
		if ctx.Err() == nil {
			problem(w, http.StatusBadRequest, "request_body_unreadable", "the request body could not be read", "")
		}
		return
	}
	now := h.now()
	token := rand.Text()
	rec, won, err := h.m.Store.KeyClaim(ctx, keystore.Claim{
		Scope: scope, Key: key, Fingerprint: fp, Token: token,
		Now: now, LeaseUntil: now.Add(h.lease), ExpiresAt: now.Add(h.ttl),
	})
	if err == nil && !won && rec == nil {
		err = errors.New("store returned no record for a key it did not grant")
	}
	if err != nil {
		if ctx.Err() != nil {
			return // the client is gone
		}
		h.log(ctx, slog.LevelError, "idempotency: store failed; request refused", raw, r, slog.String("error", redact.Error(err)))
		problem(w, http.StatusServiceUnavailable, "idempotency_store_unavailable",
			"the request could not be recorded, so it was not processed; retry with the same key", h.retryAfter)
		return
	}
	if !won {
		switch {
		case rec.Fingerprint != fp:
			h.log(ctx, slog.LevelDebug, "idempotency: key reused with another request", raw, r)
			problem(w, http.StatusUnprocessableEntity, "idempotency_key_mismatch",
				"this Idempotency-Key was already used with a different request (method, path, body or headers); use a new key for a new operation", "")
		case rec.State != keystore.StateCompleted || rec.Response == nil:
			h.log(ctx, slog.LevelDebug, "idempotency: key in use", raw, r)
			problem(w, http.StatusConflict, "idempotency_key_in_use",
				"a request with this Idempotency-Key is still being processed; retry after a while with the same key", h.retryAfter)
		default:
			h.log(ctx, slog.LevelDebug, "idempotency: response replayed", raw, r, slog.Int("status", rec.Response.Status))
			replay(w, rec.Response)
		}
		return
	}

	rw := &recorder{w: w, max: h.maxResp, stored: h.stored}
	rn := &renewer{h: h, scope: scope, key: key, token: token, raw: raw, r: r}
	rn.start()
	returned := false
	defer func() {
		rn.stop()
		if !returned {
			// A panic: leave the claim to its lease. The handler may have
			// done its side effect before panicking; releasing the key now
			// would invite an immediate second run.
			h.log(ctx, slog.LevelWarn, "idempotency: handler panicked; key held until its lease ends", raw, r,
				slog.Time("lease_until", now.Add(h.lease)))
		}
	}()
	h.next.ServeHTTP(rw, r)
	returned = true
	rn.stop()

	// The client may be gone; the outcome must be recorded all the same.
	ctx = context.WithoutCancel(ctx)
	status := rw.status
	if status == 0 {
		status = http.StatusOK
		rw.snapshot()
	}
	if rw.over || rw.unstorable || status < 200 || status > 599 {
		reason := "response body larger than MaxResponseBody"
		if !rw.over {
			reason = "response cannot be replayed (status " + strconv.Itoa(status) + " or hijacked)"
		}
		h.log(ctx, slog.LevelWarn, "idempotency: response not stored; key released", raw, r, slog.String("reason", reason))
		if err := h.m.Store.KeyRelease(ctx, keystore.Release{Scope: scope, Key: key, Token: token}); err != nil {
			h.log(ctx, slog.LevelError, "idempotency: release failed; key held until its lease ends", raw, r, slog.String("error", redact.Error(err)))
		}
		return
	}
	err = h.m.Store.KeyComplete(ctx, keystore.Completion{
		Scope: scope, Key: key, Token: token,
		Response:  keystore.Response{Status: status, Header: rw.header, Body: rw.body},
		ExpiresAt: h.now().Add(h.ttl),
	})
	switch {
	case errors.Is(err, keystore.ErrLeaseLost):
		h.log(ctx, slog.LevelWarn, "idempotency: lease ended before the handler returned; response not stored (raise Lease)", raw, r)
	case err != nil:
		h.log(ctx, slog.LevelError, "idempotency: storing the response failed; key held until its lease ends", raw, r, slog.String("error", redact.Error(err)))
	}
}

// renewer extends a claim's lease every half lease while its handler
// runs, so that a slow handler keeps its key and only a claim whose
// process died (or whose handler panicked) lapses.
type renewer struct {
	h                      *handler
	scope, key, token, raw string
	r                      *http.Request

	mu      sync.Mutex
	stopped bool
	timer   *time.Timer
	wg      sync.WaitGroup
}

func (rn *renewer) start() {
	rn.mu.Lock()
	rn.timer = time.AfterFunc(rn.h.lease/2, rn.fire)
	rn.mu.Unlock()
}

func (rn *renewer) fire() {
	rn.mu.Lock()
	if rn.stopped {
		rn.mu.Unlock()
		return
	}
	rn.wg.Add(1)
	rn.mu.Unlock()
	defer rn.wg.Done()
	ctx := context.WithoutCancel(rn.r.Context())
	err := rn.h.m.Store.KeyExtend(ctx, keystore.Extension{Scope: rn.scope, Key: rn.key, Token: rn.token, LeaseUntil: rn.h.now().Add(rn.h.lease)})
	if errors.Is(err, keystore.ErrLeaseLost) {
		rn.h.log(ctx, slog.LevelWarn, "idempotency: claim lost while the handler runs; the request may run twice", rn.raw, rn.r)
		return // nothing left to renew
	}
	if err != nil {
		rn.h.log(ctx, slog.LevelError, "idempotency: extending the lease failed", rn.raw, rn.r, slog.String("error", redact.Error(err)))
	}
	rn.mu.Lock()
	if !rn.stopped {
		rn.timer.Reset(rn.h.lease / 2)
	}
	rn.mu.Unlock()
}

// stop stops renewing and waits for a renewal under way. It is safe to
// call more than once.
func (rn *renewer) stop() {
	rn.mu.Lock()
	rn.stopped = true
	if rn.timer != nil {
		rn.timer.Stop()
	}
	rn.mu.Unlock()
	rn.wg.Wait()
}

func (h *handler) log(ctx context.Context, level slog.Level, msg, rawKey string, r *http.Request, attrs ...slog.Attr) {
	l := h.m.Logger
	if l == nil || !l.Enabled(ctx, level) {
		return
	}
	// key_hash is the hash retryhttp logs for the same key.
	attrs = append(attrs, slog.String("key_hash", redact.KeyHash(rawKey)), slog.String("method", r.Method), slog.String("route", h.route(r)))
	l.LogAttrs(ctx, level, msg, attrs...)
}

func (h *handler) route(r *http.Request) string {
	if h.m.Route != nil {
		return h.m.Route(r)
	}
	if r.Pattern != "" {
		return r.Pattern
	}
	return pathRoute(r.URL.EscapedPath())
}

// pathRoute is the route of a request that matched no pattern: its escaped
// path, with every segment that looks like a credential (a webhook token,
// say: see retryhttp.RedactURL for the rule) replaced by "sha256:" and the
// first 32 hex digits of its SHA-256, so that the scope, which stores keep
// in clear, holds no secret and still tells such paths apart.
func pathRoute(p string) string {
	if len(p) < redact.MinCredential {
		return p
	}
	segs := strings.Split(p, "/")
	changed := false
	for i, seg := range segs {
		un, err := url.PathUnescape(seg)
		if err != nil {
			un = seg
		}
		if redact.Credential(un) {
			sum := sha256.Sum256([]byte(un))
			segs[i] = "sha256:" + hex.EncodeToString(sum[:16])
			changed = true
		}
	}
	if !changed {
		return p
	}
	return strings.Join(segs, "/")
}

// scope is the quoted principal, the method and the route; hashed when it
// would be too long or not storable text.
func (h *handler) scope(r *http.Request) string {
	principal := ""
	if h.m.Principal != nil {
		principal = h.m.Principal(r)
	}
	s := strconv.Quote(principal) + " " + r.Method + " " + h.route(r)
	if !keystore.ValidScope(s) {
		sum := sha256.Sum256([]byte(s))
		s = "sha256:" + hex.EncodeToString(sum[:])
	}
	return s
}

// fingerprint hashes the request and replaces r.Body with one that gives
// the handler the whole body again.
func (h *handler) fingerprint(r *http.Request) (string, error) {
	d := sha256.New()
	field(d, r.Method)
	field(d, r.URL.EscapedPath())
	field(d, r.URL.RawQuery)
	for _, name := range h.fpHeaders {
		field(d, name)
		vs := r.Header[name]
		number(d, uint64(len(vs)))
		for _, v := range vs {
			field(d, v)
		}
	}
	if r.Body != nil && r.Body != http.NoBody {
		var b []byte
		if r.ContentLength >= 0 && r.ContentLength <= h.maxReq {
			b = make([]byte, r.ContentLength)
			if _, err := io.ReadFull(r.Body, b); err != nil {
				return "", err
			}
		} else {
			var err error
			if b, err = io.ReadAll(io.LimitReader(r.Body, h.maxReq)); err != nil {
				return "", err
			}
		}
		if int64(len(b)) == h.maxReq { // maybe more: compare the declared length too
			number(d, uint64(r.ContentLength))
		}
		number(d, uint64(len(b)))
		d.Write(b)
		r.Body = &replayBody{Reader: io.MultiReader(bytes.NewReader(b), r.Body), Closer: r.Body}
	} else {
		field(d, "")
	}
	return "sha256:" + hex.EncodeToString(d.Sum(nil)), nil
}

// field writes a length-prefixed string, so that fields cannot run into
// each other.
func field(d hash.Hash, s string) {
	number(d, uint64(len(s)))
	io.WriteString(d, s)
}

func number(d hash.Hash, n uint64) {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], n)
	d.Write(b[:])
}

type replayBody struct {
	io.Reader
	io.Closer
}

// recorder passes the response through and records what is stored.
type recorder struct {
	w          http.ResponseWriter
	stored     []string
	max        int
	status     int
	header     http.Header
	body       []byte
	over       bool // body larger than max
	unstorable bool // hijacked or switched protocols
}

func (rw *recorder) Header() http.Header { return rw.w.Header() }

func (rw *recorder) WriteHeader(code int) {
	if rw.status != 0 || (code >= 100 && code < 200 && code != http.StatusSwitchingProtocols) {
		rw.w.WriteHeader(code) // informational, or superfluous (net/http logs it)
		return
	}
	rw.status = code
	rw.snapshot()
	rw.w.WriteHeader(code)
}

func (rw *recorder) snapshot() {
	hdr := rw.w.Header()
	for _, name := range rw.stored {
		if vs, ok := hdr[name]; ok {
			if rw.header == nil {
				rw.header = http.Header{}
			}
			rw.header[name] = slices.Clone(vs)
		}
	}
}

func (rw *recorder) Write(p []byte) (int, error) {
	if rw.status == 0 {
		// What net/http would do, done here so that the sniffed type is
		// stored and replayed.
		if _, ok := rw.w.Header()["Content-Type"]; !ok && len(p) > 0 && rw.w.Header().Get("Transfer-Encoding") == "" {
			rw.w.Header().Set("Content-Type", http.DetectContentType(p))
		}
		rw.WriteHeader(http.StatusOK)
	}
	if !rw.over {
		if len(rw.body)+len(p) > rw.max {
			rw.over, rw.body = true, nil
		} else {
			rw.body = append(rw.body, p...)
		}
	}
	return rw.w.Write(p)
}

// Flush flushes the underlying writer, if it can.
func (rw *recorder) Flush() {
	if f, ok := rw.w.(http.Flusher); ok {
		if rw.status == 0 {
			rw.WriteHeader(http.StatusOK)
		}
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (rw *recorder) Unwrap() http.ResponseWriter { return rw.w }

// Hijack hands the connection to the handler; what it writes there cannot
// be recorded, so the key is released when the handler returns.
func (rw *recorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	rw.unstorable = true
	return http.NewResponseController(rw.w).Hijack()
}

// replay writes a stored response.
func replay(w http.ResponseWriter, resp *keystore.Response) {
	hdr := w.Header()
	for k, v := range resp.Header {
		hdr[k] = slices.Clone(v)
	}
	hdr.Set(ReplayedHeader, "true")
	if bodyAllowed(resp.Status) {
		hdr.Set("Content-Length", strconv.Itoa(len(resp.Body)))
	}
	w.WriteHeader(resp.Status)
	if len(resp.Body) > 0 && bodyAllowed(resp.Status) {
		w.Write(resp.Body)
	}
}

func bodyAllowed(status int) bool {
	return status != http.StatusNoContent && status != http.StatusNotModified && status >= 200
}

// problemBody is the application/problem+json body (RFC 9457) of the
// middleware's own answers (400, 409, 413, 422, 503). Code says which case
// it is, for programs: idempotency_key_missing, idempotency_key_invalid,
// idempotency_key_in_use, idempotency_key_mismatch,
// idempotency_store_unavailable, request_body_unreadable,
// request_too_large.
type problemBody struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail"`
	Code   string `json:"code"`
}

func problem(w http.ResponseWriter, status int, code, detail, retryAfter string) {
	b, _ := json.Marshal(problemBody{Type: "about:blank", Title: http.StatusText(status), Status: status, Detail: detail, Code: code})
	h := w.Header()
	h.Set("Content-Type", "application/problem+json")
	h.Set("Content-Length", strconv.Itoa(len(b)+1))
	h.Set("Cache-Control", "no-store")
	if retryAfter != "" {
		h.Set("Retry-After", retryAfter)
	}
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// ErrInvalid is matched by every error about bad input: a [Middleware]
// that is not valid ([Middleware.Validate], and Wrap's panic) and a
// store's refusal of what it was given (the same value as
// keystore.ErrInvalid).
var ErrInvalid = keystore.ErrInvalid

// configError names a bad field of a Middleware. It matches [ErrInvalid].
type configError struct{ field, reason string }

func (e *configError) Error() string {
	return "idempotency: Middleware." + e.field + ": " + e.reason
}

func (e *configError) Is(target error) bool { return target == ErrInvalid }
