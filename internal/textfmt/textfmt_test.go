package textfmt

import (
	"testing"
)

func TestFmtNum(t *testing.T) {
	for f, want := range map[float64]string{
		0: "0", 1.1: "1.1", 1.101: "1.1", 64: "64", 1101: "1,101", 64000: "64,000",
		1234567.891: "1,234,567.89", -1500: "-1,500", 42.666666: "42.67", 1e20: "1e+20",
	} {
		if got := Num(f); got != want {
			t.Errorf("Num(%v) = %q, want %q", f, got, want)
		}
	}
}
