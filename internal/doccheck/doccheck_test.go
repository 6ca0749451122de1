// Package doccheck keeps heed's documents true to the code: every Go name
// that README.md, DESIGN.md and docs/*.md mention (`retry.Policy`,
// `queue.Client.Cancel`, `retry/executortest.Run`) is an exported
// declaration of that package, every path they name exists, and the README
// stays a five-minute read. Names are renamed and moved often; a document
// that still says the old one misleads every reader until someone notices,
// so this test notices.
//
// It reads the source with go/parser, the standard library only, so it
// runs in the core module and sees every module of the repository.
package doccheck

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// modulePath is the import path of the root module; the other modules of
// the repository are under it.
const modulePath = "github.com/heed-go/heed"

// maxReadmeLines is what a newcomer reads in five minutes (issue 32).
const maxReadmeLines = 300

// skipped are documents whose names need not resolve: the changelog names
// what was removed or renamed, by design.
var skipped = []string{"docs/CHANGELOG.md"}

// root returns the repository's root: the nearest directory above the
// test's that holds DESIGN.md.
func root(t *testing.T) string {
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

// documents returns the paths, from the root, of the documents checked.
func documents(t *testing.T, rootDir string) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join(rootDir, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := []string{"README.md", "DESIGN.md"}
	for _, d := range docs {
		name := "docs/" + filepath.Base(d)
		if !slices.Contains(skipped, name) {
			out = append(out, name)
		}
	}
	return out
}

// pkg is what a package declares at top level, read from its non-test
// files.
type pkg struct {
	dir   string                // from the root, slash-separated
	name  string                // its package clause
	decls map[string]bool       // exported and unexported top-level names
	types map[string]*typeDecl  // by name
	files map[*ast.File]imports // each file's imports, for embedded types
}

// imports maps a file's import names to import paths.
type imports map[string]string

// typeDecl is one type's members: methods declared on it, fields and
// interface methods of its type expression, and the types it embeds (or is
// an alias or a definition of), whose members it has too.
type typeDecl struct {
	members  map[string]bool
	embedded []ast.Expr
	file     *ast.File
}

// loadPackages parses every package of the repository, every module
// included, keyed by its directory from the root.
func loadPackages(t *testing.T, rootDir string) map[string]*pkg {
	t.Helper()
	pkgs := map[string]*pkg{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(rootDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != rootDir && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(rootDir, filepath.Dir(p))
		rel = filepath.ToSlash(rel)
		pk := pkgs[rel]
		if pk == nil {
			pk = &pkg{dir: rel, decls: map[string]bool{}, types: map[string]*typeDecl{}, files: map[*ast.File]imports{}}
			pkgs[rel] = pk
		}
		pk.add(f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) < 20 {
		t.Fatalf("found only %d packages under %s", len(pkgs), rootDir)
	}
	return pkgs
}

// add records one file's declarations.
func (pk *pkg) add(f *ast.File) {
	imps := imports{}
	for _, s := range f.Imports {
		p, _ := strconv.Unquote(s.Path.Value)
		name := path.Base(p)
		if s.Name != nil {
			name = s.Name.Name
		}
		imps[name] = p
	}
	pk.files[f] = imps
	pk.name = f.Name.Name
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil {
				pk.decls[d.Name.Name] = true
				continue
			}
			if recv := receiverName(d.Recv.List[0].Type); recv != "" {
				pk.typ(recv, f).members[d.Name.Name] = true
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.ValueSpec:
					for _, n := range s.Names {
						pk.decls[n.Name] = true
					}
				case *ast.TypeSpec:
					pk.decls[s.Name.Name] = true
					td := pk.typ(s.Name.Name, f)
					td.file = f
					addMembers(td, s.Type)
				}
			}
		}
	}
}

// typ returns the record of a type, made on first use (a method may come
// before its type).
func (pk *pkg) typ(name string, f *ast.File) *typeDecl {
	td := pk.types[name]
	if td == nil {
		td = &typeDecl{members: map[string]bool{}, file: f}
		pk.types[name] = td
	}
	return td
}

// receiverName returns the type name of a method's receiver: T, *T, T[P].
func receiverName(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.ParenExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}

// addMembers records the fields and interface methods of a type
// expression, and what it embeds or names.
func addMembers(td *typeDecl, e ast.Expr) {
	switch x := e.(type) {
	case *ast.StructType:
		for _, fl := range x.Fields.List {
			if len(fl.Names) == 0 {
				td.embedded = append(td.embedded, fl.Type)
			}
			for _, n := range fl.Names {
				td.members[n.Name] = true
			}
		}
	case *ast.InterfaceType:
		for _, m := range x.Methods.List {
			if len(m.Names) == 0 {
				td.embedded = append(td.embedded, m.Type)
			}
			for _, n := range m.Names {
				td.members[n.Name] = true
			}
		}
	default:
		// An alias or a definition over another type: its members
		// (fields at least) are that type's.
		td.embedded = append(td.embedded, e)
	}
}

