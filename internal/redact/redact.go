// Package redact makes text safe to print, log, store or return: it removes
// secrets from URLs, headers, connection strings and error messages, and
// bounds the size of text that comes from outside (error messages, job
// arguments). It is the one place where heed decides what looks secret, so
// that retryhttp's logs and errors, the http job kind, the heed command and
// heedotel's attributes all hide the same things.
//
// What a URL loses ([URL]):
//
//   - user information (user name and password), replaced by "REDACTED";
//   - the value of every query parameter, and of every name=value pair of
//     the fragment, whose name looks secret ([SecretName]) or whose value
//     looks like a credential ([Credential]);
//   - every path segment, and a fragment that is not name=value pairs, that
//     looks like a credential ([Credential]).
//
// Redacted parts read "REDACTED". Everything else is kept, so that a log
// still says which endpoint was called.
//
// The functions are pure and safe for concurrent use. They allocate, so
// callers on a hot path call them only when they print something.
package redact

import (
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Mark replaces every secret.
const Mark = "REDACTED"

// SecretWords are the names of query parameters (and fragment pairs) whose
// values are redacted, lower-case. A name is secret when, lower-cased and
// with "-" read as "_", it is one of them or ends in one of them:
// "X-Amz-Signature", "oauth_token", "githubToken" and "client-secret" are
// secret. The suffix rule has false positives ("zipcode", "bypass",
// "monkey"): their values are hidden too, which costs only some detail in a
// log.
var SecretWords = []string{
	"token", "access_token", "id_token", "refresh_token", "api_key", "apikey", "key",
	"secret", "client_secret", "password", "pass", "passwd", "pwd", "jwt", "bearer",
	"auth", "authorization", "signature", "sig", "session", "sessionid", "session_id",
	"code", "credential", "credentials",
}

// SecretName reports whether a query parameter (or header, or fragment
// pair) called name carries a secret: see [SecretWords].
func SecretName(name string) bool {
	if name == "" {
		return false
	}
	n := strings.ReplaceAll(strings.ToLower(name), "-", "_")
	for _, w := range SecretWords {
		if strings.HasSuffix(n, w) {
			return true
		}
	}
	return false
}

// secretHeaders are header names whose values are always secret, beside
// those [SecretName] matches.
var secretHeaders = map[string]bool{
	"cookie": true, "set_cookie": true, "proxy_authorization": true, "idempotency_key": true,
	"x_idempotency_key": true, "x_csrf_token": true, "x_xsrf_token": true,
}

// SecretHeader reports whether the value of the header called name must
// not be shown: Authorization, Proxy-Authorization, Cookie, Set-Cookie,
// Idempotency-Key, and every name [SecretName] matches (X-Api-Key,
// X-Auth-Token, ...).
func SecretHeader(name string) bool {
	n := strings.ReplaceAll(strings.ToLower(name), "-", "_")
	return secretHeaders[n] || SecretName(name)
}

// Header returns "Name: value" with the value redacted when the header is
// secret ([SecretHeader]).
func Header(name, value string) string {
	if SecretHeader(name) {
		return name + ": " + Mark
	}
	return name + ": " + value
}

// MinCredential is the shortest path segment [Credential] can take for a
// credential.
const MinCredential = 16

// Credential reports whether s, a path segment (unescaped) or a bare
// fragment, looks like a credential: a long, random-looking token, as in a
// webhook URL (/services/T0/B0/<token>) or a bot API path
// (/bot<id>:<token>/).
//
// The rule: s is at least [MinCredential] bytes long, is made only of
// letters, digits and - _ . ~ + = : (the alphabets of hex, base64,
// base64url and JWTs), and changes character class often: counting each
// adjacent pair where a digit meets a letter, or a lower-case letter is
// followed by an upper-case one, there is at least one such change per four
// bytes. Random tokens change about every other byte; words, slugs
// ("how-to-retry"), camel-case names ("CreateOrderRequest"), dates and
// plain numbers hardly ever, and are kept.
//
// False positives: long hex identifiers (commit hashes, content digests)
// and base64 IDs are taken for credentials and hidden; a log then shows
// REDACTED where the ID was. False negatives: a secret shorter than 16
// bytes, one made of a single class of characters (all digits, all
// lower-case letters), and most UUIDs (whose short hex groups change class
// too rarely) are kept. Secrets belong in headers, which are never logged;
// this rule is a safety net for URLs that embed them anyway.
func Credential(s string) bool {
	if len(s) < MinCredential {
		return false
	}
	changes := 0
	prev := byte(0) // 'd' digit, 'l' lower, 'u' upper, 's' symbol
	for i := 0; i < len(s); i++ {
		c := s[i]
		var k byte
		switch {
		case c >= '0' && c <= '9':
			k = 'd'
		case c >= 'a' && c <= 'z':
			k = 'l'
		case c >= 'A' && c <= 'Z':
			k = 'u'
		case strings.IndexByte("-_.~+=:", c) >= 0:
			k = 's'
		default:
			return false
		}
		if (prev == 'd' && (k == 'l' || k == 'u')) || ((prev == 'l' || prev == 'u') && k == 'd') || (prev == 'l' && k == 'u') {
			changes++
		}
		prev = k
	}
	return changes*4 >= len(s)
}

// URL returns u as a string with its secrets redacted (see the package
// documentation). A nil u is "".
func URL(u *url.URL) string {
	if u == nil {
		return ""
	}
	c := *u
	if c.User != nil {
		c.User = url.User(Mark)
	}
	if c.Opaque != "" {
		c.Opaque = opaque(c.Opaque)
	}
	if c.RawQuery != "" {
		c.RawQuery = pairs(c.RawQuery)
	}
	if c.Fragment != "" {
		frag := c.EscapedFragment()
		if strings.Contains(frag, "=") {
			frag = pairs(frag)
		} else if Credential(c.Fragment) {
			frag = Mark
		}
		c.Fragment, _ = url.PathUnescape(frag)
		c.RawFragment = frag
	}
	if c.Path != "" {
		p := c.EscapedPath()
		if np, changed := path(p); changed {
			c.RawPath = np
			c.Path, _ = url.PathUnescape(np)
		}
	}
	return c.String()
}

// opaque redacts an opaque URL ("mailto:...", or "host:port/path" read as
// scheme "host"): user information before an "@" goes, and so do
// credential-like segments.
func opaque(s string) string {
	if at := strings.LastIndex(s, "@"); at >= 0 {
		s = Mark + s[at:]
	}
	np, _ := path(s)
	return np
}

// path redacts the credential-like segments of an escaped path.
func path(p string) (string, bool) {
	changed := false
	segs := strings.Split(p, "/")
	for i, seg := range segs {
		un, err := url.PathUnescape(seg)
		if err != nil {
			un = seg
		}
		if Credential(un) {
			segs[i] = Mark
			changed = true
		}
	}
	if !changed {
		return p, false
	}
	return strings.Join(segs, "/"), true
}

// pairs redacts the secret values of an escaped query (or fragment) of
// name=value pairs separated by & or ;, keeping their order and escaping:
// the values of secret names, and values that look like credentials. A
// part that is not a pair is kept unless it looks like a credential.
func pairs(q string) string {
	var b strings.Builder
	b.Grow(len(q))
	for len(q) > 0 {
		i := strings.IndexAny(q, "&;")
		part, sep := q, ""
		if i >= 0 {
			part, sep, q = q[:i], q[i:i+1], q[i+1:]
		} else {
			q = ""
		}
		name, _, hasValue := strings.Cut(part, "=")
		un, err := url.QueryUnescape(name)
		if err != nil {
			un = name
		}
		switch {
		case hasValue && SecretName(un):
			b.WriteString(name)
			b.WriteString("=" + Mark)
		case !hasValue && Credential(un):
			b.WriteString(Mark)
		case hasValue:
			// The value of an innocent name may still be a token.
			_, v, _ := strings.Cut(part, "=")
			uv, err := url.QueryUnescape(v)
			if err != nil {
				uv = v
			}
			if Credential(uv) {
				b.WriteString(name + "=" + Mark)
			} else {
				b.WriteString(part)
			}
		default:
			b.WriteString(part)
		}
		b.WriteString(sep)
	}
	return b.String()
}

// URLString redacts the URL in s. When s does not parse as a URL, it
// returns s with every credential-like word and user information removed
// ([Text]), and never s itself.
func URLString(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return Text(s)
	}
	return URL(u)
}

