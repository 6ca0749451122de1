package heedgrpc

import (
	"testing"
	"time"

	"google.golang.org/grpc/metadata"
)

func TestPushbackParse(t *testing.T) {
	for _, tt := range []struct {
		vals     []string
		wait     time.Duration
		ok, stop bool
	}{
		{nil, 0, false, false},
		{[]string{"0"}, 0, true, false},
		{[]string{"250"}, 250 * time.Millisecond, true, false},
		{[]string{"2147483647"}, 2147483647 * time.Millisecond, true, false},
		{[]string{"2147483648"}, 0, false, true}, // not an int32
		{[]string{"-1"}, 0, false, true},
		{[]string{"1.5"}, 0, false, true},
		{[]string{" 5"}, 0, false, true},
		{[]string{"5", "6"}, 0, false, true},
	} {
		md := metadata.MD{}
		if tt.vals != nil {
			md[PushbackMetadata] = tt.vals
		}
		wait, ok, stop := pushback(md)
		if wait != tt.wait || ok != tt.ok || stop != tt.stop {
			t.Errorf("%q: got %v %v %v, want %v %v %v", tt.vals, wait, ok, stop, tt.wait, tt.ok, tt.stop)
		}
	}
}

func FuzzPushback(f *testing.F) {
	for _, s := range []string{"0", "100", "-1", "x", "99999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		wait, ok, stop := pushback(metadata.MD{PushbackMetadata: {s}})
		if ok == stop {
			t.Fatalf("%q: ok %v and stop %v", s, ok, stop)
		}
		if wait < 0 || !ok && wait != 0 {
			t.Fatalf("%q: wait %v", s, wait)
		}
	})
}

func TestSplitMethod(t *testing.T) {
	for _, tt := range []struct{ m, svc, name string }{
		{"/pkg.Svc/Get", "pkg.Svc", "Get"},
		{"pkg.Svc/Get", "", ""},
		{"/pkg.Svc/", "", ""},
		{"//Get", "", ""},
		{"/a/b/c", "", ""},
	} {
		svc, name, ok := splitMethod(tt.m)
		if svc != tt.svc || name != tt.name || ok != (tt.svc != "") {
			t.Errorf("%q: got %q %q %v", tt.m, svc, name, ok)
		}
	}
}
