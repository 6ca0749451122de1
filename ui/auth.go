package ui

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// sessionCookie is the name of the cookie signing in sets.
const sessionCookie = "heed_ui_session"

// sessionLifetime is how long a session lasts after signing in, on the
// server: the cookie's Max-Age says the same to the browser, but a copy of
// the cookie kept longer is refused.
const sessionLifetime = 12 * time.Hour

// maxSessions bounds the sessions kept: signing in beyond it ends the
// session closest to its end.
const maxSessions = 1000

// sessions are the signed-in sessions, by their random ID, with the time
// each ends. The zero value is empty and ready; it is safe for concurrent
// use.
type sessions struct {
	mu  sync.Mutex
	end map[string]time.Time
}

// start begins a session at now and returns its ID: 32 random bytes,
// base64url.
func (s *sessions) start(now time.Time) string {
	b := make([]byte, 32)
	rand.Read(b) // never fails (crypto/rand)
	id := base64.RawURLEncoding.EncodeToString(b)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.end == nil {
		s.end = map[string]time.Time{}
	}
	if len(s.end) >= maxSessions {
		first, firstEnd := "", time.Time{}
		for k, e := range s.end {
			if !e.After(now) {
				delete(s.end, k)
			} else if first == "" || e.Before(firstEnd) {
				first, firstEnd = k, e
			}
		}
		if len(s.end) >= maxSessions {
			delete(s.end, first)
		}
	}
	s.end[id] = now.Add(sessionLifetime)
	return id
}

// valid reports whether id names a session that has not ended at now.
func (s *sessions) valid(id string, now time.Time) bool {
	if id == "" {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	end, ok := s.end[id]
	if ok && !now.Before(end) {
		delete(s.end, id)
		return false
	}
	return ok
}

// stop ends the session id.
func (s *sessions) stop(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.end, id)
}

// Guessing the token is throttled per client address: after maxMisses
// wrong tokens within missWindow, every token from that address (the
// right one too) is refused until the window that began with the first
// miss has passed. A user-chosen token of MinToken bytes cannot then be
// searched at network speed, and an address that guesses does not lock
// out the others.
const (
	maxMisses   = 10
	missWindow  = time.Minute
	maxMissAddr = 10000 // addresses tracked at most
)

// misses counts wrong tokens by client address. The zero value is empty
// and ready; it is safe for concurrent use.
type misses struct {
	mu   sync.Mutex
	seen map[string]missCount
}

type missCount struct {
	n     int
	since time.Time // the first miss of the window
}

// addr is the address a request's misses count against: its remote
// host, without the port.
func addr(r *http.Request) string {
	if h, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return h
	}
	return r.RemoteAddr
}

// blocked reports whether a is refused at now, and for how long more.
func (m *misses) blocked(a string, now time.Time) (time.Duration, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.seen[a]
	if !ok {
		return 0, false
	}
	if left := c.since.Add(missWindow).Sub(now); left > 0 {
		return left, c.n >= maxMisses
	}
	delete(m.seen, a)
	return 0, false
}

// miss counts a wrong token from a at now.
func (m *misses) miss(a string, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.seen == nil {
		m.seen = map[string]missCount{}
	}
	c, ok := m.seen[a]
	if !ok || !now.Before(c.since.Add(missWindow)) {
		if len(m.seen) >= maxMissAddr {
			for k, v := range m.seen { // drop the windows that ended
				if !now.Before(v.since.Add(missWindow)) {
					delete(m.seen, k)
				}
			}
			if len(m.seen) >= maxMissAddr {
				return // a flood of addresses: each is still bounded by its own
			}
		}
		c = missCount{since: now}
	}
	c.n++
	m.seen[a] = c
}

// checkToken reports whether tok is the dashboard's token, counting a
// wrong one against r's address, and false for any token while that
// address is throttled (left: how long more).
func (h *Handler) checkToken(r *http.Request, tok string) (ok bool, left time.Duration) {
	a, now := addr(r), h.now()
	if left, blocked := h.misses.blocked(a, now); blocked {
		return false, left
	}
	if equal(tok, h.cfg.Token) {
		return true, 0
	}
	h.misses.miss(a, now)
	return false, 0
}

