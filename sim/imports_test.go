package sim

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The simulator's core uses only the standard library and heed's core
// packages; charts and file formats live elsewhere (sim/chart, the CLI).
func TestImportsStayPure(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	allowed := map[string]bool{}
	for _, p := range []string{"backoff", "breaker", "budget", "clock", "retry", "sim"} {
		allowed["github.com/heed-go/heed/"+p] = true
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range af.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if first, _, _ := strings.Cut(path, "/"); strings.Contains(first, ".") && !allowed[path] {
				t.Errorf("%s imports %s", f, path)
			}
		}
	}
}
