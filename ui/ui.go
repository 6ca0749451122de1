package ui

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/heed-go/heed/clock"
	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/queue/jobstore"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// MinToken is the shortest [Config.Token] accepted, in bytes.
const MinToken = 16

// Config configures a [Handler]. The zero value is a read-only dashboard
// mounted at "/".
type Config struct {
	// Token is the secret every state-changing request (and revealing a
	// job's arguments) must carry: as "Authorization: Bearer TOKEN", or
	// through the session cookie that signing in on the dashboard's
	// sign-in page sets. The cookie holds a random session ID that the
	// handler keeps in memory: signing out ends the session on the
	// server (a copied cookie stops working), a session lasts at most 12
	// hours however the browser keeps the cookie, and a new
	// Handler (a restart, a changed token) knows no earlier session. At
	// least [MinToken] bytes; required unless ReadOnly. Pages that only
	// read need no token: mount the handler behind your own authentication
	// when they should.
	Token string
	// Hosts are the host names (without a port) that requests may name in
	// their Host header, beside loopback names ("localhost", names under
	// ".localhost", loopback addresses); a request naming another is
	// answered 421 Misdirected Request. It stops DNS rebinding: a web page
	// whose name its owner points at 127.0.0.1 cannot read the dashboard.
	// IP addresses are accepted when one of Hosts is an unspecified
	// address ("0.0.0.0", "::"). Empty: any Host (a dashboard behind a
	// proxy that checks it).
	Hosts []string
	// ReadOnly removes every action: no requeue, delete, cancel, run now,
	// pause or resume, no sign-in and no reveal of arguments. The pages
	// show no buttons for them and the routes do not exist.
	ReadOnly bool
	// Path is where the handler is mounted, beginning and ending with "/"
	// (default "/"). Mount it there without stripping the prefix:
	// mux.Handle("/jobs/", h) with Path "/jobs/".
	Path string
	// TimeBudget is the workers' time budget (their retry.Policy's
	// TimeBudget), drawn on the timelines of jobs that have no budget of
	// their own. 0: drawn only for those that do.
	TimeBudget time.Duration
	// Refresh is the least interval between two counts of the overview,
	// and of the dead-letter's causes (default 2s). The counts of all
	// viewers are shared: however many
	// pages are open, the database counts at most once per interval, and
	// never more than a tenth of the time (a count that takes 300ms is
	// repeated at most every 3s).
	Refresh time.Duration
	// Clock is the time source (default: real time).
	Clock clock.Clock
	// Log receives errors the pages could not show in full (default
	// slog.Default()).
	Log *slog.Logger
}

// Handler is the dashboard: an http.Handler that serves the overview, the
// jobs, a job's decision timeline and the dead-letter grouped by cause,
// with their actions, from a [queue.Client] whose store implements
// [jobstore.Inspector] (sqlitestore and pgstore do). Make one with [New];
// it is safe for concurrent use. [Handler.Close] stops its background
// count.
//
// Every response carries a strict Content-Security-Policy (scripts,
// styles and images from the handler only, no inline script), and
// state-changing requests are refused unless they carry the token and
// pass net/http's cross-origin protection (Sec-Fetch-Site and Origin).
type Handler struct {
	client  *queue.Client
	inspect jobstore.Inspector
	cfg     Config
	pages   map[string]*template.Template
	mux     *http.ServeMux
	root    http.Handler
	count   *counter
	hosts   map[string]bool // Config.Hosts, lower-case; nil: any
	anyIP   bool            // an unspecified address is among Config.Hosts
	session sessions
	misses  misses     // wrong tokens, by address
	causes  causeCache // the dead-letter's counts by cause
}

