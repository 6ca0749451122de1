package pgtest

import "testing"

func TestWithParam(t *testing.T) {
	for conn, want := range map[string]string{
		"postgres://u:p@h:5432/db?sslmode=disable": "postgres://u:p@h:5432/db?search_path=s+1&sslmode=disable",
		"postgres://h/db":                          "postgres://h/db?search_path=s+1",
		"host=h dbname=db":                         "host=h dbname=db search_path='s 1'",
	} {
		if got := WithParam(t, conn, "search_path", "s 1"); got != want {
			t.Errorf("WithParam(%q) = %q, want %q", conn, got, want)
		}
	}
}
