package ui

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/heed-go/heed/queue"
)

// fingerprintMasks are the parts [Fingerprint] masks, as one regular
// expression of alternatives (tried in this order where several match at
// one place), so that a message is scanned once.
var fingerprintMasks = []struct {
	re   string
	mask string
}{
	// E-mail addresses.
	{`[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+`, "<addr>"},
	// URLs: scheme, host and path vary per call.
	{`[a-zA-Z][a-zA-Z0-9+.-]*://[^\s"'<>]*[^\s"'<>.,:;)]`, "<url>"},
	// UUIDs.
	{`\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b`, "<id>"},
	// IPv6 addresses in brackets, with an optional port.
	{`\[[0-9a-fA-F:.]*:[0-9a-fA-F:.]*\](?::\d+)?`, "<addr>"},
	// IPv4 addresses, with an optional port.
	{`\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b`, "<addr>"},
	// Bare IPv6 addresses (at least three groups).
	{`\b[0-9a-fA-F]{0,4}(?::[0-9a-fA-F]{0,4}){2,7}\b`, "<addr>"},
	// host:port.
	{`\b[A-Za-z0-9][A-Za-z0-9.-]*:\d{2,5}\b`, "<addr>"},
	// Identifiers: a word of 8 or more letters, digits, _ or - with at
	// least one digit and one other character (hex digests, base62 IDs,
	// "req_8f3kd92x"); a shorter one keeps its letters and its digits
	// become "<n>". Plain numbers are the next alternative's.
	{`\b(?:[A-Za-z_-][A-Za-z0-9_-]*[0-9]|[0-9][A-Za-z0-9_-]*[A-Za-z_-])[A-Za-z0-9_-]*\b`, ""},
	// Numbers: integers and decimals.
	{`\d+(?:\.\d+)?`, "<n>"},
}

var (
	fingerprintRE = func() *regexp.Regexp {
		alts := make([]string, len(fingerprintMasks))
		for i, m := range fingerprintMasks {
			alts[i] = "(" + m.re + ")"
		}
		return regexp.MustCompile(strings.Join(alts, "|"))
	}()
	numberRE = regexp.MustCompile(`\d+(?:\.\d+)?`)
	spaces   = regexp.MustCompile(`\s+`)
)

// maxFingerprint caps a fingerprint's length, in bytes.
const maxFingerprint = 200

// Fingerprint returns the shape of an error text: the text with what
// varies between occurrences of one error masked, so that errors with one
// cause compare equal. E-mail addresses, IP addresses (with their port)
// and host:port pairs become "<addr>", URLs "<url>", UUIDs and words of 8
// or more characters that hold a digit (hex digests, generated IDs)
// "<id>", and other numbers "<n>"; runs of white space become one space,
// and the result is cut at 200 bytes. "dial tcp 10.0.0.7:5432: connection
// refused" and "dial tcp 10.0.0.9:5432: connection refused" have the
// fingerprint "dial tcp <addr>: connection refused".
//
// It is pure and safe for concurrent use.
func Fingerprint(msg string) string {
	var b strings.Builder
	last := 0
	for _, m := range fingerprintRE.FindAllStringSubmatchIndex(msg, -1) {
		b.WriteString(msg[last:m[0]])
		last = m[1]
		for i, mask := range fingerprintMasks {
			if m[2+2*i] < 0 {
				continue
			}
			switch {
			case mask.mask != "":
				b.WriteString(mask.mask)
			case m[1]-m[0] >= 8:
				b.WriteString("<id>")
			default: // a short word: only its numbers
				b.WriteString(numberRE.ReplaceAllString(msg[m[0]:m[1]], "<n>"))
			}
			break
		}
	}
	b.WriteString(msg[last:])
	s := b.String()
	s = strings.TrimSpace(spaces.ReplaceAllString(s, " "))
	if len(s) > maxFingerprint {
		cut := maxFingerprint
		for cut > 0 && s[cut]&0xC0 == 0x80 { // not inside a UTF-8 sequence
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

// Group is a set of dead jobs with one cause: one kind, one dead reason
// and one [Fingerprint] of the last error.
type Group struct {
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
	Sample queue.DeadCause
	Queues []string // the queues its jobs are in, sorted
	IDs    []int64  // its jobs, ascending
}

// GroupID returns the ID of the group of kind, reason and fingerprint.
func GroupID(kind, reason, fingerprint string) string {
	h := sha256.Sum256([]byte(kind + "\x00" + reason + "\x00" + fingerprint))
	return hex.EncodeToString(h[:8])
}

// GroupDead groups dead jobs by kind, reason and the fingerprint of their
// last error, largest group first (then the most recent, then by ID). It
// is pure and safe for concurrent use.
func GroupDead(dead []queue.DeadCause) []Group {
	byID := map[string]*Group{}
	var order []*Group
	for _, d := range dead {
		fp := Fingerprint(d.Error)
		id := GroupID(d.Kind, d.Reason, fp)
		g := byID[id]
		if g == nil {
			g = &Group{ID: id, Kind: d.Kind, Reason: d.Reason, Fingerprint: fp, First: d.FinishedAt, Last: d.FinishedAt, Sample: d}
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
	out := make([]Group, len(order))
	for i, g := range order {
		slices.Sort(g.IDs)
		slices.Sort(g.Queues)
		out[i] = *g
	}
	slices.SortStableFunc(out, func(a, b Group) int {
		switch {
		case a.Count != b.Count:
			return b.Count - a.Count
		case !a.Last.Equal(b.Last):
			return b.Last.Compare(a.Last)
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out
}
