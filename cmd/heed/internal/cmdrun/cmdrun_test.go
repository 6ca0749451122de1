package cmdrun

import (
	"io"
	"strings"
	"testing"
)

func TestReplayStdinCap(t *testing.T) {
	r := newReplayStdin(strings.NewReader("0123456789"), 4)
	in, err := r.attempt()
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(in)
	if string(b) != "0123456789" || err != nil {
		t.Errorf("first attempt read %q, %v", b, err)
	}
	in.Close()
	if _, err := r.attempt(); err == nil || !strings.Contains(err.Error(), "cannot give a retry the same stdin") {
		t.Errorf("after more than the cap: %v", err)
	}

	r = newReplayStdin(strings.NewReader("0123"), 4)
	for i := range 3 {
		in, err := r.attempt()
		if err != nil {
			t.Fatal(err)
		}
		if b, _ := io.ReadAll(in); string(b) != "0123" {
			t.Errorf("attempt %d read %q", i+1, b)
		}
	}
}

func TestCodeSet(t *testing.T) {
	var c CodeSet
	for _, s := range []string{"2", "64-66, 70", "1"} {
		if err := c.Set(s); err != nil {
			t.Fatalf("Set(%q): %v", s, err)
		}
	}
	if got, want := c.String(), "1,2,64,65,66,70"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	for _, bad := range []string{"", "x", "0", "256", "-1", "5-", "7-3", "1,,2"} {
		var c CodeSet
		if err := c.Set(bad); err == nil {
			t.Errorf("Set(%q) = nil, want an error", bad)
		}
	}
}

func TestExitPolicy(t *testing.T) {
	var def Codes
	var perm Codes
	perm.Permanent.Set("3")
	var only Codes
	only.Transient.Set("75,127")
	tests := []struct {
		name string
		e    *Codes
		code int
		want bool
	}{
		{"default 1", &def, 1, true},
		{"default 126", &def, 126, false},
		{"default 127", &def, 127, false},
		{"default 137", &def, 137, true},
		{"permanent 3", &perm, 3, false},
		{"permanent 1", &perm, 1, true},
		{"permanent 127", &perm, 127, false},
		{"only 75", &only, 75, true},
		{"only 1", &only, 1, false},
		{"only 127 listed", &only, 127, true},
	}
	for _, tt := range tests {
		if got := tt.e.retryable(tt.code); got != tt.want {
			t.Errorf("%s: retryable(%d) = %v, want %v", tt.name, tt.code, got, tt.want)
		}
	}
}
