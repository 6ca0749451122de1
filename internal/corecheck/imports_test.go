package corecheck

import (
	"go/build"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/heed-go/heed"

// The layering of heed, as DESIGN.md draws it. Every package of the module
// has a place here, so that a new one says where it belongs; the test fails
// for a package that is missing.
//
// Core packages import only the standard library and the core packages
// before them in core. Adapters import core packages, the internal helpers,
// and the other adapters that arrows names for them, never any other.
// Packages at the top (the command) import anything in the module. Test
// helper packages (a path ending in "test", such as queue/storetest) may
// import what the package they test may, that package, and the suites and
// fakes of the core (retry/executortest, clock/clocktest). Outside the
// module and the standard library, a package imports only the modules
// external names for it: database drivers only in the stores.
var (
	core    = []string{"clock", "internal/clockctx", "internal/docjson", "internal/wire", "internal/fielderr", "internal/uniform", "backoff", "budget", "breaker", "deadline", "internal/admit", "overload", "internal/redact", "internal/attemptlog", "retry"}
	helpers = []string{"internal/duration", "internal/textfmt", "cmd/heed/internal/signals", "internal/corecheck", "internal/cron", "internal/leakcheck", "internal/benchpair"}
	arrows  = map[string][]string{
		"internal/dest":                nil, // per-destination budget and breaker, for the client executors
		"internal/admitfirst":          nil, // a first attempt without a retry.Call, for heedgrpc
		"retryhttp":                    {"internal/dest"},
		"heedgrpc":                     {"internal/dest", "internal/admitfirst"},
		"queue/internal/check":         nil,                      // the input checks queue and queue/jobstore share
		"queue/jobstore":               {"queue/internal/check"}, // the store side of the queue: what a store implements and is given
		"queue":                        {"queue/jobstore", "queue/internal/check"},
		"sim":                          nil,
		"sim/chart":                    {"sim"},
		"cmd/heed/internal/plan":       nil, // heed's planner: schedules, a chain's load, deadline plan reviews
		"cmd/heed/internal/planfile":   {"cmd/heed/internal/plan"},
		"internal/schema":              {"queue/jobstore"}, // the stores' one migration runner
		"internal/sqlfilter":           {"queue/jobstore"}, // the stores' one JobFilter->SQL builder
		"internal/liststate":           {"queue/jobstore"}, // the list states and last error of heed jobs ls and the dashboard
		"sqlitestore":                  {"queue", "queue/jobstore", "idempotency", "idempotency/keystore", "internal/schema", "internal/sqlfilter"},
		"pgstore/internal/pgtest":      nil, // the test server's URL, for pgstore's own tests
		"pgstore":                      {"queue", "queue/jobstore", "idempotency", "idempotency/keystore", "internal/schema", "internal/sqlfilter", "pgstore/internal/pgtest"},
		"ui":                           {"queue", "queue/jobstore", "internal/liststate"}, // the dashboard over a queue client
		"cmd/heed/internal/storeurl":   {"queue", "queue/jobstore", "idempotency/keystore", "sqlitestore", "pgstore"},
		"heedotel":                     {"queue", "queue/jobstore", "retryhttp", "heedgrpc"}, // it observes their events
		"heedotel/promexport":          {"heedotel"},
		"cmd/heed/internal/jobkinds":   {"queue", "queue/jobstore", "retryhttp"},                                                // the command's built-in job kinds
		"internal/enginetest":          {"retry/executortest"},                                                                  // what the job-engine adapters' tests share
		"internal/chaintest":           {"retryhttp"},                                                                           // three real services on loopback, for load tests
		"cmd/heed/internal/cmdrun":     nil,                                                                                     // heed run's executor: a command as a retry attempt
		"cmd/heed/internal/curl":       {"retryhttp"},                                                                           // what heed get takes from curl: flags, -w, output
		"cmd/heed/internal/jobbench":   {"queue", "queue/jobstore", "cmd/heed/internal/storeurl", "cmd/heed/internal/jobkinds"}, // heed jobs bench's harness
		"cmd/heed/internal/planreport": {"cmd/heed/internal/plan"},                                                              // heed plan's report: a schedule and a chain's load
		"cmd/heed/internal/jobtext":    {"queue", "queue/jobstore", "internal/liststate"},                                       // how the command prints jobs
		"cmd/heed/internal/jobrun":     {"queue", "queue/jobstore", "cmd/heed/internal/jobkinds"},                               // the command's worker runner
	}
	// leaves are adapters that import only the standard library and the
	// helpers given: idempotency, so that any server can import it, and its
	// store side, idempotency/keystore (what a store implements and is given).
	leaves   = map[string][]string{"idempotency": {"internal/redact", "idempotency/keystore"}, "idempotency/keystore": nil}
	top      = []string{"cmd/heed/internal/cli", "cmd/heed"}
	external = map[string][]string{
		"sqlitestore":                {"modernc.org/sqlite"},
		"pgstore":                    {"github.com/jackc/pgx/v5"},
		"pgstore/pgstoretest":        {"github.com/jackc/pgx/v5"},
		"cmd/heed/internal/storeurl": {"github.com/jackc/pgx/v5/pgconn"},                     // PostgreSQL's error type, nothing else
		"heedotel":                   {"go.opentelemetry.io/otel", "google.golang.org/grpc"}, // gRPC's status codes, for heedgrpc's instruments
		"heedgrpc":                   {"google.golang.org/grpc", "google.golang.org/protobuf"},
		"heedotel/promexport":        {"go.opentelemetry.io/otel", "github.com/prometheus/client_golang"},
		"sim":                        {"go.yaml.in/yaml/v3"},
		"cmd/heed/internal/planfile": {"go.yaml.in/yaml/v3"},
		"sim/chart":                  {"gonum.org/v1/plot"},
		"cmd/heed/internal/cli":      {"github.com/mattn/go-isatty"},
		"cmd/heed/internal/cmdrun":   {"github.com/mattn/go-isatty", "golang.org/x/sys"},
	}
)

// mayImport returns the heed packages that pkg may import, and false when
// pkg has no place in the layering.
func mayImport(pkg string) ([]string, bool) {
	if i := slices.Index(core, pkg); i >= 0 {
		return slices.Clone(core[:i]), true
	}
	if slices.Contains(helpers, pkg) {
		return nil, true // the standard library only
	}
	if may, ok := leaves[pkg]; ok {
		return slices.Clone(may), true
	}
	if adapters, ok := arrows[pkg]; ok {
		return append(append(slices.Clone(core), helpers...), adapters...), true
	}
	if slices.Contains(top, pkg) {
		return nil, true // checked by the caller: anything
	}
	if parent, base := path.Split(pkg); parent != "" && strings.HasSuffix(base, "test") {
		parent = strings.TrimSuffix(parent, "/")
		may, ok := mayImport(parent)
		return append(append(may, parent, "retry/executortest", "retry/overtimetest", "clock/clocktest"), helpers...), ok
	}
	return nil, false
}

// modules are heed's modules besides the core (the root): each holds what
// needs a third-party module. The layering spans them all.
var modules = []string{"pgstore", "sqlitestore", "heedgrpc", "heedotel", "sim", "ui", "cmd/heed"}

// moduleOf returns the directory of the module that holds the package at
// rel, "." for the core.
func moduleOf(rel string) string {
	for _, m := range modules {
		if rel == m || strings.HasPrefix(rel, m+"/") {
			return m
		}
	}
	return "."
}

// packages returns the packages of heed's modules (relative import paths)
// and their non-test imports, read from the source with go/build.
func packages(t *testing.T) map[string][]string {
	pkgs, _ := walk(t)
	return pkgs
}

// walk returns packages' answer, and for each package of the core module
// every import, its tests' included.
func walk(t *testing.T) (pkgs, core map[string][]string) {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not found: %v", err)
	}
	pkgs, core = map[string][]string{}, map[string][]string{}
	err = filepath.WalkDir(root, func(dir string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, dir)
		rel = filepath.ToSlash(rel)
		name := d.Name()
		if rel != "." && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
			return filepath.SkipDir
		}
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil && rel != "." && !slices.Contains(modules, rel) {
			return filepath.SkipDir // a module outside the layering (internal/compare, the job engines' adapters)
		}
		p, err := build.ImportDir(dir, 0)
		if err != nil {
			if _, ok := err.(*build.NoGoError); ok {
				return nil
			}
			return err
		}
		if len(p.GoFiles) > 0 {
			pkgs[rel] = p.Imports
		}
		if moduleOf(rel) == "." {
			core[rel] = slices.Concat(p.Imports, p.TestImports, p.XTestImports)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) < 40 || len(core) < 20 {
		t.Fatalf("found only %d packages, %d in the core module: %v", len(pkgs), len(core), pkgs)
	}
	return pkgs, core
}