// Secrets returns the secret parts of u, as they may appear in text that
// quotes u: the password and user name, the redacted query and fragment
// values, and the credential-like path segments, each raw and in its
// escaped forms. [ErrorText] removes them from error messages.
func Secrets(u *url.URL) []string {
	if u == nil {
		return nil
	}
	var out []string
	add := func(s string) {
		if s == "" {
			return
		}
		out = append(out, s, url.QueryEscape(s), url.PathEscape(s), quoted(s))
	}
	if u.User != nil {
		add(u.User.Username())
		if pw, ok := u.User.Password(); ok {
			add(pw)
		}
	}
	for _, raw := range []string{u.RawQuery, u.EscapedFragment()} {
		for part := range strings.FieldsFuncSeq(raw, func(r rune) bool { return r == '&' || r == ';' }) {
			name, v, ok := strings.Cut(part, "=")
			un, _ := url.QueryUnescape(name)
			uv, err := url.QueryUnescape(v)
			if err != nil {
				uv = v
			}
			if ok && (SecretName(un) || Credential(uv)) {
				add(v)
				add(uv)
			} else if !ok && Credential(un) {
				add(name)
				add(un)
			}
		}
	}
	if Credential(u.Fragment) {
		add(u.Fragment)
	}
	for seg := range strings.SplitSeq(u.EscapedPath(), "/") {
		if un, err := url.PathUnescape(seg); err == nil && Credential(un) {
			add(seg)
			add(un)
		}
	}
	return out
}

