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
//     looks like a credential ([Credential]);
//   - in a webhook's path (after /hooks/ or /webhooks/, or on a host named
//     hooks.* or *webhook*), every segment but plain lower-case words and
//     IDs (numbers, short upper-case words such as Slack's "T0A1B2C3");
//   - a query value that is itself an escaped URL or query
//     (redirect_uri=https%3A%2F%2F...%3Ftoken%3D...) loses its secrets.
//
// Redacted parts read "REDACTED". Everything else is kept, so that a log
// still says which endpoint was called.
//
// What text loses ([Text]) is found by structure, around the one
// maintained list of secret key names ([SecretWords]): the value of a
// secret key written as code, configuration, a header or a command line
// writes it ("token=x", "password: x", `"api_key": "x"`, "--password x",
// "<password>x</password>"); the lines under a secret key that ends its
// line in YAML ("password:" then an indented value, a block scalar
// "token: |", a list); and the value a sentence gives a secret key:
// the key (maybe for someone: "password for user bob"), then "is", "was",
// "are" or "were" (with or without a ":"; also "is now", "set to",
// "changed to" and the like), then a value that is not ordinary English. Ordinary English is a short
// maintained list of the words that follow such a key in messages
// ("required", "expired", "missing", "not", "too", articles and
// prepositions): "password is required" and "token expired" are kept,
// "password is hunter2", "my password is swordfish" and "your PIN code is
// 1234" are not. A secret given in prose without such a verb ("use
// hunter2 to log in") is found only when it looks like a credential
// ([Credential]).
//
// The functions are pure and safe for concurrent use. They allocate, so
// callers on a hot path call them only when they print something.
package redact

import (
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Mark replaces every secret.
const Mark = "REDACTED"

// SecretWords are the names whose values are redacted, lower-case: of
// query parameters, of header lines, of "name=value" and "name: value"
// pairs in text, of JSON members and of libpq keywords. A name is secret
// when, lower-cased and with "-" and "." read as "_", it is one of them or
// ends in one of them, or in the plural of one of five bytes or more:
// "X-Amz-Signature", "oauth_token", "githubToken", "client-secret",
// "Set-Cookie", "db.password", "tokens" and "api_keys" are secret. The suffix
// rule has false positives ("bypass", "monkey"): their values are hidden
// too, which costs only some detail in a log. This is the one maintained
// list: add a word here and every output hides it.
var SecretWords = []string{
	"token", "access_token", "id_token", "refresh_token", "api_key", "apikey", "key",
	"secret", "client_secret", "password", "pass", "passwd", "pwd", "passphrase", "jwt", "bearer",
	"auth", "authorization", "signature", "sig", "session", "sessionid", "session_id", "sid",
	"cookie", "credential", "credentials", "private", "private_key", "access_key", "otp", "passcode",
	"pin",
}

// queryWords are secret only as the whole name of a query parameter or
// fragment pair: OAuth's authorization "code". In text, "exit code: 1" and
// "status_code=503" are kept.
var queryWords = map[string]bool{"code": true}

// SecretName reports whether a query parameter (or header, or fragment
// pair, or key in text) called name carries a secret: see [SecretWords].
func SecretName(name string) bool {
	if name == "" {
		return false
	}
	n := normName(name)
	plural, _ := strings.CutSuffix(n, "s")
	for _, w := range SecretWords {
		if strings.HasSuffix(n, w) || len(w) >= minPlural && strings.HasSuffix(plural, w) {
			return true
		}
	}
	return false
}

// minPlural is the length of the shortest secret word whose plural is
// secret too ("tokens", "api_keys", "secrets"): not "keys", "pins" or
// "sigs", which count things more often than they hold them.
const minPlural = 5

// normName is name lower-cased, with "-" and "." read as "_".
func normName(name string) string {
	for i := 0; i < len(name); i++ {
		if c := name[i]; c >= 'A' && c <= 'Z' || c == '-' || c == '.' {
			return strings.Map(func(r rune) rune {
				switch {
				case r >= 'A' && r <= 'Z':
					return r + 'a' - 'A'
				case r == '-' || r == '.':
					return '_'
				}
				return r
			}, name)
		}
	}
	return name
}

// secretQueryName is SecretName, and the names secret only in a query.
func secretQueryName(name string) bool {
	return SecretName(name) || queryWords[normName(name)]
}

// SecretHeader reports whether the value of the header called name must
// not be shown: Authorization, Proxy-Authorization, Cookie, Set-Cookie,
// Idempotency-Key, X-Api-Key, X-Auth-Token: every name [SecretName]
// matches.
func SecretHeader(name string) bool { return SecretName(name) }

// Header returns "Name: value" with the value redacted when the header is
// secret ([SecretHeader]), and otherwise redacted as [Text] redacts text.
func Header(name, value string) string {
	if SecretHeader(name) {
		return name + ": " + Mark
	}
	return name + ": " + Text(value)
}

// MinCredential is the shortest path segment [Credential] can take for a
// credential.
const MinCredential = 16

// Credential reports whether s, a path segment (unescaped), a word or a
// bare fragment, looks like a credential: a long, random-looking token, as
// in a webhook URL (/services/T0/B0/<token>) or a bot API path
// (/bot<id>:<token>/).
//
// The rule: s is made only of letters, digits and - _ . ~ + = : (the
// alphabets of hex, base64, base64url and JWTs), and somewhere in it a
// run of [MinCredential] bytes changes character class often: counting
// each adjacent pair where a digit meets a letter, or a lower-case letter
// is followed by an upper-case one, there are at least four such changes
// in those 16 bytes. Random tokens change about every other byte, also
// when text is glued to them ("<token>.json", "id:<token>"); words, slugs
// ("how-to-retry"), camel-case names ("CreateOrderRequest"), dates and
// plain numbers hardly ever, and are kept.
//
// A UUID (8-4-4-4-12 hex digits) is an identifier, not a credential, and
// is kept. False positives: long hex identifiers (commit hashes, content digests)
// and base64 IDs are taken for credentials and hidden; a log then shows
// REDACTED where the ID was. False negatives: a secret shorter than 16
// bytes, one made of a single class of characters (all digits, all
// lower-case letters), and UUIDs are kept. Secrets belong in headers, which are never logged;
// this rule is a safety net for URLs and text that embed them anyway, and
// the structure of text ([Text]) finds the values of secret keys whatever
// they look like.
func Credential(s string) bool {
	if len(s) < MinCredential || isUUID(s) {
		return false
	}
	// change[i] is 1 when the pair (s[i-1], s[i]) changes class; the
	// window of MinCredential bytes ending at i holds the changes of its
	// MinCredential-1 pairs.
	var ring [MinCredential]uint8
	changes := 0
	prev := byte(0) // 'd' digit, 'l' lower, 'u' upper, 's' symbol
	found := false
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
		var ch uint8
		if (prev == 'd' && (k == 'l' || k == 'u')) || ((prev == 'l' || prev == 'u') && k == 'd') || (prev == 'l' && k == 'u') {
			ch = 1
		}
		prev = k
		// Slide: the pair that left the window is MinCredential-1 back.
		changes += int(ch) - int(ring[i%(MinCredential-1)])
		ring[i%(MinCredential-1)] = ch
		if i >= MinCredential-1 && changes*4 >= MinCredential {
			found = true
		}
	}
	return found
}