// New returns a dashboard over c. It returns an error when c's store does
// not implement [jobstore.Inspector] or cfg is invalid (naming the field).
func New(c *queue.Client, cfg Config) (*Handler, error) {
	if c == nil {
		return nil, errors.New("ui: the client is nil")
	}
	in, ok := c.Store().(jobstore.Inspector)
	if !ok {
		return nil, fmt.Errorf("ui: the store %T does not implement jobstore.Inspector", c.Store())
	}
	if cfg.Path == "" {
		cfg.Path = "/"
	}
	if !strings.HasPrefix(cfg.Path, "/") || !strings.HasSuffix(cfg.Path, "/") || strings.ContainsAny(cfg.Path, "{}?#") {
		return nil, fmt.Errorf("ui: Config.Path %q must begin and end with / (and hold no {, }, ? or #)", cfg.Path)
	}
	if !cfg.ReadOnly && len(cfg.Token) < MinToken {
		return nil, fmt.Errorf("ui: Config.Token has %d bytes; a dashboard that can act needs one of at least %d (or set ReadOnly)", len(cfg.Token), MinToken)
	}
	if cfg.Refresh < 0 || cfg.TimeBudget < 0 {
		return nil, errors.New("ui: Config.Refresh and Config.TimeBudget must not be negative")
	}
	if cfg.Refresh == 0 {
		cfg.Refresh = 2 * time.Second
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	h := &Handler{client: c, inspect: in, cfg: cfg}
	if err := h.setHosts(cfg.Hosts); err != nil {
		return nil, err
	}
	if err := h.parseTemplates(); err != nil {
		return nil, err
	}
	h.count = newCounter(h)
	h.routes()
	h.count.warm()
	return h, nil
}

// Close stops the background count of the overview and waits for it to
// end. Requests served after Close count in the foreground.
func (h *Handler) Close() error {
	h.count.close()
	return nil
}

// contentSecurityPolicy allows only the handler's own scripts, styles,
// images and requests: no inline script or style, no framing, forms only
// to itself.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", contentSecurityPolicy)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("X-Frame-Options", "DENY")
	if !h.hostAllowed(r.Host) {
		http.Error(w, "421 misdirected request: this dashboard does not answer to that host name", http.StatusMisdirectedRequest)
		return
	}
	h.root.ServeHTTP(w, r)
}

func (h *Handler) routes() {
	p := h.cfg.Path
	m := http.NewServeMux()
	m.HandleFunc("GET "+p+"{$}", h.overview)
	m.HandleFunc("GET "+p+"jobs", h.jobs)
	m.HandleFunc("GET "+p+"jobs/{id}", h.job)
	m.HandleFunc("GET "+p+"dead", h.dead)
	m.HandleFunc("GET "+p+"dead/{group}", h.deadGroup)
	m.HandleFunc("GET "+p+"periodic", h.periodic)
	static, _ := fs.Sub(staticFS, "static")
	m.Handle("GET "+p+"static/", http.StripPrefix(p+"static/", staticHandler(static)))
	m.HandleFunc(p+"{rest...}", func(w http.ResponseWriter, r *http.Request) {
		h.fail(w, r, http.StatusNotFound, "There is no such page.")
	})
	if !h.cfg.ReadOnly {
		m.HandleFunc("GET "+p+"login", h.loginPage)
		m.HandleFunc("POST "+p+"login", h.login)
		m.HandleFunc("POST "+p+"logout", h.logout)
		m.HandleFunc("POST "+p+"jobs/{id}/{op}", h.needToken(h.jobAction))
		m.HandleFunc("POST "+p+"dead/confirm", h.needToken(h.deadConfirm))
		m.HandleFunc("POST "+p+"dead/apply", h.needToken(h.deadApply))
		m.HandleFunc("POST "+p+"queues/{op}", h.needToken(h.queueAction))
		m.HandleFunc("POST "+p+"bulk/confirm", h.needToken(h.bulkConfirm))
		m.HandleFunc("POST "+p+"bulk/apply", h.needToken(h.bulkApply))
	}
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.fail(w, r, http.StatusForbidden, "Refused: this request came from another site (cross-origin request forgery protection).")
	}))
	h.mux = m
	h.root = cop.Handler(m)
}

// staticHandler serves the embedded assets, cached for an hour.
func staticHandler(fsys fs.FS) http.Handler {
	files := http.FileServerFS(fsys)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/") || r.URL.Path == "" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Cache-Control", "public, max-age=3600")
		files.ServeHTTP(w, r)
	})
}