// quoted is s as strconv.Quote escapes it inside a quoted string (as
// net/url's errors quote a URL).
func quoted(s string) string {
	q := strconv.Quote(s)
	return q[1 : len(q)-1]
}

// ErrorText returns msg, an error message that may quote u, with u's
// secrets replaced by "REDACTED": first every form of u itself (as
// net/http and net/url quote it, password masked or not) by its redacted
// form, then every secret part of u ([Secrets]) wherever it still appears,
// then anything else in msg that looks like a URL with secrets ([Text]).
// Secret parts shorter than 4 bytes are removed from the URL but not
// searched for in the rest of msg, where they would match innocent text.
func ErrorText(msg string, u *url.URL) string {
	if u != nil {
		safe := URL(u)
		raw := u.String()
		forms := []string{raw, quoted(raw), u.Redacted(), quoted(u.Redacted())}
		if u.User != nil {
			masked := strings.Replace(raw, u.User.String()+"@", u.User.Username()+":***@", 1)
			forms = append(forms, masked, quoted(masked))
		}
		for _, f := range forms {
			if f != "" && f != safe {
				msg = strings.ReplaceAll(msg, f, safe)
			}
		}
		msg = replaceAll(msg, Secrets(u))
	}
	return Text(msg)
}

// replaceAll replaces every secret of at least 4 bytes in msg by Mark,
// longest first, so that an escaped form is replaced whole.
func replaceAll(msg string, secrets []string) string {
	long := secrets[:0:0]
	for _, s := range secrets {
		if len(s) >= 4 && s != Mark {
			long = append(long, s)
		}
	}
	// Insertion sort, longest first: the lists are short.
	for i := 1; i < len(long); i++ {
		for j := i; j > 0 && len(long[j]) > len(long[j-1]); j-- {
			long[j], long[j-1] = long[j-1], long[j]
		}
	}
	for _, s := range long {
		msg = strings.ReplaceAll(msg, s, Mark)
	}
	return msg
}

// Text redacts the URLs it finds in s (words starting with a scheme such as
// "https://", up to a space or a quote), and every other word, between
// spaces, quotes or "/" "?" "&" "=" "#" ",", that looks like a credential
// ([Credential]). It is the last line of defence for text whose URLs are
// not known, such as a handler's error message or a command's usage error.
func Text(s string) string {
	if !mayHaveSecrets(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for len(s) > 0 {
		i := strings.Index(s, "://")
		if i < 0 {
			b.WriteString(words(s))
			break
		}
		// The scheme: letters before "://".
		start := i
		for start > 0 && isSchemeByte(s[start-1]) {
			start--
		}
		end := i + 3
		for end < len(s) && !strings.ContainsRune(" \t\r\n\"'`<>()[]{}", rune(s[end])) {
			end++
		}
		b.WriteString(words(s[:start]))
		if start == i { // "://" without a scheme
			b.WriteString(words(s[i:end]))
		} else if u, err := url.Parse(s[start:end]); err == nil {
			b.WriteString(URL(u))
		} else {
			b.WriteString(roughURL(s[start:end]))
		}
		s = s[end:]
	}
	return b.String()
}

// mayHaveSecrets is a cheap test that lets most text through unchanged:
// Text can change s only if it has "://" or a word of MinCredential bytes.
func mayHaveSecrets(s string) bool {
	if strings.Contains(s, "://") {
		return true
	}
	run := 0
	for i := 0; i < len(s); i++ {
		if isWordByte(s[i]) {
			run++
			if run >= MinCredential {
				return true
			}
		} else {
			run = 0
		}
	}
	return false
}

func isSchemeByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-_.~+=:", c) >= 0
}

