package corecheck

import (
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// DESIGN.md's package map cannot fall behind the code: every package of
// the layering (test-only ones included) has a row, and each module's row
// in the module table counts its internal packages right. A new package
// fails here until it is described there.
func TestDesignMapHasEveryPackage(t *testing.T) {
	b, err := os.ReadFile("../../DESIGN.md")
	if err != nil {
		t.Fatal(err)
	}
	design := string(b)
	pkgs, core := walk(t)
	all := map[string]bool{}
	for pkg := range pkgs {
		all[pkg] = true
	}
	for pkg := range core {
		all[pkg] = true
	}
	delete(all, ".")
	var missing []string
	internal := map[string]int{}
	for pkg := range all {
		row := "| `" + pkg + "`"
		if !strings.Contains(design, row+":") && !strings.Contains(design, row+" |") {
			missing = append(missing, pkg)
		}
		if pkg == "internal" || strings.HasPrefix(pkg, "internal/") || strings.Contains(pkg, "/internal/") || strings.HasSuffix(pkg, "/internal") {
			internal[moduleOf(pkg)]++
		}
	}
	sort.Strings(missing)
	for _, pkg := range missing {
		t.Errorf("DESIGN.md's package map has no row for %s: add one (what it is, for whom, its imports)", pkg)
	}
	for _, m := range append([]string{"."}, modules...) {
		path := module
		if m != "." {
			path += "/" + m
		}
		row := regexp.MustCompile("(?m)^\\| `" + regexp.QuoteMeta(path) + "` \\|([^|]*)\\|").FindStringSubmatch(design)
		if row == nil {
			t.Errorf("DESIGN.md's module table has no row for %s", path)
			continue
		}
		want := ""
		if n := internal[m]; n > 0 {
			want = fmt.Sprintf("and %d internal", n)
		}
		got := regexp.MustCompile(`and \d+ internal`).FindString(row[1])
		if got != want {
			t.Errorf("DESIGN.md's module table says %q for %s; it has %d internal packages", got, path, internal[m])
		}
	}
}
