package ui

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"time"

	"github.com/heed-go/heed/internal/redact"
	"github.com/heed-go/heed/queue/jobstore"
)

// maxFingerprint caps a fingerprint's length, in bytes.
const maxFingerprint = 200

// fingerprint returns the shape of an error text: the text with what
// varies between occurrences of one error masked, so that errors with one
// cause compare equal. The text is read as chunks between white space and
// the characters " ' ( ) < > { } , ; (trailing . : ; ! ? kept apart):
// a chunk that holds "://" becomes "<url>"; an e-mail address, an IP
// address (with its port, IPv6 in brackets or not) or a host:port pair
// "<addr>"; a UUID "<id>". In other chunks, a word of 8 or more letters,
// digits, _ or - that mixes digits with other characters (hex digests,
// generated IDs such as "req_8f3kd92x") becomes "<id>", and every other
// number (integer or decimal) "<n>". Runs of white space become one
// space, and the result is cut at 200 bytes. "dial tcp 10.0.0.7:5432:
// connection refused" and "dial tcp 10.0.0.9:5432: connection refused"
// have the fingerprint "dial tcp <addr>: connection refused".
//
// It is pure, safe for concurrent use, and reads the text once.
func fingerprint(msg string) string {
	var b strings.Builder
	b.Grow(len(msg))
	space := false // a white space run is pending
	for i := 0; i < len(msg); {
		c := msg[i]
		switch {
		case isSpace(c):
			space = true
			i++
			continue
		case isDelim(c):
			flushSpace(&b, &space)
			b.WriteByte(c)
			i++
			continue
		}
		flushSpace(&b, &space)
		j := i
		for j < len(msg) && !isSpace(msg[j]) && !isDelim(msg[j]) {
			j++
		}
		chunk := msg[i:j]
		k := len(chunk)
		for k > 0 && strings.IndexByte(".:;!?", chunk[k-1]) >= 0 {
			k--
		}
		maskChunk(&b, chunk[:k])
		b.WriteString(chunk[k:])
		i = j
	}
	s := b.String()
	if len(s) > maxFingerprint {
		cut := maxFingerprint
		for cut > 0 && s[cut]&0xC0 == 0x80 { // not inside a UTF-8 sequence
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

func isDelim(c byte) bool { return strings.IndexByte(`"'()<>{},;`, c) >= 0 }

func flushSpace(b *strings.Builder, space *bool) {
	if *space && b.Len() > 0 {
		b.WriteByte(' ')
	}
	*space = false
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isHex(c byte) bool { return isDigit(c) || ('a' <= c && c <= 'f') || ('A' <= c && c <= 'F') }

func isWord(c byte) bool {
	return isDigit(c) || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || c == '_' || c == '-'
}

// maskChunk writes one chunk of a message, masked.
func maskChunk(b *strings.Builder, c string) {
	switch {
	case c == "":
		return
	case strings.Contains(c, "://"):
		b.WriteString("<url>")
		return
	case isEmail(c) || isAddr(c):
		b.WriteString("<addr>")
		return
	case isUUID(c):
		b.WriteString("<id>")
		return
	}
	for i := 0; i < len(c); {
		if !isWord(c[i]) {
			b.WriteByte(c[i])
			i++
			continue
		}
		j := i
		digits, others := 0, 0
		for j < len(c) && isWord(c[j]) {
			if isDigit(c[j]) {
				digits++
			} else {
				others++
			}
			j++
		}
		w := c[i:j]
		switch {
		case digits > 0 && others > 0 && len(w) >= 8:
			b.WriteString("<id>")
		case digits == 0:
			b.WriteString(w)
		case others == 0:
			// A number, with its decimals.
			if j+1 < len(c) && c[j] == '.' && isDigit(c[j+1]) {
				for j++; j < len(c) && isDigit(c[j]); j++ {
				}
			}
			b.WriteString("<n>")
		default: // a short word: its numbers masked
			for k := 0; k < len(w); {
				if !isDigit(w[k]) {
					b.WriteByte(w[k])
					k++
					continue
				}
				for k < len(w) && isDigit(w[k]) {
					k++
				}
				b.WriteString("<n>")
			}
		}
		i = j
	}
}

// isEmail: local@domain.tld.
func isEmail(c string) bool {
	at := strings.IndexByte(c, '@')
	return at > 0 && strings.IndexByte(c[at+1:], '.') > 0 && !strings.HasSuffix(c, ".")
}

// isAddr: an IPv4 address, [IPv6] or a bare IPv6 address (three groups
// or more), or host:port, with an optional port.
func isAddr(c string) bool {
	host, port := c, ""
	if strings.HasPrefix(c, "[") {
		end := strings.IndexByte(c, ']')
		if end < 0 {
			return false
		}
		host, port = c[1:end], strings.TrimPrefix(c[end+1:], ":")
		if port != "" && !allDigits(port) || strings.Count(host, ":") < 2 {
			return false
		}
		return onlyHexColonDot(host)
	}
	if strings.Count(c, ":") >= 2 {
		return onlyHexColonDot(c)
	}
	if i := strings.LastIndexByte(c, ':'); i >= 0 {
		host, port = c[:i], c[i+1:]
		if len(port) < 2 || len(port) > 5 || !allDigits(port) {
			return false
		}
	}
	if isIPv4(host) {
		return true
	}
	if port == "" || host == "" || !(isWord(host[0]) && host[0] != '_' && host[0] != '-') {
		return false
	}
	for i := 0; i < len(host); i++ {
		if !isWord(host[i]) && host[i] != '.' || host[i] == '_' {
			return false
		}
	}
	return true
}

func isIPv4(s string) bool {
	parts := strings.Split(s, ".")
	if len(parts) != 4 {
		return false
	}
	for _, p := range parts {
		if len(p) == 0 || len(p) > 3 || !allDigits(p) {
			return false
		}
	}
	return true
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return s != ""
}

func onlyHexColonDot(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isHex(s[i]) && s[i] != ':' && s[i] != '.' {
			return false
		}
	}
	return true
}

// isUUID: 8-4-4-4-12 hex digits.
func isUUID(c string) bool {
	if len(c) != 36 {
		return false
	}
	for i := 0; i < 36; i++ {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			if c[i] != '-' {
				return false
			}
		} else if !isHex(c[i]) {
			return false
		}
	}
	return true
}

// deadGroup is a set of dead jobs with one cause: one kind, one dead reason
// and one [fingerprint] of the last error.
type deadGroup struct {
	// ID names the group in URLs: a digest of kind, reason and
	// fingerprint, stable across requests.
	ID          string
	Kind        string
	Reason      string
	Fingerprint string
	Count       int
	// First and Last are when the group's oldest and newest jobs died.
	First, Last time.Time
	// Sample is the group's newest job.
	Sample jobstore.DeadCause
	Queues []string // the queues its jobs are in, sorted
	// IDs are its jobs, ascending, when [groupDead] made it from a list
	// of them; nil when the dashboard counted it from the store's index
	// of causes ([jobstore.Inspector].DeadCauseCounts).
	IDs []int64

	keys []jobstore.CauseKey // the causes counted in it, the latest death first; nil: IDs holds its jobs
}

// groupID returns the ID of the group of kind, reason and fingerprint.
func groupID(kind, reason, fingerprint string) string {
	h := sha256.Sum256([]byte(kind + "\x00" + reason + "\x00" + fingerprint))
	return hex.EncodeToString(h[:8])
}

// groupDead groups dead jobs by kind, reason and the fingerprint of their
// last error, largest group first (then the most recent, then by ID). It
// is pure and safe for concurrent use.
func groupDead(dead []jobstore.DeadCause) []deadGroup {
	byID := map[string]*deadGroup{}
	var order []*deadGroup
	for _, d := range dead {
		fp := fingerprint(d.Error)
		id := groupID(d.Kind, d.Reason, fp)
		g := byID[id]
		if g == nil {
			g = &deadGroup{ID: id, Kind: d.Kind, Reason: d.Reason, Fingerprint: fp, First: d.FinishedAt, Last: d.FinishedAt, Sample: d}
			byID[id] = g
			order = append(order, g)
		}
		g.Count++
		g.IDs = append(g.IDs, d.ID)
		if d.FinishedAt.Before(g.First) {
			g.First = d.FinishedAt
		}
		if d.FinishedAt.After(g.Last) || (d.FinishedAt.Equal(g.Last) && d.ID > g.Sample.ID) {
			g.Last, g.Sample = d.FinishedAt, d
		}
		if !slices.Contains(g.Queues, d.Queue) {
			g.Queues = append(g.Queues, d.Queue)
		}
	}
	out := make([]deadGroup, len(order))
	for i, g := range order {
		slices.Sort(g.IDs)
		slices.Sort(g.Queues)
		out[i] = *g
	}
	sortGroups(out)
	return out
}

// groupCounts merges the store's counts of causes into groups of one
// kind, reason and fingerprint (a cause's digits are all 0, which
// Fingerprint masks as any number), largest first as [groupDead] orders
// them. Each group's Sample holds only the ID of its highest job of the
// latest cause; keys lists its causes, the latest death first.
func groupCounts(counts []jobstore.DeadCauseCount) []deadGroup {
	byID := map[string]*deadGroup{}
	var order []*deadGroup
	lastOf := map[jobstore.CauseKey]time.Time{}
	for _, c := range counts {
		fp := fingerprint(redact.Text(c.Cause))
		id := groupID(c.Kind, c.Reason, fp)
		g := byID[id]
		if g == nil {
			g = &deadGroup{ID: id, Kind: c.Kind, Reason: c.Reason, Fingerprint: fp, First: c.First, Last: c.Last, Sample: jobstore.DeadCause{ID: c.MaxID}}
			byID[id] = g
			order = append(order, g)
		}
		g.Count += c.Count
		if c.First.Before(g.First) {
			g.First = c.First
		}
		if c.Last.After(g.Last) || c.Last.Equal(g.Last) && c.MaxID > g.Sample.ID {
			g.Last, g.Sample.ID = c.Last, c.MaxID
		}
		if !slices.Contains(g.Queues, c.Queue) {
			g.Queues = append(g.Queues, c.Queue)
		}
		if last, ok := lastOf[c.CauseKey]; !ok {
			g.keys = append(g.keys, c.CauseKey)
			lastOf[c.CauseKey] = c.Last
		} else if c.Last.After(last) {
			lastOf[c.CauseKey] = c.Last
		}
	}
	out := make([]deadGroup, len(order))
	for i, g := range order {
		slices.Sort(g.Queues)
		slices.SortStableFunc(g.keys, func(a, b jobstore.CauseKey) int { return lastOf[b].Compare(lastOf[a]) })
		out[i] = *g
	}
	sortGroups(out)
	return out
}

// sortGroups orders groups largest first, then the most recent, then by
// ID.
func sortGroups(out []deadGroup) {
	slices.SortStableFunc(out, func(a, b deadGroup) int {
		switch {
		case a.Count != b.Count:
			return b.Count - a.Count
		case !a.Last.Equal(b.Last):
			return b.Last.Compare(a.Last)
		}
		return strings.Compare(a.ID, b.ID)
	})
}
