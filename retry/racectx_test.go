package retry

import (
	"context"
	"errors"
	"testing"
	"unsafe"
)

type ctxKey struct{}

// A race's context is the caller's until Done is asked for; stopped, it
// ends at once or when Done is asked for; the caller's end reaches it; a
// race settled with no Done asked for leaves the caller's context.
func TestRaceCtx(t *testing.T) {
	for _, tt := range []struct {
		name        string
		parent      bool // a cancellable caller's context
		done        bool // Done asked for before the end
		stop        bool // the race stops it (a hedge won)
		cancelOuter bool // the caller's context ends
		settle      bool // the race ends with no hedge
		wantErr     error
		wantRelease bool // settle returns a release function
	}{
		{name: "settled untouched: the caller's", settle: true},
		{name: "settled after Done: released", done: true, settle: true, wantRelease: true},
		{name: "stopped before Done", stop: true, wantErr: context.Canceled},
		{name: "stopped after Done", done: true, stop: true, wantErr: context.Canceled},
		{name: "the caller's end, after Done", parent: true, done: true, cancelOuter: true, wantErr: context.Canceled},
		{name: "the caller's end, before Done", parent: true, cancelOuter: true, wantErr: context.Canceled},
		{name: "the caller's end, settled", parent: true, settle: true, cancelOuter: true, wantErr: context.Canceled},
	} {
		t.Run(tt.name, func(t *testing.T) {
			outer := context.WithValue(context.Background(), ctxKey{}, "v")
			cancelOuter := func() {}
			if tt.parent {
				outer, cancelOuter = context.WithCancel(outer)
				defer cancelOuter()
			}
			c := &raceCtx{Context: outer}
			if tt.done {
				c.Done()
			}
			if tt.stop {
				c.stop()
			}
			if tt.settle {
				_, release := c.claim()
				if (release != nil) != tt.wantRelease {
					t.Errorf("settle gave a release function: %v, want %v", release != nil, tt.wantRelease)
				}
				if release != nil {
					defer release()
				}
			}
			if tt.cancelOuter {
				cancelOuter()
			}
			// A child made now attaches to c without a goroutine of its own.
			child, cancel := context.WithCancel(c)
			defer cancel()
			if tt.wantErr != nil {
				<-c.Done()
				<-child.Done()
			}
			if err := c.Err(); !errors.Is(err, tt.wantErr) {
				t.Errorf("Err() = %v, want %v", err, tt.wantErr)
			}
			if err := context.Cause(c); !errors.Is(err, tt.wantErr) {
				t.Errorf("Cause() = %v, want %v", err, tt.wantErr)
			}
			if tt.wantErr == nil {
				select {
				case <-c.Done():
					t.Error("Done closed, want open")
				default:
				}
			}
			if v := c.Value(ctxKey{}); v != "v" {
				t.Errorf("Value = %v, want the caller's", v)
			}
		})
	}
}

// A raceCtx is 32 bytes: every call that may hedge allocates one, and
// 48 bytes cost about 16 ns more per call under load.
func TestRaceCtxSize(t *testing.T) {
	if n := unsafe.Sizeof(raceCtx{}); n > 32 {
		t.Errorf("raceCtx is %d bytes, want at most 32", n)
	}
}