// authed reports whether r carries the token or a live session's cookie.
func (h *Handler) authed(r *http.Request) bool {
	if h.cfg.ReadOnly {
		return false
	}
	if a := r.Header.Get("Authorization"); a != "" {
		tok, ok := strings.CutPrefix(a, "Bearer ")
		if !ok {
			return false
		}
		ok, _ = h.checkToken(r, tok)
		return ok
	}
	c, err := r.Cookie(sessionCookie)
	return err == nil && h.session.valid(c.Value, h.now())
}

// equal compares secrets in constant time (for their length too).
func equal(a, b string) bool {
	ha, hb := sha256.Sum256([]byte(a)), sha256.Sum256([]byte(b))
	return subtle.ConstantTimeCompare(ha[:], hb[:]) == 1
}

// needToken refuses requests without the token.
func (h *Handler) needToken(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !h.authed(r) {
			h.fail(w, r, http.StatusForbidden, "Refused: this action needs the dashboard's token. Sign in first.")
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxForm)
		next(w, r)
	}
}

// maxForm caps the body of a form (a selection of 10,000 IDs fits).
const maxForm = 1 << 20

// u returns the URL of the dashboard's page rel.
func (h *Handler) u(rel string) string { return h.cfg.Path + rel }

func (h *Handler) now() time.Time { return clock.Now(h.cfg.Clock).UTC() }

// counter is the overview's shared count: one count at a time, in the
// background, reused by every request while fresh.
type counter struct {
	h *Handler

	mu       sync.Mutex
	cur      *overview
	err      error
	busy     chan struct{} // closed when the running count ends; nil when idle
	gen      int           // incremented by invalidate
	closed   bool
	ctx      context.Context
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	seriesMu sync.Mutex        // guards series and covered
	series   map[seriesKey]int // throughput per queue, minute and action
	covered  time.Time         // throughput read up to here
}

func newCounter(h *Handler) *counter {
	ctx, cancel := context.WithCancel(context.Background())
	return &counter{h: h, ctx: ctx, cancel: cancel, series: map[seriesKey]int{}}
}

func (c *counter) close() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.cancel()
	c.wg.Wait()
}

// countTimeout bounds one count.
const countTimeout = time.Minute

// get returns the latest overview: the cached one while fresh; a stale one
// (starting a new count in the background); or, the first time and after
// an action, waits for a new count.
func (c *counter) get(ctx context.Context) (*overview, error) {
	for {
		now := c.h.now()
		c.mu.Lock()
		if c.cur != nil && now.Sub(c.cur.At) < max(c.h.cfg.Refresh, 10*c.cur.Took) {
			ov := c.cur
			c.mu.Unlock()
			return ov, nil
		}
		if c.closed {
			c.mu.Unlock()
			return c.countNow(ctx)
		}
		c.startLocked()
		busy, cur := c.busy, c.cur
		c.mu.Unlock()
		if cur != nil {
			return cur, nil
		}
		select {
		case <-busy:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		c.mu.Lock()
		cur, err := c.cur, c.err
		c.mu.Unlock()
		switch {
		case cur != nil:
			return cur, nil
		case err != nil:
			return nil, err
		}
		// The count ended before an action changed the jobs: count again.
	}
}

// startLocked starts a count in the background unless one runs; c.mu is
// held.
func (c *counter) startLocked() {
	if c.busy != nil || c.closed {
		return
	}
	done, gen := make(chan struct{}), c.gen
	c.busy = done
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		cctx, cancel := context.WithTimeout(c.ctx, countTimeout)
		ov, err := c.countNow(cctx)
		cancel()
		c.mu.Lock()
		if err == nil && gen == c.gen {
			c.cur = ov
		}
		c.err = err
		c.busy = nil
		c.mu.Unlock()
		close(done)
	}()
}

// warm starts the first count in the background, so that the first
// viewer finds it done (or under way).
func (c *counter) warm() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.startLocked()
}

// invalidate drops the cached overview after an action: the next request
// waits for a count that started after it.
func (c *counter) invalidate() {
	c.h.causes.drop()
	c.mu.Lock()
	c.cur = nil
	c.gen++
	c.mu.Unlock()
}
