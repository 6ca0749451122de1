//go:build unix

package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// readmeExample is a "$ heed ..." command in a block of the README or of a
// page of docs/, and the output the page shows for it.
type readmeExample struct {
	line string   // of the command: file:line
	cmd  string   // as written, continuation lines joined
	args []string // after "heed" (or "go run ./cmd/heed")
	want []string // the lines shown after it; "..." stands for any lines
}

// readmeExamples returns every command shown with its output in README.md
// and docs/*.md: the blocks without a language that hold a line starting
// with "$ ".
func readmeExamples(t *testing.T) []readmeExample {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join(repoRoot(t), "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := docExamples(t, "README.md")
	for _, name := range docs {
		out = append(out, docExamples(t, "docs/"+filepath.Base(name))...)
	}
	return out
}

// docExamples returns the examples of one document, named by its path from
// the repository's root.
func docExamples(t *testing.T, name string) []readmeExample {
	t.Helper()
	lines := strings.Split(repoFile(t, name), "\n")
	var out []readmeExample
	for i := 0; i < len(lines); i++ {
		if !strings.HasPrefix(lines[i], "```") {
			continue
		}
		end := i + 1
		for end < len(lines) && !strings.HasPrefix(lines[end], "```") {
			end++
		}
		if lines[i] != "```" || end == len(lines) {
			i = end // a block with a language: code, not output
			continue
		}
		block := lines[i+1 : end]
		var cur *readmeExample
		for j := 0; j < len(block); j++ {
			l := block[j]
			if cmd, ok := strings.CutPrefix(l, "$ "); ok {
				ex := readmeExample{line: fmt.Sprintf("%s:%d", name, i+2+j)}
				for strings.HasSuffix(cmd, `\`) && j+1 < len(block) {
					j++
					cmd = strings.TrimSuffix(cmd, `\`) + " " + strings.TrimSpace(block[j])
				}
				ex.cmd = cmd
				words, err := shellWords(cmd)
				if err != nil {
					t.Fatalf("%s: %v", ex.line, err)
				}
				switch {
				case len(words) > 0 && words[0] == "heed":
					ex.args = words[1:]
				case len(words) > 2 && strings.Join(words[:3], " ") == "go run ./cmd/heed":
					ex.args = words[3:]
				default:
					t.Fatalf("%s: %q does not run heed", ex.line, cmd)
				}
				out = append(out, ex)
				cur = &out[len(out)-1]
				continue
			}
			if cur != nil {
				cur.want = append(cur.want, strings.TrimRight(l, " "))
			}
		}
		i = end
	}
	return out
}

// shellWords splits a command line as sh does for the simple quoting the
// README uses: spaces, single and double quotes.
func shellWords(s string) ([]string, error) {
	var words []string
	var w strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		case c == '\'' || c == '"':
			j := strings.IndexByte(s[i+1:], c)
			if j < 0 {
				return nil, errUnclosedQuote
			}
			w.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	return words, nil
}

var errUnclosedQuote = errors.New("unclosed quote")

// repoRoot returns the repository's root: the nearest directory above the
// test's that holds DESIGN.md (the test may live at any depth).
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "DESIGN.md")); err == nil {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatal("no DESIGN.md above the test's directory")
		}
		dir = up
	}
}

// repoFile returns the text of a file named by its path from the
// repository's root.
func repoFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), filepath.FromSlash(name)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// matchLines reports whether got matches want, where a want line "..."
// stands for any number of lines.
func matchLines(want, got []string) bool {
	if len(want) == 0 {
		return len(got) == 0
	}
	if want[0] == "..." {
		for k := 0; k <= len(got); k++ {
			if matchLines(want[1:], got[k:]) {
				return true
			}
		}
		return false
	}
	return len(got) > 0 && want[0] == got[0] && matchLines(want[1:], got[1:])
}

// Normalisations of output that varies from run to run: instants, clock
// times, durations, worker names; then runs of spaces, which tables widen
// or narrow with the values.
var (
	reInstant  = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z`)
	reClock    = regexp.MustCompile(`\b\d\d:\d\d:\d\d\.\d+\b`)
	reDuration = regexp.MustCompile(`\b(\d+(\.\d+)?(ns|µs|us|ms|s|m|h))+\b`)
	reWorker   = regexp.MustCompile(`\b[\w.]+(-[\w.]+)*-\d+-[0-9a-f]+\b`)
	reSpaces   = regexp.MustCompile(` {2,}`)
)

func normalize(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		l = reInstant.ReplaceAllString(l, "INSTANT")
		l = reClock.ReplaceAllString(l, "CLOCK")
		l = reWorker.ReplaceAllString(l, "WORKER")
		l = reDuration.ReplaceAllString(l, "DUR")
		out[i] = reSpaces.ReplaceAllString(l, "  ")
	}
	return out
}

// Every command the README and docs/ show with their output prints that output: the
// deterministic ones exactly, the others (instants, durations) after
// normalisation. A README example that no case below knows fails the test,
// so none goes unchecked.
func TestREADMEExamples(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the README's commands, a simulation among them")
	}
	examples := readmeExamples(t)
	if len(examples) < 5 {
		t.Fatalf("found %d examples in README.md and docs/; the parser is broken", len(examples))
	}
	dir := t.TempDir()
	t.Chdir(dir)
	db := filepath.Join(dir, "heed.db")
	t.Setenv("HEED_DB", db)

	// setup prepares what an example needs; varies marks output compared
	// after normalisation.
	cases := map[string]struct {
		setup  func(t *testing.T)
		varies bool
	}{
		"heed jobs show": {varies: true, setup: func(t *testing.T) {
			// Five jobs as the demo's, then the README's tour before
			// "heed jobs show 7".
			for range 5 {
				mustHeed(t, 0, "jobs", "enqueue", "noop", `{}`)
			}
			mustHeed(t, 0, "jobs", "enqueue", "fail", `{"times": 2}`)
			mustHeed(t, 0, "jobs", "enqueue", "fail", `{"permanent": true, "message": "invalid address"}`)
			mustHeed(t, 0, "jobs", "work", "--base", "10ms", "--until-empty", "--quiet")
		}},
		"heed get":       {},
		"heed sim":       {},
		"heed plan":      {},
		"heed run":       {},
		"go run ./cmd/h": {},
	}
	for _, ex := range examples {
		t.Run(ex.cmd, func(t *testing.T) {
			key := ""
			for k := range cases {
				if strings.HasPrefix(ex.cmd, k) && len(k) > len(key) {
					key = k
				}
			}
			c, ok := cases[key]
			if !ok {
				t.Fatalf("%s: no case for %q; add one", ex.line, ex.cmd)
			}
			if c.setup != nil {
				c.setup(t)
			}
			var out bytes.Buffer
			Main(context.Background(), ex.args, strings.NewReader(""), &out, &out)
			got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
			for i := range got {
				got[i] = strings.TrimRight(got[i], " ")
			}
			want := ex.want
			if c.varies {
				want, got = normalize(want), normalize(got)
			}
			if !matchLines(want, got) {
				t.Errorf("%s: $ %s\nthe page shows:\n%s\nthe command prints:\n%s",
					ex.line, ex.cmd, strings.Join(ex.want, "\n"), out.String())
			}
		})
	}
}

func TestMatchLines(t *testing.T) {
	for _, tt := range []struct {
		want, got string
		ok        bool
	}{
		{"a b c", "a b c", true},
		{"a ... c", "a x y c", true},
		{"a ... c", "a c", true},
		{"a ...", "a", true},
		{"a b", "a b c", false},
		{"a ... c", "a x y", false},
		{"a b", "a c", false},
	} {
		if got := matchLines(strings.Fields(tt.want), strings.Fields(tt.got)); got != tt.ok {
			t.Errorf("matchLines(%q, %q) = %v", tt.want, tt.got, got)
		}
	}
}