// words replaces every credential-like word of s by Mark.
func words(s string) string {
	if !mayHaveSecrets(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	i := 0
	for i < len(s) {
		if !isWordByte(s[i]) {
			b.WriteByte(s[i])
			i++
			continue
		}
		j := i
		for j < len(s) && isWordByte(s[j]) {
			j++
		}
		w := s[i:j]
		// "name=value": judge the value by its name too.
		if name, v, ok := strings.Cut(w, "="); ok && v != "" && (SecretName(name) || Credential(v)) {
			b.WriteString(name + "=" + Mark)
		} else if Credential(strings.TrimRight(w, ".:")) {
			b.WriteString(Mark + w[len(strings.TrimRight(w, ".:")):])
		} else {
			b.WriteString(w)
		}
		i = j
	}
	return b.String()
}

// roughURL redacts a URL that net/url cannot parse: its user information
// goes (everything before the last "@" of its authority), and so do the
// values of secret query names and credential-like words.
func roughURL(s string) string {
	scheme, rest, _ := strings.Cut(s, "://")
	auth := rest
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		auth = rest[:i]
	}
	if at := strings.LastIndex(auth, "@"); at >= 0 {
		rest = Mark + rest[at:]
	}
	if i := strings.IndexAny(rest, "?#"); i >= 0 {
		rest = rest[:i+1] + pairs(rest[i+1:])
	}
	return scheme + "://" + words(rest)
}

// DSN returns a database connection string fit for messages: a URL
// (postgres://...) redacted as [URL] does, with a "password" parameter
// hidden too, or a keyword/value string (host=... password=...) with the
// value of every secret keyword hidden; any other string (a SQLite file
// name) with its credential-like words hidden.
func DSN(dsn string) string {
	if scheme, _, ok := strings.Cut(dsn, "://"); ok && !strings.ContainsAny(scheme, " =") {
		return URLString(dsn)
	}
	if strings.Contains(dsn, "=") && (strings.Contains(dsn, " ") || strings.HasPrefix(strings.TrimSpace(dsn), "host=") || strings.Contains(dsn, "password")) {
		return keywordValue(dsn)
	}
	return Text(dsn)
}

// keywordValue redacts a libpq keyword/value string: the values of secret
// keywords (password, sslpassword, ...) become Mark, quoted or not.
func keywordValue(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		// Copy spaces.
		if s[i] == ' ' || s[i] == '\t' || s[i] == '\n' {
			b.WriteByte(s[i])
			i++
			continue
		}
		j := i
		for j < len(s) && s[j] != '=' && s[j] != ' ' {
			j++
		}
		key := s[i:j]
		b.WriteString(key)
		i = j
		// Spaces and "=".
		for i < len(s) && (s[i] == ' ' || s[i] == '=') {
			b.WriteByte(s[i])
			i++
		}
		// The value: quoted with backslash escapes, or up to a space.
		start := i
		if i < len(s) && s[i] == '\'' {
			i++
			for i < len(s) && s[i] != '\'' {
				if s[i] == '\\' {
					i++
				}
				i++
			}
			i = min(i+1, len(s))
		} else {
			for i < len(s) && s[i] != ' ' && s[i] != '\t' && s[i] != '\n' {
				i++
			}
		}
		val := s[start:i]
		if SecretName(key) {
			b.WriteString(Mark)
		} else {
			b.WriteString(Text(val))
		}
	}
	return b.String()
}

// Cut returns s if it is at most limit bytes long, or else its first
// bytes (on a rune boundary) followed by a mark that says about how much
// was cut, such as " ... [9.9 MB cut]", the whole at most limit bytes
// long. A limit below 64 is taken as 64.
func Cut(s string, limit int) string {
	limit = max(limit, 64)
	if len(s) <= limit {
		return s
	}
	// The size in the mark depends on the mark's own length: size it
	// for the mark of a cut of len(s)-limit, then once more.
	keep := limit - len(cutMark(len(s)-limit))
	mark := cutMark(len(s) - keep)
	keep = limit - len(mark)
	for keep > 0 && !utf8.RuneStart(s[keep]) {
		keep--
	}
	return s[:keep] + mark
}

func cutMark(n int) string { return " ... [" + Size(n) + " cut]" }

// Size formats a byte count for people: "512 B", "8.0 KB", "9.9 MB",
// "1.2 GB" (powers of 1000, one decimal).
func Size(n int) string {
	const unit = 1000
	if n < unit {
		return strconv.Itoa(n) + " B"
	}
	f, units := float64(n), []string{"KB", "MB", "GB", "TB"}
	i := -1
	for f >= unit && i < len(units)-1 {
		f /= unit
		i++
	}
	return strconv.FormatFloat(f, 'f', 1, 64) + " " + units[i]
}

// Host returns the host name (or host:port) h with every DNS label that
// looks like a credential ([Credential]) replaced by "REDACTED", for
// services that put a token in a subdomain; other hosts are returned as
// they are.
func Host(h string) string {
	if len(h) < MinCredential {
		return h
	}
	labels := strings.Split(h, ".")
	changed := false
	for i, l := range labels {
		if Credential(l) {
			labels[i] = Mark
			changed = true
		}
	}
	if !changed {
		return h
	}
	return strings.Join(labels, ".")
}
