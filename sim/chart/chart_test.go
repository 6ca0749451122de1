package chart

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/heed-go/heed/sim"
)

func results(t *testing.T) (sim.Scenario, []*sim.Result) {
	t.Helper()
	s, _ := sim.Builtin("spike")
	s.Horizon = 40 * time.Second
	rs, err := sim.Run(s)
	if err != nil {
		t.Fatal(err)
	}
	return s, rs
}

func TestWrite(t *testing.T) {
	s, rs := results(t)
	for _, format := range []string{"png", "svg"} {
		var b bytes.Buffer
		if err := Write(&b, format, Options{Title: s.Name, Faults: s.Faults}, rs...); err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		switch format {
		case "png":
			if !bytes.HasPrefix(b.Bytes(), []byte("\x89PNG")) {
				t.Errorf("png: no PNG signature")
			}
		case "svg":
			if !strings.Contains(b.String(), "<svg") || !strings.Contains(b.String(), "naive") {
				t.Errorf("svg: no <svg> or no policy name")
			}
		}
		if out := os.Getenv("HEED_CHART_OUT"); out != "" {
			_ = os.WriteFile(out+"."+format, b.Bytes(), 0o644)
		}
	}
	if err := Write(&bytes.Buffer{}, "gif", Options{}, rs...); err == nil || !strings.Contains(err.Error(), `unknown format "gif"`) {
		t.Errorf("gif: %v", err)
	}
	if err := Write(&bytes.Buffer{}, "png", Options{}); err == nil {
		t.Error("no results: no error")
	}
}
