//go:build unix

package cli

import (
	"slices"
	"strings"
	"testing"
)

// docs/operations.md lists every command of heed, and every subcommand of
// heed jobs, in its summary block: a command added to the code and not to
// the page is one a reader of the page never learns of.
func TestOperationsListsEveryCommand(t *testing.T) {
	page := repoFile(t, "docs/operations.md")
	_, block, ok := strings.Cut(page, "## The heed command\n\n```sh\n")
	if !ok {
		t.Fatal("docs/operations.md: no sh block under \"## The heed command\"")
	}
	block, _, _ = strings.Cut(block, "```")
	listed := map[string]bool{}
	var jobs []string
	for _, l := range strings.Split(block, "\n") {
		f := strings.Fields(l)
		if len(f) < 2 || f[0] != "heed" {
			continue
		}
		listed[f[1]] = true
		if f[1] == "jobs" && len(f) > 2 {
			jobs = strings.Split(f[2], "|")
		}
	}
	for _, c := range commands {
		if !listed[c.name] {
			t.Errorf("docs/operations.md does not list heed %s", c.name)
		}
	}
	var want []string
	for _, c := range jobsCommands {
		want = append(want, c.name)
	}
	if !slices.Equal(jobs, want) {
		t.Errorf("docs/operations.md lists heed jobs %s, want %s (heed jobs --help's order)",
			strings.Join(jobs, "|"), strings.Join(want, "|"))
	}
}
