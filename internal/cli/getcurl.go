package cli

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// splitShortFlags rewrites curl's combined one-letter flags as the flag
// package takes them: "-fsSL" as "-f -s -S -L", "-sSo FILE" as "-s -S -o
// FILE", "-oFILE" as "-o FILE". Words that are values of flags, and words
// after "--", are left alone.
func splitShortFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	takesValue := func(f *flag.Flag) bool {
		b, ok := f.Value.(interface{ IsBoolFlag() bool })
		return !ok || !b.IsBoolFlag()
	}
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...), nil
		}
		if len(a) < 2 || a[0] != '-' {
			out = append(out, a)
			continue
		}
		name := strings.TrimLeft(a, "-")
		if strings.Contains(name, "=") || fs.Lookup(name) != nil || strings.HasPrefix(a, "--") || len(name) == 1 || name == "help" {
			// A flag as the flag package takes it; its value, if it takes
			// one and has no "=", is the next word.
			out = append(out, a)
			if f := fs.Lookup(name); f != nil && takesValue(f) && i+1 < len(args) {
				out = append(out, args[i+1])
				i++
			}
			continue
		}
		for j := 0; j < len(name); j++ {
			c := name[j : j+1]
			f := fs.Lookup(c)
			if f == nil {
				return nil, fmt.Errorf("flag provided but not defined: -%s (in %s)", c, a)
			}
			out = append(out, "-"+c)
			if takesValue(f) {
				if rest := name[j+1:]; rest != "" {
					out = append(out, rest)
				} else if i+1 < len(args) {
					out = append(out, args[i+1])
					i++
				}
				break
			}
		}
	}
	return out, nil
}

// getStats is what -w reports about a call.
type getStats struct {
	start     time.Time
	method    string
	url       string // the last one requested
	attempts  int    // in all, over every hop
	hops      int    // requests sent by the client: 1 + redirects followed
	redirects int
	resp      *http.Response // the final one, or nil
	size      int64          // bytes written of the body (and head, with -i)
	err       error          // what ended the call, when it failed
	total     time.Duration
	code      int // heed get's exit code
}

// writeOutVars are the variables of -w, each with its value as text and as
// JSON.
var writeOutVars = map[string]func(st *getStats) any{
	"http_code":     func(st *getStats) any { return st.status() },
	"response_code": func(st *getStats) any { return st.status() },
	"num_attempts":  func(st *getStats) any { return st.attempts },
	"num_retries":   func(st *getStats) any { return max(st.attempts-st.hops, 0) },
	"num_redirects": func(st *getStats) any { return st.redirects },
	"time_total":    func(st *getStats) any { return json.Number(strconv.FormatFloat(st.total.Seconds(), 'f', 6, 64)) },
	"url_effective": func(st *getStats) any { return st.url },
	"size_download": func(st *getStats) any { return st.size },
	"method":        func(st *getStats) any { return st.method },
	"exitcode":      func(st *getStats) any { return st.code },
	"content_type": func(st *getStats) any {
		if st.resp == nil {
			return ""
		}
		return st.resp.Header.Get("Content-Type")
	},
	"errormsg": func(st *getStats) any {
		if st.err == nil {
			return ""
		}
		return st.err.Error()
	},
}

func (st *getStats) status() int {
	if st.resp == nil {
		return 0
	}
	return st.resp.StatusCode
}

// writeOutFormat is the -w flag: a format with %{variables}, parsed when the flag
// is set so that an unknown variable is a usage error.
type writeOutFormat struct {
	set   bool
	parts []writeOutPiece
}

type writeOutPiece struct {
	text string // literal text, when name is ""
	name string
}

func (w *writeOutFormat) String() string { return "" }

func (w *writeOutFormat) Set(format string) error {
	var parts []writeOutPiece
	var lit strings.Builder
	for i := 0; i < len(format); i++ {
		c := format[i]
		switch {
		case c == '\\' && i+1 < len(format):
			i++
			switch format[i] {
			case 'n':
				lit.WriteByte('\n')
			case 't':
				lit.WriteByte('\t')
			case 'r':
				lit.WriteByte('\r')
			case '\\':
				lit.WriteByte('\\')
			default:
				lit.WriteByte('\\')
				lit.WriteByte(format[i])
			}
		case c == '%' && strings.HasPrefix(format[i:], "%%"):
			lit.WriteByte('%')
			i++
		case c == '%' && strings.HasPrefix(format[i:], "%{"):
			end := strings.IndexByte(format[i:], '}')
			if end < 0 {
				return fmt.Errorf("%q: %%{ without a closing }", format)
			}
			name := format[i+2 : i+end]
			if _, ok := writeOutVars[name]; !ok && name != "json" {
				return fmt.Errorf("unknown variable %%{%s} (see heed get --help)", name)
			}
			if lit.Len() > 0 {
				parts = append(parts, writeOutPiece{text: lit.String()})
				lit.Reset()
			}
			parts = append(parts, writeOutPiece{name: name})
			i += end
		default:
			lit.WriteByte(c)
		}
	}
	if lit.Len() > 0 {
		parts = append(parts, writeOutPiece{text: lit.String()})
	}
	w.set, w.parts = true, parts
	return nil
}

// write writes the format with st's values to out.
func (w *writeOutFormat) write(out io.Writer, st *getStats) error {
	var b strings.Builder
	for _, p := range w.parts {
		switch p.name {
		case "":
			b.WriteString(p.text)
		case "json":
			all := make(map[string]any, len(writeOutVars))
			for name, v := range writeOutVars {
				all[name] = v(st)
			}
			j, err := json.Marshal(all) // keys sorted
			if err != nil {
				return err
			}
			b.Write(j)
		case "http_code", "response_code":
			fmt.Fprintf(&b, "%03d", st.status())
		default:
			fmt.Fprint(&b, writeOutVars[p.name](st))
		}
	}
	_, err := io.WriteString(out, b.String())
	return err
}