// The core module requires nothing, so that a program importing any of it
// has no third-party module in its build: its packages, tests included,
// import only the standard library and the core module's own packages.
func TestCoreModuleImportsOnlyItself(t *testing.T) {
	_, core := walk(t)
	for pkg, imports := range core {
		for _, imp := range imports {
			dep, heed := strings.CutPrefix(imp, module+"/")
			switch {
			case isStd(imp):
			case heed && moduleOf(dep) == ".":
			case heed:
				t.Errorf("%s (core module) imports %s, of the module %s: move the code, or the test, to that module", pkg, dep, moduleOf(dep))
			default:
				t.Errorf("%s (core module) imports %s, outside the standard library", pkg, imp)
			}
		}
	}
}

func TestLayering(t *testing.T) {
	for pkg, imports := range packages(t) {
		may, ok := mayImport(pkg)
		if !ok {
			t.Errorf("package %s has no place in the layering: add it to internal/corecheck/imports_test.go (and DESIGN.md's arrows)", pkg)
			continue
		}
		for _, imp := range imports {
			switch {
			case isStd(imp):
			case strings.HasPrefix(imp, module+"/"):
				dep := strings.TrimPrefix(imp, module+"/")
				if !slices.Contains(top, pkg) && !slices.Contains(may, dep) {
					t.Errorf("%s imports %s, which the layering does not allow (it may import: %s)", pkg, dep, strings.Join(may, ", "))
				}
			default:
				if !slices.ContainsFunc(external[pkg], func(m string) bool { return imp == m || strings.HasPrefix(imp, m+"/") }) {
					t.Errorf("%s imports %s, a module outside the standard library that the layering does not allow", pkg, imp)
				}
			}
		}
	}
}