// hasMember reports whether type name of pk has the member, directly or
// through what it embeds, in this package or another of the repository's.
func hasMember(pkgs map[string]*pkg, pk *pkg, name, member string, seen map[string]bool) bool {
	key := pk.dir + "." + name
	if seen[key] {
		return false
	}
	seen[key] = true
	td := pk.types[name]
	if td == nil {
		return false
	}
	if td.members[member] {
		return true
	}
	for _, e := range td.embedded {
		for {
			if s, ok := e.(*ast.StarExpr); ok {
				e = s.X
				continue
			}
			if ix, ok := e.(*ast.IndexExpr); ok {
				e = ix.X
				continue
			}
			if ix, ok := e.(*ast.IndexListExpr); ok {
				e = ix.X
				continue
			}
			break
		}
		switch x := e.(type) {
		case *ast.Ident:
			if x.Name == member {
				return true // the embedded field's own name
			}
			if hasMember(pkgs, pk, x.Name, member, seen) {
				return true
			}
		case *ast.SelectorExpr:
			if x.Sel.Name == member {
				return true
			}
			id, ok := x.X.(*ast.Ident)
			if !ok {
				continue
			}
			imp := pk.files[td.file][id.Name]
			if imp == modulePath || !strings.HasPrefix(imp, modulePath+"/") {
				continue // outside the repository: not checked, not counted
			}
			if other := pkgs[strings.TrimPrefix(imp, modulePath+"/")]; other != nil && hasMember(pkgs, other, x.Sel.Name, member, seen) {
				return true
			}
		}
	}
	return false
}

// mention is a Go name or a path a document mentions.
type mention struct {
	where string // file:line
	text  string // as written: retry.Policy.Hedge, retry/executortest
}

// A name: a package (a path from the root, or a package's name) and an
// exported name, maybe a member. The character before it must not belong to
// a longer word or path (heed.retry.attempts is a metric, not a name).
var nameRE = regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_]*(?:/[A-Za-z_][A-Za-z0-9_]*)*)\.([A-Z][A-Za-z0-9_]*)(?:\.([A-Za-z_][A-Za-z0-9_]*))?`)

// A path in the repository, as a whole code span: internal/cli/help,
// queue/storetest, docs/overload.md.
var pathRE = regexp.MustCompile(`^[a-z][a-z0-9_]*(?:/[A-Za-z0-9_.\-]+)*/$|^[a-z][a-z0-9_]*(?:/[A-Za-z0-9_.\-]+)+/?$`)

// goName matches a path that ends in a Go name (internal/admit.Core), which
// the name check covers.
var goName = regexp.MustCompile(`\.[A-Z][A-Za-z0-9_]*$`)

// spans returns a document's inline code spans and the lines of its Go
// code blocks, each with its line number. Other fenced blocks (shell,
// output) are not Go.
func spans(text string) (inline, code []mention) {
	inFence, goFence := false, false
	for i, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			if !inFence {
				inFence = true
				goFence = strings.TrimSpace(line) == "```go"
			} else {
				inFence, goFence = false, false
			}
			continue
		}
		if inFence {
			if goFence {
				code = append(code, mention{where: strconv.Itoa(i + 1), text: line})
			}
			continue
		}
		rest := line
		for {
			a := strings.IndexByte(rest, '`')
			if a < 0 {
				break
			}
			b := strings.IndexByte(rest[a+1:], '`')
			if b < 0 {
				break
			}
			inline = append(inline, mention{where: strconv.Itoa(i + 1), text: rest[a+1 : a+1+b]})
			rest = rest[a+1+b+1:]
		}
	}
	return inline, code
}

// names returns the mentions of Go names in one piece of text.
func names(s string) [][3]string {
	var out [][3]string
	for _, m := range nameRE.FindAllStringSubmatchIndex(s, -1) {
		if m[0] > 0 && strings.ContainsRune("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./", rune(s[m[0]-1])) {
			continue
		}
		var n [3]string
		for g := 1; g <= 3; g++ {
			if m[2*g] >= 0 {
				n[g-1] = s[m[2*g]:m[2*g+1]]
			}
		}
		out = append(out, n)
	}
	return out
}

// A member named without its package, Type.Member: Client.SetLimit,
// Policy.Hedge.
var memberRE = regexp.MustCompile(`([A-Z][A-Za-z0-9_]*)\.([A-Z][A-Za-z0-9_]*)`)

// members returns the mentions of Type.Member without a package in one
// piece of text.
func members(s string) [][2]string {
	var out [][2]string
	for _, m := range memberRE.FindAllStringSubmatchIndex(s, -1) {
		if m[0] > 0 && strings.ContainsRune("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./", rune(s[m[0]-1])) {
			continue
		}
		out = append(out, [2]string{s[m[2]:m[3]], s[m[4]:m[5]]})
	}
	return out
}

