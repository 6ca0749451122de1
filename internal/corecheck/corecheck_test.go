// Package corecheck holds a test that keeps heed's core packages free of
// dependencies outside the standard library.
package corecheck

import (
	"go/build"
	"path"
	"strings"
	"testing"
)

const module = "github.com/heed-go/heed"

// core lists the packages that may import only the standard library and
// each other (internal/stripe is a helper of budget and breaker).
var core = []string{"clock", "backoff", "retry", "budget", "breaker", "deadline", "internal/stripe"}

func TestCoreImportsOnlyStandardLibrary(t *testing.T) {
	allowed := map[string]bool{}
	for _, c := range core {
		allowed[path.Join(module, c)] = true
	}
	for _, c := range core {
		pkg, err := build.Import(path.Join(module, c), ".", 0)
		if err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		if len(pkg.GoFiles) == 0 {
			t.Fatalf("%s: no Go files found", c)
		}
		for _, imp := range pkg.Imports {
			if allowed[imp] || isStd(imp) {
				continue
			}
			t.Errorf("core package %s imports %s, which is neither the standard library nor another core package", c, imp)
		}
	}
}

// isStd reports whether an import path belongs to the standard library: its
// first element has no dot.
func isStd(p string) bool {
	first, _, _ := strings.Cut(p, "/")
	return !strings.Contains(first, ".")
}

func TestIsStd(t *testing.T) {
	for p, want := range map[string]bool{
		"fmt": true, "net/http": true, "github.com/x/y": false, "golang.org/x/sync": false, module + "/queue": false,
	} {
		if isStd(p) != want {
			t.Errorf("isStd(%q) = %v", p, !want)
		}
	}
}
