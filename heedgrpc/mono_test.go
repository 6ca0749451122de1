package heedgrpc

import (
	"testing"
	"testing/synctest"
	"time"
)

// TestMonoNow: monoNow is the time now, with a monotonic reading, so that
// it compares with times from time.Now by that reading; in a synctest
// bubble it is the bubble's time.
func TestMonoNow(t *testing.T) {
	before := time.Now()
	now := monoNow()
	after := time.Now()
	if now.Before(before) || now.After(after) {
		t.Errorf("monoNow %v, not between %v and %v", now, before, after)
	}
	if now.Round(0) == now {
		t.Error("monoNow has no monotonic reading")
	}
	synctest.Test(t, func(t *testing.T) {
		time.Sleep(time.Second)
		if got, want := monoNow(), time.Now(); !got.Equal(want) {
			t.Errorf("in a bubble, monoNow %v, want %v", got, want)
		}
	})
}