// isUUID reports whether s is a UUID in its canonical text form.
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if i == 8 || i == 13 || i == 18 || i == 23 {
			if c != '-' {
				return false
			}
		} else if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
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
	if c.Fragment != "" || c.RawFragment != "" {
		// A fragment is never sent to a server: it holds what a browser
		// keeps to itself, OAuth's implicit tokens among them.
		c.Fragment, c.RawFragment = Mark, ""
	}
	if c.Path != "" {
		p := c.EscapedPath()
		if np, changed := path(p, hookHost(c.Hostname())); changed {
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
	np, _ := path(s, false)
	return np
}

// hookHost reports whether host is a webhook service's ("hooks.slack.com",
// "webhooks.example.com"), whose paths hold the credential in segments
// that need not look random: see [secretSegment].
func hookHost(host string) bool {
	first, _, _ := strings.Cut(strings.ToLower(host), ".")
	return first == "hooks" || first == "hook" || strings.Contains(first, "webhook")
}

// hookWord reports whether the path segment seg starts the part of a path
// that holds a webhook's credentials: /hooks/, /webhook/ and the like.
func hookWord(seg string) bool {
	p := normName(seg)
	return p == "hooks" || p == "hook" || p == "webhook" || p == "webhooks"
}

// secretSegment reports whether the path segment seg (unescaped) is to be
// redacted, after the segment prev, in a path where hooked says a
// webhook's segments began before prev (after /hooks/ or on a webhook
// host): see the package documentation.
func secretSegment(prev, seg string, hooked bool) bool {
	if seg == "" || seg == Mark {
		return false
	}
	if Credential(seg) {
		return true
	}
	if name, v, ok := strings.Cut(seg, "="); ok && v != "" && SecretName(name) {
		return true // a matrix parameter: /p;token=x or /token=x
	}
	if i := strings.IndexByte(seg, ';'); i >= 0 {
		for part := range strings.SplitSeq(seg[i+1:], ";") {
			if name, v, ok := strings.Cut(part, "="); ok && v != "" && SecretName(name) {
				return true
			}
		}
	}
	// After /hooks/, /webhook/, /token/, /secret/ and the like, a segment
	// that is not a plain lower-case word ("list", "new") is the secret;
	// in a webhook's path (Discord's /webhooks/<id>/<token>, Slack's
	// hooks.slack.com/services/<team>/<bot>/<token>), every later one
	// too, but for the IDs such paths hold: a number, or a short word of
	// upper-case letters and digits ("T0A1B2C3").
	if hookWord(prev) || SecretName(prev) {
		return !lowerWord(seg)
	}
	return hooked && !lowerWord(seg) && !hookID(seg)
}

// lowerWord reports whether s is made of lower-case ASCII letters only.
func lowerWord(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}

// hookID reports whether s, a segment of a webhook's path, reads as an
// ID: digits only, or fewer than 12 upper-case letters and digits.
func hookID(s string) bool {
	digits, upper := true, len(s) < 12
	for i := 0; i < len(s); i++ {
		c := s[i]
		digits = digits && c >= '0' && c <= '9'
		upper = upper && (c >= '0' && c <= '9' || c >= 'A' && c <= 'Z')
	}
	return digits || upper
}

// path redacts the secret segments of an escaped path ([secretSegment]);
// hooked says it is the path of a webhook host ([hookHost]).
func path(p string, hooked bool) (string, bool) {
	changed := false
	segs := strings.Split(p, "/")
	forSecretSegments(segs, hooked, func(i int, _ string) {
		segs[i] = Mark
		changed = true
	})
	if !changed {
		return p, false
	}
	return strings.Join(segs, "/"), true
}

// forSecretSegments calls fn with the index and unescaped text of every
// secret segment of segs, the escaped segments of a path.
func forSecretSegments(segs []string, hooked bool, fn func(i int, un string)) {
	prev := ""
	for i, seg := range segs {
		un, err := url.PathUnescape(seg)
		if err != nil {
			un = seg
		}
		if secretSegment(prev, un, hooked) {
			fn(i, un)
		}
		hooked = hooked || hookWord(un)
		prev = un
	}
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
		case hasValue && secretQueryName(un):
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
			} else if r := nested(v, uv); r != "" {
				b.WriteString(name + "=" + r)
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

// nested returns the escaped value v, whose unescaped text is uv, escaped
// again after [Text] redacted uv, when v was escaped and uv holds a
// secret: a URL or a query inside a query value
// (redirect_uri=https%3A%2F%2Fh%2Fcb%3Ftoken%3D...). Otherwise "".
func nested(v, uv string) string {
	if uv == v {
		return ""
	}
	return reescaped(uv, 0)
}

// reescaped returns un, the unescaped text of an escaped part of text
// depth levels of escaping deep, redacted as [Text] redacts it and
// escaped again, when that removed a secret; otherwise "". Text may
// escape what it keeps (a URL's path): only a secret it removed counts.
func reescaped(un string, depth int) string {
	if r := text(un, depth); strings.Count(r, Mark) > strings.Count(un, Mark) {
		return url.QueryEscape(r)
	}
	return ""
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
	if u.Fragment != "" {
		add(u.Fragment)
		add(u.EscapedFragment())
	}
	for _, raw := range []string{u.RawQuery, u.EscapedFragment()} {
		for part := range strings.FieldsFuncSeq(raw, func(r rune) bool { return r == '&' || r == ';' }) {
			name, v, ok := strings.Cut(part, "=")
			un, _ := url.QueryUnescape(name)
			uv, err := url.QueryUnescape(v)
			if err != nil {
				uv = v
			}
			if ok && (secretQueryName(un) || Credential(uv)) {
				add(v)
				add(uv)
			} else if !ok && Credential(un) {
				add(name)
				add(un)
			}
		}
	}
	segs := strings.Split(u.EscapedPath(), "/")
	forSecretSegments(segs, hookHost(u.Hostname()), func(i int, un string) {
		add(segs[i])
		add(un)
	})
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

// Text redacts what looks secret in s, by its structure, whatever the
// secret's length:
//
//   - URLs (words starting with a scheme such as "https://", up to a space,
//     a quote or a bracket), as [URL] redacts them: user information,
//     fragments, secret query values and credential-like path segments;
//   - the value of every secret key ([SecretName]) in "key=value",
//     "key: value", "key = 'value'", JSON's "key": "value" (escaped or
//     not) and Go's key:value: a quoted (triple-quoted too) or bracketed
//     value up to its closing quote or bracket, a header line (the key
//     first on its line, or an Authorization or Cookie anywhere) up to the
//     end of the line, any other value up to a space or a separator (, ;
//     & and quotes and brackets), an authentication scheme ("Bearer x")
//     with its credential;
//   - the value of a secret key whose ":" ends its line (but for a YAML
//     block scalar's indicator, tags and a comment): the lines after it
//     indented more than the key's line, a list at the key's indentation,
//     or else the next line when it is not a key of its own;
//   - the value a sentence gives a secret key (maybe for someone:
//     "password for bob"), or a code or number named by one or by a word
//     such as "verification" ("PIN code", "verification code"): after
//     "is", "was", "are", "were", "set to", "is now" and the like, and
//     maybe a ":", a quoted value, or the next word unless it is ordinary
//     English (see the package documentation);
//   - the credential after "Bearer" and "Basic" (when base64, not a plain
//     lower-case word);
//   - the value after a command-line flag named by a secret key
//     ("--password x"), and the password of curl's "-u user:password";
//   - the text of an XML element named by a secret key
//     ("<password>x</password>"), and the body of a PEM block of a
//     private key;
//   - secrets hidden by URL escaping ("token%3Dx", an escaped URL in a
//     query value), through up to three levels of escaping;
//   - the password of user information without a scheme
//     ("root:pw@tcp(db:3306)");
//   - every other word, between spaces, quotes or "/" "?" "&" "=" "#" ",",
//     that looks like a credential ([Credential]).
//
// Redacted parts read "REDACTED". Characters a terminal would obey
// (escape sequences, a lone carriage return, C1 controls, bidirectional
// overrides) are replaced by their escapes ("\x1b", "\u202e"). Text is what
// every output of heed applies to text that comes from outside (error
// messages, panics, arguments, command lines) before it is logged, stored
// or shown.
func Text(s string) string { return text(s, 0) }

// maxEscapes is how many levels of URL escaping [Text] looks through.
const maxEscapes = 3

// text is Text inside depth levels of URL escaping.
func text(s string, depth int) string {
	if !mayHaveSecrets(s) {
		return controls(s)
	}
	s = pemBlocks(s)
	// URLs last: a URL's span can take in the key or the opening tag of
	// what follows it ("x://#jwt: v", "x://#<Token>v</Token>"), which
	// would leave the value without the structure that marks it.
	s = keyed(s)
	s = phrases(s)
	s = xmlTags(s)
	s = schemes(s)
	s = flags(s)
	s = userinfo(s)
	s = urls(s)
	if depth < maxEscapes {
		s = escaped(s, depth)
	}
	return controls(words(s))
}

// controls replaces the characters of s that a terminal obeys rather than
// shows by their escapes ("\x1b", "\u202e"): C0 control characters but
// tab, newline and a carriage return before a newline; DEL; C1 control
// characters; and the bidirectional overrides and isolates, which print
// text in another order than it is stored. Text from outside (a
// handler's error, a server's message) then cannot clear an operator's
// terminal, set its title, hide text or make it read backwards.
func controls(s string) string {
	if !hasControls(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i, r := range s {
		switch {
		case r == '\t' || r == '\n' || r == '\r' && i+1 < len(s) && s[i+1] == '\n':
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			b.WriteString(`\x`)
			b.WriteByte("0123456789abcdef"[r>>4])
			b.WriteByte("0123456789abcdef"[r&0xf])
		case r >= 0x80 && r <= 0x9f || isBidi(r):
			b.WriteString(`\u`)
			b.WriteString(strconv.FormatInt(int64(0x10000+r), 16)[1:])
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// hasControls reports whether s holds a character [controls] replaces.
func hasControls(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\t' || c == '\n':
		case c == '\r':
			if i+1 >= len(s) || s[i+1] != '\n' {
				return true
			}
		case c < 0x20 || c == 0x7f:
			return true
		case c == 0xc2 && i+1 < len(s) && s[i+1] >= 0x80 && s[i+1] <= 0x9f: // U+0080..U+009F
			return true
		case c == 0xe2 && i+2 < len(s): // U+202A..U+202E, U+2066..U+2069
			if s[i+1] == 0x80 && s[i+2] >= 0xaa && s[i+2] <= 0xae || s[i+1] == 0x81 && s[i+2] >= 0xa6 && s[i+2] <= 0xa9 {
				return true
			}
		}
	}
	return false
}

// isBidi reports whether r is a bidirectional override or isolate
// (U+202A..U+202E, U+2066..U+2069).
func isBidi(r rune) bool {
	return r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069
}

// pemBlocks redacts the body of every PEM block of a private key
// ("-----BEGIN RSA PRIVATE KEY-----" ... "-----END"): see [Text].
func pemBlocks(s string) string {
	const begin, end = "-----BEGIN ", "-----END"
	if !strings.Contains(s, begin) {
		return s
	}
	p := splice{s: s}
	for pos := 0; ; {
		i := strings.Index(s[pos:], begin)
		if i < 0 {
			break
		}
		i += pos + len(begin)
		head := strings.Index(s[i:], "-----")
		if head < 0 {
			break
		}
		label := strings.ToUpper(s[i : i+head])
		start := i + head + len("-----")
		pos = start
		if !strings.Contains(label, "PRIVATE") && !strings.Contains(label, "SECRET") {
			continue
		}
		stop := strings.Index(s[start:], end)
		if stop < 0 {
			stop = len(s) - start
		}
		if strings.TrimSpace(s[start:start+stop]) != Mark {
			p.mark(start, start+stop)
		}
		pos = start + stop
	}
	return p.String()
}

// xmlTags redacts the text of every XML element named by a secret key
// ("<password>x</password>", "<ns:Token>x</ns:Token>"): see [Text].
func xmlTags(s string) string {
	if !strings.Contains(s, "</") {
		return s
	}
	p := splice{s: s}
	for i := 0; i < len(s); i++ {
		if s[i] != '<' {
			continue
		}
		n := i + 1
		for n < len(s) && (isKeyByte(s[n]) || s[n] == ':') {
			n++
		}
		if n == i+1 || n >= len(s) {
			continue
		}
		name := s[i+1 : n]
		if _, local, ok := strings.Cut(name, ":"); ok {
			name = local
		}
		if s[n] != '>' && s[n] != ' ' || !SecretName(name) {
			continue
		}
		// The tag's end, within its attributes' reach.
		gt := strings.IndexByte(s[n:min(len(s), n+256)], '>')
		if gt < 0 || strings.IndexByte(s[n:n+gt], '<') >= 0 {
			continue
		}
		start := n + gt + 1
		e := strings.IndexByte(s[start:], '<')
		if e < 0 {
			e = len(s) - start
		}
		if e == 0 || strings.TrimSpace(s[start:start+e]) == Mark {
			continue
		}
		p.mark(start, start+e)
		i = start + e - 1
	}
	return p.String()
}

// escaped redacts secrets hidden by URL escaping: in every part of s
// between spaces, quotes, brackets and the separators of a query (& = ?),
// that holds an escape (%XX), the unescaped text is redacted as [Text]
// redacts it, and when that changes it, the part is replaced by the
// redacted text escaped again: "redirect_uri=https%3A%2F%2Fh%2Fcb%3Ftoken%3Dx"
// and "token%3Dx" lose x.
func escaped(s string, depth int) string {
	if !hasEscape(s) {
		return s
	}
	var b strings.Builder
	out := 0
	const stops = " \t\r\n\"'`<>()[]{},;&=?" // what ends a part
	for i := 0; i < len(s); {
		if strings.IndexByte(stops, s[i]) >= 0 {
			i++
			continue
		}
		j := i
		for j < len(s) && strings.IndexByte(stops, s[j]) < 0 {
			j++
		}
		part := s[i:j]
		if hasEscape(part) {
			if un, err := url.QueryUnescape(part); err == nil {
				if r := reescaped(un, depth+1); r != "" {
					b.WriteString(s[out:i])
					b.WriteString(r)
					out = j
				}
			}
		}
		i = j
	}
	if out == 0 {
		return s
	}
	b.WriteString(s[out:])
	return b.String()
}

// hasEscape reports whether s holds a URL escape: "%" and two hex digits.
func hasEscape(s string) bool {
	for i := 0; i+2 < len(s); i++ {
		if s[i] == '%' && isHex(s[i+1]) && isHex(s[i+2]) {
			return true
		}
	}
	return false
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// urls redacts the URLs of s: see [Text].
func urls(s string) string {
	if !strings.Contains(s, "://") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for len(s) > 0 {
		i := strings.Index(s, "://")
		if i < 0 {
			b.WriteString(s)
			break
		}
		// The scheme: letters before "://".
		start := i
		for start > 0 && isSchemeByte(s[start-1]) {
			start--
		}
		for start < i && !isLetter(s[start]) {
			start++ // a scheme starts with a letter
		}
		if start == i {
			// "://" without a scheme: not a URL, but one may follow
			// ("://https://token@host").
			b.WriteString(s[:i+3])
			s = s[i+3:]
			continue
		}
		end := i + 3
		for end < len(s) && !strings.ContainsRune(" \t\r\n\"'`<>()[]{}\\", rune(s[end])) {
			end++
		}
		// Punctuation that ends a sentence or a log's "URL: error" is
		// not the URL's.
		for end > i+3 && strings.IndexByte(".,:;!", s[end-1]) >= 0 {
			end--
		}
		b.WriteString(s[:start])
		b.WriteString(oneURL(s[start:end], i-start))
		s = s[end:]
	}
	return b.String()
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// oneURL redacts the URL u, whose scheme ends at i. A URL inside it, past
// its "://" ("A://https://token@host", "?next=https://token@host"), is
// redacted as a URL of its own: its user information is not a segment
// of the first's path or query.
func oneURL(u string, i int) string {
	var red string
	if p, err := url.Parse(u); err == nil {
		// net/url lower-cases the scheme: keep it as written.
		red = u[:i] + strings.TrimPrefix(URL(p), p.Scheme)
	} else {
		red = roughURL(u)
	}
	if rest := red[min(i+1, len(red)):]; strings.Contains(rest, "://") {
		red = red[:i+1] + urls(rest)
	}
	return red
}

// mayHaveSecrets is a cheap test that lets most text through unchanged:
// Text can change s only if it has what [mayHaveWords] looks for, an
// authentication scheme's name or a verb of prose ([hasVerb]).
func mayHaveSecrets(s string) bool {
	return mayHaveWords(s) || containsFold(s, "bearer") || containsFold(s, "basic") || hasVerb(s)
}

// mayHaveWords reports whether s has a separator ("=", ":", "@", "-"), a
// URL escape, a closing tag ("</") or a word of MinCredential bytes.
// Without one, [words] (which redacts "name=value" and long words only)
// keeps s as it is: it need not look for verbs and schemes as Text does.
func mayHaveWords(s string) bool {
	run := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '=', ':', '@', '-':
			return true
		case '%':
			if i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
				return true
			}
		case '<':
			if i+1 < len(s) && s[i+1] == '/' {
				return true
			}
		}
		if isWordByte(c) {
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

// hasVerb reports whether s holds one of the verbs that can join a secret
// key and its value in prose ([phrases]), after a space.
func hasVerb(s string) bool {
	for i := 0; i+3 < len(s); i++ {
		if s[i] == ' ' && verbAt(s, i+1) > 0 {
			return true
		}
	}
	return false
}

// containsFold reports whether s contains the lower-case ASCII word w in
// any case.
func containsFold(s, w string) bool {
	for i := 0; i+len(w) <= len(s); i++ {
		if strings.EqualFold(s[i:i+len(w)], w) {
			return true
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

// isKeyByte reports whether c may be part of a key: letters, digits and
// "_", "-", ".".
func isKeyByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.'
}

// isAlnum reports whether c is an ASCII letter or digit.
func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// splice is s with spans replaced by Mark, as a scanner finds them from
// left to right; nothing is copied before the first.
type splice struct {
	s   string
	b   strings.Builder
	out int // s[:out] is written already
}

// mark replaces s[start:end] by Mark; start is not before out.
func (p *splice) mark(start, end int) {
	p.b.WriteString(p.s[p.out:start])
	p.b.WriteString(Mark)
	p.out = end
}

// String returns s with the spans replaced: s itself when there are none.
func (p *splice) String() string {
	if p.out == 0 {
		return p.s
	}
	p.b.WriteString(p.s[p.out:])
	return p.b.String()
}

// keyed redacts the values of secret keys: see [Text].
func keyed(s string) string {
	p := splice{s: s}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '=' && c != ':' {
			continue
		}
		ks, k := keyBefore(s, i, p.out)
		if ks == k || !SecretName(s[ks:k]) {
			continue
		}
		if c == ':' && strings.HasPrefix(s[i+1:], "//") {
			continue // a URL's scheme
		}
		start, end, block := 0, 0, false
		if c == ':' {
			start, end, block = blockValue(s, i)
		}
		if !block {
			n := normName(s[ks:k])
			line := c == ':' && (lineStart(s, ks) || strings.HasSuffix(n, "authorization") || strings.HasSuffix(n, "cookie"))
			start, end = value(s, valueStart(s, i), line)
		}
		if start >= end || s[start:end] == Mark {
			continue
		}
		p.mark(start, end)
		i = end - 1
	}
	return p.String()
}

// keyBefore returns the bounds of the key before the separator at s[i],
// not before out: a word, maybe quoted (escaped or not), maybe followed by
// spaces. The key is empty (ks == k) when there is none.
func keyBefore(s string, i, out int) (ks, k int) {
	k = i
	for k > out && (s[k-1] == ' ' || s[k-1] == '\t') {
		k--
	}
	for k > out && (s[k-1] == '"' || s[k-1] == '\'' || s[k-1] == '\\' || s[k-1] == '`') {
		k--
	}
	ks = k
	for ks > out && isKeyByte(s[ks-1]) {
		ks--
	}
	return ks, k
}

// valueStart returns where the value after the separator at s[i] may
// start: past "=>" or ":=", and spaces.
func valueStart(s string, i int) int {
	c, j := s[i], i+1
	if j < len(s) && (c == '=' && s[j] == '>' || c == ':' && s[j] == '=') {
		j++ // "=>", ":="
	}
	return skipBlanks(s, j, len(s))
}

// skipBlanks is the index of the first byte of s[i:end] that is not a
// space or a tab, or end.
func skipBlanks(s string, i, end int) int {
	for i < end && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	return i
}

// lineStart reports whether only spaces, the markers of a header dump
// ("> ", "< ", "* ") and of a YAML sequence's item ("- ") come before
// position i on its line.
func lineStart(s string, i int) bool {
	for i > 0 {
		switch s[i-1] {
		case '\n':
			return true
		case ' ', '\t', '>', '<', '*', '-':
			i--
		default:
			return false
		}
	}
	return true
}

// lineEnd is the index of the end of the line that holds position i.
func lineEnd(s string, i int) int {
	if e := strings.IndexAny(s[i:], "\r\n"); e >= 0 {
		return i + e
	}
	return len(s)
}

// tokenEnd is the end of the token that starts at i: the first space,
// quote, bracket, backslash or separator (, ; &).
func tokenEnd(s string, i int) int {
	for i < len(s) && !strings.ContainsRune(" \t\r\n\"'`,;&<>()[]{}\\", rune(s[i])) {
		i++
	}
	return i
}

// authSchemes are the HTTP authentication schemes whose credential follows
// their name after a space.
var authSchemes = []string{"bearer", "basic", "token", "digest", "negotiate", "ntlm", "hoba", "mutual", "apikey", "aws4-hmac-sha256", "dpop", "mac", "oauth"}

func isAuthScheme(w string) bool {
	for _, a := range authSchemes {
		if strings.EqualFold(w, a) {
			return true
		}
	}
	return false
}

// value returns the bounds of the value that starts at j: between quotes
// (escaped ones too), inside brackets, to the end of the line when line,
// or else one token (two after an authentication scheme's name).
func value(s string, j int, line bool) (start, end int) {
	if j >= len(s) {
		return j, j
	}
	if start, end, ok := quotedValue(s, j); ok {
		return start, end
	}
	if open := s[j]; open == '[' || open == '{' || open == '(' || open == '<' {
		return bracketed(s, j)
	}
	if line {
		end = lineEnd(s, j)
		for end > j && (s[end-1] == ' ' || s[end-1] == '\t') {
			end--
		}
		return j, end
	}
	end = tokenEnd(s, j)
	if isAuthScheme(s[j:end]) {
		if k := skipBlanks(s, end, len(s)); k > end {
			if e := tokenEnd(s, k); e > k {
				end = e
			}
		}
	}
	return j, end
}

// quotedValue returns the bounds of the quoted value that starts at j, escaped
// quotes too (\"...\"), and false when none starts there.
func quotedValue(s string, j int) (start, end int, ok bool) {
	q := j
	for q < len(s) && s[q] == '\\' {
		q++
	}
	if q == len(s) || s[q] != '"' && s[q] != '\'' && s[q] != '`' {
		return 0, 0, false
	}
	if q == j && q+2 < len(s) && s[q+1] == s[q] && s[q+2] == s[q] {
		// A triple-quoted string (TOML, Python): up to the closing three.
		start = q + 3
		if e := strings.Index(s[start:], s[q:q+3]); e >= 0 {
			return start, start + e, true
		}
		return start, len(s), true
	}
	start = q + 1
	if q > j { // an escaped quote closes it: \"...\"
		if e := strings.Index(s[start:], s[j:q+1]); e >= 0 {
			return start, start + e, true
		}
		return start, lineEnd(s, start), true
	}
	for e := start; e < len(s); e++ {
		switch s[e] {
		case '\\':
			e++
		case s[q], '\n':
			return start, e, true
		}
	}
	return start, len(s), true
}

// bracketed returns the bounds of what the bracket at j encloses, nested
// brackets of its kind included.
func bracketed(s string, j int) (start, end int) {
	open := s[j]
	close := map[byte]byte{'[': ']', '{': '}', '(': ')', '<': '>'}[open]
	depth := 0
	for e := j; e < len(s); e++ {
		switch s[e] {
		case open:
			depth++
		case close:
			if depth--; depth == 0 {
				return j + 1, e
			}
		}
	}
	return j + 1, len(s)
}

// blockValue returns the bounds of the value of the key whose ":" is at
// s[i] when that ":" ends its line, but for a YAML block scalar's indicator
// ("|", ">-", ...), tags and anchors ("!!binary", "&a") and a comment: the
// lines after it that are indented more than the key's line (a block
// scalar, a folded plain value, a nested mapping or a sequence), or a
// sequence's items ("- x") at the key's own indentation, or else the next
// line when it is not a key of its own ("password:\nhunter2", a block
// indented too little). ok is false when the value is on the key's line.
func blockValue(s string, i int) (start, end int, ok bool) {
	j, ok := restOfKeyLine(s, i)
	if !ok {
		return 0, 0, false
	}
	indent, item := keyIndent(s, i)
	return blockLines(s, j, indent, item)
}

// restOfKeyLine returns the end of the line of the key whose ":" is at
// s[i], and whether nothing but a block scalar's indicator, tags, anchors
// and a comment follow the ":" on it.
func restOfKeyLine(s string, i int) (j int, ok bool) {
	j = i + 1
	block := false // a block scalar's indicator
	for j < len(s) && s[j] != '\n' && s[j] != '\r' {
		c := s[j]
		word := j == i+1 || s[j-1] == ' ' // c starts a word
		switch {
		case c == ' ' || c == '\t':
			j++
		case (c == '!' || c == '&') && word:
			for j < len(s) && s[j] != ' ' && s[j] != '\n' && s[j] != '\r' {
				j++
			}
		case (c == '|' || c == '>') && !block && word:
			block = true
			for j++; j < len(s) && strings.IndexByte("+-0123456789", s[j]) >= 0; j++ {
			}
			if j < len(s) && strings.IndexByte(" \t\n\r", s[j]) < 0 {
				return 0, false // "token: >x" is a value
			}
		case c == '#' && s[j-1] == ' ':
			j = lineEnd(s, j)
		default:
			return 0, false
		}
	}
	return j, true
}

// keyIndent returns the indentation of the line that holds the key whose
// ":" is at s[i], and whether that line is a sequence's item ("- key:").
func keyIndent(s string, i int) (indent int, item bool) {
	ls := strings.LastIndexByte(s[:i], '\n') + 1
	in := skipBlanks(s, ls, i)
	return in - ls, s[in] == '-'
}

// blockLines returns the bounds of the value under a key whose line ends
// at j, indented by indent (item: the key is a sequence's item), as
// blockValue says.
func blockLines(s string, j, indent int, item bool) (start, end int, ok bool) {
	start, end = -1, -1
	first := true
	for pos := nextLine(s, j); pos < len(s); pos = nextLine(s, pos) {
		e := lineEnd(s, pos)
		in := skipBlanks(s, pos, e)
		if in == e {
			continue // a blank line: the block may go on after it
		}
		deeper := in-pos > indent
		sequence := in-pos == indent && !item && s[in] == '-' && (in+1 == e || s[in+1] == ' ')
		if !deeper && !sequence {
			if first && !keyLine(s[in:e]) {
				// "password:\nhunter2", or a block scalar indented
				// less than YAML wants: the value all the same.
				return in, trimEnd(s, in, e), true
			}
			break
		}
		first = false
		if start < 0 {
			start = in
		}
		end = trimEnd(s, in, e)
	}
	if start < 0 {
		return j, j, true
	}
	return start, end, true
}

// nextLine is the index of the line after the one that holds position i,
// or len(s).
func nextLine(s string, i int) int {
	if e := strings.IndexByte(s[i:], '\n'); e >= 0 {
		return i + e + 1
	}
	return len(s)
}

// trimEnd is e, less the spaces and the carriage return before it, not
// before start.
func trimEnd(s string, start, e int) int {
	for e > start && (s[e-1] == ' ' || s[e-1] == '\t' || s[e-1] == '\r') {
		e--
	}
	return e
}

// keyLine reports whether the line l (without its indentation) starts a
// key of its own ("user: bob", "user:"), or is a comment or a document's
// marker, rather than the value of the key before it.
func keyLine(l string) bool {
	l = strings.TrimRight(l, " \t\r")
	return strings.Contains(l, ": ") || strings.HasSuffix(l, ":") || strings.HasPrefix(l, "#") || strings.HasPrefix(l, "---")
}

// verbs join a key and its value in prose, longest first.
var verbs = [...]string{"is set to", "was set to", "changed to", "updated to", "is still", "is now",
	"was now", "reset to", "set to", "were", "was", "are", "is"}

// verbAt returns the length of the verb that joins a key and its value in
// prose ([verbs], any case) at s[i], followed by a space or a ":", or 0.
func verbAt(s string, i int) int {
	if i >= len(s) {
		return 0
	}
	c := s[i] | 0x20 // lower-cased, if a letter: most words start no verb
	for _, v := range verbs {
		if n := i + len(v); v[0] == c && n < len(s) && strings.EqualFold(s[i:n], v) && (s[n] == ' ' || s[n] == ':') {
			return len(v)
		}
	}
	return 0
}

// phrases redacts the value a sentence gives a secret key: "password is
// hunter2", "the token was abc123.", "your OTP is: 123456", "PIN code is
// 1234", "password for bob set to hunter2": see [Text].
func phrases(s string) string {
	p := splice{s: s}
	for i := 1; i+3 < len(s); i++ {
		if s[i-1] != ' ' {
			continue
		}
		n := verbAt(s, i)
		if n == 0 {
			continue
		}
		if !phraseKey(s, i-1, p.out) {
			continue
		}
		j := i + n
		if j < len(s) && s[j] == ':' {
			j++
		}
		j = skipBlanks(s, j, len(s))
		start, end, ok := quotedValue(s, j)
		if !ok {
			start, end = j, tokenEnd(s, j)
			for end > start && strings.IndexByte(".,:;!?", s[end-1]) >= 0 {
				end-- // the sentence's
			}
			if plainWord(s[start:end]) {
				continue
			}
		}
		if start >= end || s[start:end] == Mark {
			continue
		}
		p.mark(start, end)
		i = end - 1
	}
	return p.String()
}

// phraseKey reports whether the words before the space at s[sp], not
// before out, name a secret: a secret key ([SecretName]: "password",
// "api key", "OTP"), maybe for someone ("password for user bob"), or a
// code or number that one names or that proves who someone is ("PIN
// code", "verification code", "recovery number").
func phraseKey(s string, sp, out int) bool {
	ks, k := keyBefore(s, sp, out)
	if ks == k {
		return false
	}
	w := normName(s[ks:k])
	if SecretName(w) {
		return true
	}
	// "<secret> for|of [one to three words] <verb>": "password for user bob smith is x".
	for n, e := 0, ks; n < 3; n++ {
		ps, pk := keyBefore(s, e, out)
		if ps == pk {
			break
		}
		if p := normName(s[ps:pk]); p == "for" || p == "of" {
			qs, qk := keyBefore(s, ps, out)
			if qs < qk && SecretName(s[qs:qk]) {
				return true
			}
			break
		}
		e = ps
	}
	if w != "code" && w != "codes" && w != "number" {
		return false
	}
	ps, pk := keyBefore(s, ks, out)
	if ps == pk {
		return false
	}
	prev := normName(s[ps:pk])
	return SecretName(prev) || slices.Contains(codeWords, prev)
}

// codeWords name the codes and numbers that are secret in prose
// ("verification code is 123456").
var codeWords = []string{"verification", "security", "confirmation", "login", "recovery", "backup",
	"activation", "authentication", "access", "mfa", "2fa", "sms", "one_time", "reset", "unlock"}

// plainWord reports whether w, the value a sentence gives a secret key,
// is ordinary English rather than a secret: one of the words that follow
// "password is" or "token was" in messages ("required", "expired", "not",
// "too"), in any case. Anything else is taken for the secret: a word with
// a digit or a symbol ("hunter2"), and a word not in that list
// ("swordfish").
func plainWord(w string) bool {
	if w == "" || len(w) > 16 {
		return false
	}
	var b [16]byte
	for i := 0; i < len(w); i++ {
		c := w[i]
		switch {
		case c >= 'A' && c <= 'Z':
			c += 'a' - 'A'
		case c < 'a' || c > 'z':
			return false
		}
		b[i] = c
	}
	_, found := slices.BinarySearch(plainWords, string(b[:len(w)]))
	return found
}

// plainWords are the words [plainWord] keeps, sorted: articles,
// pronouns, prepositions, adverbs and the states messages give a secret.
var plainWords = []string{
	"a", "about", "absent", "accepted", "accessed", "active", "all", "already", "also", "always",
	"an", "any", "authenticated", "authorized", "available", "bad", "been", "being", "big", "blank",
	"both", "broken", "cached", "changed", "checked", "cleared", "closed", "correct", "corrupt",
	"corrupted", "created", "current", "currently", "declined", "default", "deleted", "denied",
	"deprecated", "different", "disabled", "empty", "enabled", "encrypted", "exhausted", "expected",
	"expired", "expiring", "false", "fine", "for", "forbidden", "from", "full", "generated", "given",
	"gone", "good", "hashed", "here", "hidden", "how", "ignored", "in", "inactive", "incomplete",
	"incorrect", "insufficient", "invalid", "issued", "it", "just", "kept", "known", "large", "last",
	"later", "loaded", "locked", "long", "longer", "malformed", "mandatory", "masked", "mismatched",
	"missing", "needed", "never", "new", "nil", "no", "none", "not", "now", "null", "of", "ok",
	"okay", "old", "on", "only", "open", "opened", "optional", "outdated", "over", "pending",
	"present", "provided", "read", "readable", "ready", "redacted", "refreshed", "rejected",
	"removed", "renewed", "required", "reset", "revoked", "rotated", "same", "saved", "sent", "set",
	"shared", "short", "shorter", "signed", "small", "sometimes", "stale", "still", "stored",
	"sufficient", "supplied", "taken", "that", "the", "then", "there", "this", "to", "too", "true",
	"trusted", "unauthorized", "unavailable", "unchanged", "undefined", "unique", "unknown",
	"unreadable", "unset", "unsigned", "unsupported", "untrusted", "unverified", "updated", "used",
	"usually", "valid", "validated", "verified", "very", "weak", "what", "when", "where", "which",
	"why", "wrong",
}

// schemes redacts the credential after "Bearer" and "Basic": see [Text].
func schemes(s string) string {
	p := splice{s: s}
	for i := 0; i < len(s); i++ {
		if s[i] != 'b' && s[i] != 'B' || i > 0 && isAlnum(s[i-1]) {
			continue
		}
		n := 0
		basic := false
		switch {
		case len(s)-i > 6 && strings.EqualFold(s[i:i+6], "bearer"):
			n = 6
		case len(s)-i > 5 && strings.EqualFold(s[i:i+5], "basic"):
			n, basic = 5, true
		default:
			continue
		}
		k := i + n
		if k >= len(s) || s[k] != ' ' && s[k] != '\t' {
			continue
		}
		k = skipBlanks(s, k, len(s))
		e := tokenEnd(s, k)
		tok := s[k:e]
		if tok == "" || tok == Mark || basic && lowerWord(tok) {
			continue // a Basic credential is base64, not a word ("auth", "checks")
		}
		if strings.HasSuffix(tok, "=") && e < len(s) && s[e] == '"' {
			continue // a challenge's parameter (Bearer error="..."): keyed judges it
		}
		p.mark(k, e)
		i = e - 1
	}
	return p.String()
}

// flags redacts the value after a command-line flag named by a secret key
// ("--password x", "-token x"): see [Text].
func flags(s string) string {
	p := splice{s: s}
	for i := 0; i < len(s); i++ {
		if s[i] != '-' || i > 0 && s[i-1] != ' ' && s[i-1] != '\t' && s[i-1] != '"' && s[i-1] != '\'' {
			continue
		}
		k := i + 1
		if k < len(s) && s[k] == '-' {
			k++
		}
		e := k
		for e < len(s) && isKeyByte(s[e]) {
			e++
		}
		// curl's -u and --user take "user:password".
		user := s[k:e] == "user" || s[k:e] == "u" && k == i+1
		if e == k || e >= len(s) || s[e] != ' ' || !user && !SecretName(s[k:e]) {
			continue
		}
		v := e
		for v < len(s) && s[v] == ' ' {
			v++
		}
		if v >= len(s) || s[v] == '-' {
			continue
		}
		start, end := value(s, v, false)
		if user {
			colon := strings.IndexByte(s[start:end], ':')
			if colon < 0 {
				continue
			}
			start += colon + 1
		}
		if start >= end || s[start:end] == Mark {
			continue
		}
		p.mark(start, end)
		i = end - 1
	}
	return p.String()
}

// userinfo redacts the password of user information without a scheme
// ("root:pw@tcp(db)", ":pw@host"): see [Text].
func userinfo(s string) string {
	if !strings.Contains(s, "@") {
		return s
	}
	p := splice{s: s}
	for i := 0; i < len(s); i++ {
		if s[i] != '@' {
			continue
		}
		t := i
		for t > p.out && !strings.ContainsRune(" \t\r\n\"'`<>()[]{},;/\\", rune(s[t-1])) {
			t--
		}
		colon := strings.IndexByte(s[t:i], ':')
		if colon < 0 {
			continue
		}
		name := s[t : t+colon]
		start := t + colon + 1
		if start >= i || s[start:i] == Mark || strings.Trim(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.%") != "" {
			continue
		}
		p.mark(start, i)
	}
	return p.String()
}

// words replaces every credential-like word of s by Mark.
func words(s string) string {
	if !mayHaveWords(s) {
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
		if p, ok := pairWord(w); ok {
			b.WriteString(p)
		} else if Credential(strings.TrimRight(w, ".:")) {
			b.WriteString(Mark + w[len(strings.TrimRight(w, ".:")):])
		} else {
			b.WriteString(w)
		}
		i = j
	}
	return b.String()
}

// pairWord redacts the word w when it is "name=value" and either side is
// a secret: the value judged by its name too, and the name as a word of
// its own (a token glued to what follows it, or base64 ending in "=").
// ok is false when w is not such a pair or nothing of it is secret.
func pairWord(w string) (string, bool) {
	name, v, ok := strings.Cut(w, "=")
	if !ok {
		return "", false
	}
	secretName := Credential(name)
	secretValue := v != "" && v != Mark && (SecretName(name) || Credential(v))
	if !secretName && !secretValue {
		return "", false
	}
	if secretName {
		name = Mark
	}
	if secretValue {
		v = Mark
	}
	return name + "=" + v, true
}

// roughURL redacts a URL that net/url cannot parse: its user information
// goes (everything before the last "@" of its authority), its fragment,
// and the values of secret query names and credential-like words.
func roughURL(s string) string {
	scheme, rest, _ := strings.Cut(s, "://")
	if i := strings.IndexByte(rest, '#'); i >= 0 {
		rest = rest[:i+1] + Mark
	}
	auth := rest
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		auth = rest[:i]
	}
	if at := strings.LastIndex(auth, "@"); at >= 0 {
		rest = Mark + rest[at:]
	}
	query := ""
	if i := strings.IndexAny(rest, "?"); i >= 0 {
		rest, query = rest[:i], "?"+pairs(rest[i+1:])
	}
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		host := rest[:i]
		if at := strings.LastIndex(host, "@"); at >= 0 {
			host = host[at+1:]
		}
		p, _ := path(rest[i:], hookHost(host))
		rest = rest[:i] + p
	}
	return scheme + "://" + words(rest+query)
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

// MaxLogError is the most of an error's text a log record holds: 8 KiB,
// with the cut marked.
const MaxLogError = 8 << 10

// Error returns err's message as a log record may hold it: cut at
// [MaxLogError] and redacted as [Text] redacts it; "" for a nil err. Every
// logger of heed (retry.LogObserver, the executors' attempt logs, the
// queue's and the dashboard's own records) writes errors through it.
func Error(err error) string {
	if err == nil {
		return ""
	}
	return Cut(Text(Cut(err.Error(), MaxLogError)), MaxLogError)
}

// Record returns the error text s as the records of the other job engines
// keep it (heedriver's job metadata, heedasynq's task results): redacted
// ([Text]) and at most limit bytes on a rune boundary, with "…(cut)" after
// a cut, as those records always have been. It is cut before it is
// redacted too, so that a huge text costs Text no more than limit bytes.
func Record(s string, limit int) string {
	return cutRecord(Text(cutRecord(s, limit)), limit)
}

// cutRecord is s cut as Record cuts it.
func cutRecord(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	return strings.ToValidUTF8(s[:limit], "") + "…(cut)"
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