// The rules themselves: a table of what a violation looks like.
func TestMayImport(t *testing.T) {
	for _, tt := range []struct {
		pkg, dep string
		want     bool
	}{
		{"retry", "backoff", true},
		{"retry", "budget", true},
		{"backoff", "retry", false}, // core: only lower core packages
		{"clock", "backoff", false},
		{"budget", "breaker", false}, // core: not a core package after it
		{"retryhttp", "retry", true},
		{"retryhttp", "queue", false}, // adapters never import each other
		{"heedgrpc", "retry", true},
		{"heedgrpc", "retryhttp", false},
		{"queue", "retryhttp", false},
		{"sim", "queue", false},
		{"sqlitestore", "queue", true},
		{"sqlitestore", "pgstore", false},
		{"cmd/heed/internal/storeurl", "pgstore", true},
		{"queue/storetest", "queue", true},
		{"queue/storetest", "retry/executortest", true},
		{"queue/storetest", "retry/overtimetest", true},
		{"queue/storetest", "sqlitestore", false},
		{"internal/redact", "retry", false},
		{"retry", "internal/redact", true}, // LogObserver redacts what it logs
		{"idempotency", "internal/redact", true},
		{"idempotency", "retry", false}, // a leaf: any server can import it
		{"idempotency/storetest", "idempotency", true},
	} {
		may, ok := mayImport(tt.pkg)
		if got := ok && slices.Contains(may, tt.dep); got != tt.want {
			t.Errorf("%s may import %s: %v, want %v", tt.pkg, tt.dep, got, tt.want)
		}
	}
	if _, ok := mayImport("heedkafka"); ok {
		t.Error("a package not in the table has a place")
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
