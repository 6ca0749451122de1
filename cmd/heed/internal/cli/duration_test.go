package cli

import (
	"strings"
	"testing"

	"github.com/heed-go/heed/internal/duration"
)

func TestDurationFlagsEverywhere(t *testing.T) {
	db := t.TempDir() + "/heed.db"
	for _, tt := range []struct {
		args []string
		code int
	}{
		{[]string{"plan", "--deadline", "1.5", "--base", "0.05", "--cap", "1d"}, 0},
		{[]string{"plan", "deadline", "--deadline", "2", "--step", "name=a,p99=0.1,budget=0.5"}, 0},
		{[]string{"run", "--base", "0.001", "--timeout", "30", "--deadline", "1d", "--", "true"}, 0},
		{[]string{"get", "--max-time", "5", "--connect-timeout", "0.5", "--attempts", "1", "http://127.0.0.1:1/"}, exitTransport},
		{[]string{"jobs", "enqueue", "noop", "{}", "--in", "60", "--budget", "2d", "--db", db}, 0},
		{[]string{"jobs", "purge", "--succeeded-older-than", "7d", "--db", db}, 0},
		{[]string{"jobs", "dead", "purge", "--older-than", "30d", "--db", db}, 0},
		{[]string{"sim", "--horizon", "5", "--policy", "heed", "spike"}, 0},
	} {
		code, stdout, stderr := heed(t, "", tt.args...)
		if code != tt.code {
			t.Errorf("heed %s: exit %d, want %d\n%s%s", strings.Join(tt.args, " "), code, tt.code, stdout, stderr)
		}
	}
	for _, args := range [][]string{
		{"plan", "--base", "5x"},
		{"get", "--max-time", "five", "http://127.0.0.1:1/"},
		{"jobs", "purge", "--succeeded-older-than", "1w", "--db", db},
		{"sim", "--horizon", "1e3", "spike"},
	} {
		_, _, stderr := heed(t, "", args...)
		if !strings.Contains(stderr, "is not a duration: "+duration.Hint) {
			t.Errorf("heed %s: stderr %q", strings.Join(args, " "), stderr)
		}
	}
}