// typesNamed returns the packages that declare a type of that name.
func typesNamed(pkgs map[string]*pkg, name string) []*pkg {
	var out []*pkg
	for _, pk := range pkgs {
		if td := pk.types[name]; td != nil && pk.decls[name] && pk.name != "main" {
			out = append(out, pk)
		}
	}
	return out
}

// byName maps what a document may call a package (its path from the root,
// or its package name) to the packages it may mean. Commands (package
// main) have no names to mention.
func byName(pkgs map[string]*pkg) map[string][]*pkg {
	out := map[string][]*pkg{}
	for dir, pk := range pkgs {
		if pk.name == "main" {
			continue
		}
		out[dir] = append(out[dir], pk)
		if pk.name != dir {
			out[pk.name] = append(out[pk.name], pk)
		}
	}
	return out
}

// resolves reports whether an exported name (and member) is declared in
// one of the packages.
func resolves(pkgs map[string]*pkg, cands []*pkg, name, member string) bool {
	for _, pk := range cands {
		if !pk.decls[name] {
			continue
		}
		if member == "" || !ast.IsExported(member) {
			return true
		}
		if hasMember(pkgs, pk, name, member, map[string]bool{}) {
			return true
		}
	}
	return false
}

func TestDocumentedNamesResolve(t *testing.T) {
	rootDir := root(t)
	pkgs := loadPackages(t, rootDir)
	known := byName(pkgs)
	checked := 0
	for _, doc := range documents(t, rootDir) {
		b, err := os.ReadFile(filepath.Join(rootDir, filepath.FromSlash(doc)))
		if err != nil {
			t.Fatal(err)
		}
		inline, code := spans(string(b))
		for _, m := range append(inline, code...) {
			for _, n := range names(m.text) {
				cands := known[n[0]]
				if cands == nil {
					continue // not one of heed's packages: http.Client, pgx.Tx
				}
				checked++
				if os.Getenv("DOCCHECK_VERBOSE") != "" {
					t.Logf("%s:%s: %s.%s.%s", doc, m.where, n[0], n[1], n[2])
				}
				if !resolves(pkgs, cands, n[1], n[2]) {
					full := n[0] + "." + n[1]
					if n[2] != "" && ast.IsExported(n[2]) {
						full += "." + n[2]
					}
					t.Errorf("%s:%s: `%s` is not an exported name of package %s (in %q)", doc, m.where, full, cands[0].dir, m.text)
				}
			}
		}
		for _, m := range append(inline, code...) {
			for _, n := range members(m.text) {
				owners := typesNamed(pkgs, n[0])
				if owners == nil {
					continue // not one of heed's types: JobArgs.Kind is River's
				}
				checked++
				if !slices.ContainsFunc(owners, func(pk *pkg) bool { return hasMember(pkgs, pk, n[0], n[1], map[string]bool{}) }) {
					t.Errorf("%s:%s: `%s.%s`: no type %s of heed's has a member %s (in %q)", doc, m.where, n[0], n[1], n[0], n[1], m.text)
				}
			}
		}
		for _, m := range inline {
			p := strings.TrimSuffix(m.text, "/")
			if !pathRE.MatchString(m.text) || goName.MatchString(p) {
				continue
			}
			top, _, _ := strings.Cut(p, "/")
			if fi, err := os.Stat(filepath.Join(rootDir, top)); (err != nil || !fi.IsDir()) && !strings.HasSuffix(m.text, "/") {
				continue // not a path of the repository, unless it says it is a directory (docs/)
			}
			checked++
			if _, err := os.Stat(filepath.Join(rootDir, filepath.FromSlash(p))); err != nil {
				t.Errorf("%s:%s: `%s` names no file or directory of the repository", doc, m.where, m.text)
			}
		}
	}
	if checked < 100 {
		t.Errorf("checked only %d names; the extraction is broken", checked)
	}
	t.Logf("%d names and paths checked", checked)
}

func TestReadmeLength(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n > maxReadmeLines {
		t.Errorf("README.md has %d lines, more than %d: move the detail to docs/", n, maxReadmeLines)
	}
}

// The extraction itself, on the forms the documents use.
func TestNames(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want string
	}{
		{"retry.Policy", "retry.Policy."},
		{"queue.Client.Cancel", "queue.Client.Cancel"},
		{"retry/executortest.Run", "retry/executortest.Run."},
		{"retryhttp.Transport{Propagate: retryhttp.PropagateTo(\"x\")}", "retryhttp.Transport. retryhttp.PropagateTo."},
		{"heed.retry.attempts", ""},
		{"x.retry.Policy", ""},
		{"retry.outcome", ""},
		{"retry/slog.go", ""},
		{"&retryhttp.Transport{}", "retryhttp.Transport."},
	} {
		var got []string
		for _, n := range names(tt.in) {
			got = append(got, fmt.Sprintf("%s.%s.%s", n[0], n[1], n[2]))
		}
		if g := strings.Join(got, " "); g != tt.want {
			t.Errorf("names(%q) = %q, want %q", tt.in, g, tt.want)
		}
	}
}