// setHosts validates and keeps Config.Hosts.
func (h *Handler) setHosts(hosts []string) error {
	if len(hosts) == 0 {
		return nil
	}
	h.hosts = map[string]bool{}
	for _, n := range hosts {
		if n == "" || strings.ContainsAny(n, ":/ ") && net.ParseIP(n) == nil {
			return fmt.Errorf("ui: Config.Hosts holds %q, not a host name without a port", n)
		}
		n = strings.ToLower(strings.Trim(n, "[]"))
		if ip := net.ParseIP(n); ip != nil && ip.IsUnspecified() {
			h.anyIP = true
		}
		h.hosts[n] = true
	}
	return nil
}

// hostAllowed reports whether a request naming host (the Host header,
// maybe with a port) is for this dashboard: see [Config.Hosts].
func (h *Handler) hostAllowed(host string) bool {
	if h.hosts == nil {
		return true
	}
	name := host
	if n, _, err := net.SplitHostPort(host); err == nil {
		name = n
	}
	name = strings.ToLower(strings.TrimSuffix(strings.Trim(name, "[]"), "."))
	if name == "localhost" || strings.HasSuffix(name, ".localhost") || h.hosts[name] {
		return true
	}
	if ip := net.ParseIP(name); ip != nil {
		return ip.IsLoopback() || h.anyIP
	}
	return false
}

// safeNext returns next when it is a page of this dashboard, else the
// overview: sign-in never redirects off the dashboard. next, as the form
// gave it (decoded once, never again), must be a path under the
// dashboard's, starting with a single "/", with no control character (a
// browser drops a tab or a newline and reads "/\t/evil.example/" as
// "//evil.example/"), no backslash (read as "/"), no scheme and no host.
func (h *Handler) safeNext(next string) string {
	if !strings.HasPrefix(next, h.cfg.Path) || len(next) > 1 && (next[1] == '/' || next[1] == '\\') {
		return h.cfg.Path
	}
	for i := 0; i < len(next); i++ {
		if c := next[i]; c < 0x20 || c == 0x7f || c == '\\' {
			return h.cfg.Path
		}
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.Opaque != "" || !strings.HasPrefix(u.Path, h.cfg.Path) {
		return h.cfg.Path
	}
	return next
}

// login is POST login: the token for a session.
func (h *Handler) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 4<<10)
	if err := r.ParseForm(); err != nil {
		h.fail(w, r, http.StatusBadRequest, "Bad request: the form could not be read.")
		return
	}
	next := h.safeNext(r.PostForm.Get("next"))
	if ok, left := h.checkToken(r, r.PostForm.Get("token")); !ok {
		status, msg := http.StatusForbidden, "That is not the dashboard's token."
		if left > 0 {
			status, msg = http.StatusTooManyRequests, "Too many wrong tokens from this address: try again in a minute."
			w.Header().Set("Retry-After", strconv.Itoa(int((left+time.Second-1)/time.Second)))
		}
		h.renderStatus(w, r, status, "login", "Sign in", loginView{Next: next, Error: msg}, "")
		return
	}
	if c, err := r.Cookie(sessionCookie); err == nil {
		h.session.stop(c.Value) // a new session, never one chosen by someone else
	}
	id := h.session.start(h.now())
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: id, Path: h.cfg.Path, HttpOnly: true,
		Secure: overTLS(r), SameSite: http.SameSiteStrictMode, MaxAge: int(sessionLifetime / time.Second)})
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// overTLS reports whether the browser reached the dashboard over TLS:
// ended here, or at a proxy that says so (X-Forwarded-Proto: https). The
// header is trusted for this only: a Secure cookie is a stricter one, so
// a forged header can only keep a browser from sending it over plain HTTP.
func overTLS(r *http.Request) bool {
	return r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}

// logout is POST logout: the session ends, on the server too.
func (h *Handler) logout(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(sessionCookie); err == nil {
		h.session.stop(c.Value)
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: h.cfg.Path, HttpOnly: true,
		Secure: overTLS(r), SameSite: http.SameSiteStrictMode, MaxAge: -1})
	http.Redirect(w, r, h.cfg.Path, http.StatusSeeOther)
}
