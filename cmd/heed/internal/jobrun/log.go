package jobrun

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Log formats of heed jobs work (--log-format).
const (
	LogText = "text"
	LogJSON = "json"
)

// Logger returns the logger of heed jobs work's own messages on w:
// starting, stopping, warnings, and the worker's store errors, all in one
// format. In text, one line per record: "heed jobs work: " and the message
// ("warning: " before it for a warning), then the attributes as key=value;
// the queue's per-job records are left out, since the decision lines on
// stdout show them. In JSON, one object per record (slog's JSON handler),
// the per-job records included, for log shippers.
func Logger(w io.Writer, format, prefix string) *slog.Logger {
	if format == LogJSON {
		return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(&noJobRecords{&lineHandler{w: w, mu: new(sync.Mutex), prefix: prefix}})
}

// lineHandler is a slog.Handler that writes records as heed's own lines.
type lineHandler struct {
	w      io.Writer
	mu     *sync.Mutex
	prefix string      // "heed jobs work: "
	attrs  []slog.Attr // from WithAttrs
	group  string      // from WithGroup, with a trailing dot
}

func (h *lineHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }

func (h *lineHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(h.prefix)
	if r.Level >= slog.LevelWarn {
		b.WriteString("warning: ")
	}
	b.WriteString(r.Message)
	write := func(a slog.Attr) bool {
		if a.Equal(slog.Attr{}) {
			return true
		}
		b.WriteByte(' ')
		b.WriteString(h.group + a.Key)
		b.WriteByte('=')
		b.WriteString(attrText(a.Value))
		return true
	}
	for _, a := range h.attrs {
		write(a)
	}
	r.Attrs(write)
	b.WriteByte('\n')
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := io.WriteString(h.w, b.String())
	return err
}

// attrText is an attribute's value as a word: quoted when it has spaces or
// quotes in it.
func attrText(v slog.Value) string {
	v = v.Resolve()
	var s string
	switch v.Kind() {
	case slog.KindDuration:
		s = v.Duration().String()
	case slog.KindTime:
		s = v.Time().UTC().Format(time.RFC3339Nano)
	default:
		s = fmt.Sprint(v.Any())
	}
	if s == "" || strings.ContainsAny(s, " \t\n\"=") {
		return strconv.Quote(s)
	}
	return s
}

func (h *lineHandler) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append(append([]slog.Attr(nil), h.attrs...), as...)
	return &c
}

func (h *lineHandler) WithGroup(name string) slog.Handler {
	c := *h
	c.group += name + "."
	return &c
}
