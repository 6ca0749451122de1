package jobkinds

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/heed-go/heed/queue"
)

func TestReadLines(t *testing.T) {
	now := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	in := strings.Join([]string{
		`{"kind": "noop", "queue": "mail", "in": "10m", "key": "k1"}`,
		``,
		`{"kind": "fail", "args": {"times": 2}, "attempts": 3, "at": "2026-12-01T09:00:00Z"}`,
		`{"kind": "nope"}`,
		`{"kind": "noop", "attempts": 0}`,
		`{"kind": "noop", "in": "soon"}`,
		`{"kind": "noop", "extra": 1}`,
		`{"args": {}}`,
		`{"kind": "noop"} {"kind": "noop"}`,
	}, "\n")
	items, bad, err := ReadLines(strings.NewReader(in), queue.EnqueueOptions{Queue: "default", Priority: 5}, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 2 {
		t.Fatalf("%d jobs, want 2: %+v", len(items), items)
	}
	if o := items[0].Options; o.Queue != "mail" || o.In != 10*time.Minute || o.UniqueKey != "k1" || o.Priority != 5 || fmt.Sprintf("%s", items[0].Args) != "{}" {
		t.Errorf("line 1: %+v", items[0])
	}
	if o := items[1].Options; o.Queue != "default" || o.MaxAttempts != 3 || !o.At.Equal(now.Add(time.Hour)) {
		t.Errorf("line 3: %+v", items[1])
	}
	wantLines := []int{4, 5, 6, 7, 8, 9}
	if len(bad) != len(wantLines) {
		t.Fatalf("bad lines %v, want lines %v", bad, wantLines)
	}
	for i, e := range bad {
		var le LineError
		if !errors.As(e, &le) || le.Line != wantLines[i] {
			t.Errorf("bad[%d] = %v, want line %d", i, e, wantLines[i])
		}
	}
}
