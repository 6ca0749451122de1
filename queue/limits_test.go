package queue

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/heed-go/heed/queue/jobstore"
)

func TestDecideCutsErrorText(t *testing.T) {
	p := testPolicy()
	job := &Job{ID: 7, LeaseToken: "tok", State: StateRunning, Attempt: 1, StartedAt: t0, AttemptedAt: t0}
	huge := errors.New("boom: " + strings.Repeat("x", 10<<20))
	tr, _ := decide(&p, job, result{err: huge, stack: strings.Repeat("frame\n", 1<<20), started: t0}, t0, rand.NewPCG(1, 2))
	if n := len(tr.Entry.Error); n > jobstore.MaxErrorText || !strings.HasPrefix(tr.Entry.Error, "boom: xxx") || !strings.HasSuffix(tr.Entry.Error, " MB cut]") {
		t.Errorf("stored error: %d bytes, ending %q", n, tr.Entry.Error[max(0, n-40):])
	}
	if n := len(tr.Entry.Panic); n > jobstore.MaxPanicText || !strings.HasSuffix(tr.Entry.Panic, " MB cut]") {
		t.Errorf("stored stack: %d bytes", n)
	}
	rel := decideRelease(job, result{err: huge, started: t0}, t0)
	if len(rel.Entry.Error) > jobstore.MaxErrorText {
		t.Errorf("release entry error: %d bytes", len(rel.Entry.Error))
	}
}

func TestDecideRedactsErrorText(t *testing.T) {
	p := testPolicy()
	job := &Job{ID: 7, LeaseToken: "tok", State: StateRunning, Attempt: 1, StartedAt: t0, AttemptedAt: t0}
	const canary = "CANARYx7Qp2Lm9Zr4Tv8Wb3N"
	err := errors.New(`fetch "https://u:` + canary + `@h/p?api_key=` + canary + `": refused`)
	tr, _ := decide(&p, job, result{err: err, started: t0}, t0, rand.NewPCG(1, 2))
	if strings.Contains(tr.Entry.Error, canary) || !strings.Contains(tr.Entry.Error, "refused") {
		t.Errorf("stored error %q", tr.Entry.Error)
	}
}

func TestArgsLimit(t *testing.T) {
	big := json.RawMessage(`"` + strings.Repeat("a", jobstore.MaxArgs) + `"`)
	_, err := NewJobInsert("k", big, EnqueueOptions{}, t0)
	const want = "queue: args is 1.0 MB (1048578 bytes), at most 1 MiB (1048576 bytes): store large payloads elsewhere and pass a reference"
	if !errors.Is(err, ErrInvalid) || err.Error() != want {
		t.Errorf("error %v, want %s", err, want)
	}
	in, err := NewJobInsert("k", json.RawMessage(`"`+strings.Repeat("a", jobstore.MaxArgs-2)+`"`), EnqueueOptions{}, t0)
	if err != nil {
		t.Fatalf("args of exactly MaxArgs bytes: %v", err)
	}
	in.Args = big
	if err := in.Validate(); !errors.Is(err, ErrInvalid) || !strings.HasPrefix(err.Error(), "queue: JobInsert.Args is 1.0 MB") {
		t.Errorf("Validate: %v", err)
	}
}

func TestNames(t *testing.T) {
	for _, tt := range []struct {
		kind, queue, want string
	}{
		{"send-email", "", ""},
		{"日本語", "q.1", ""},
		{"", "", "queue: kind is empty"},
		{"k\x00", "", `queue: kind has the control character U+0000: "k\x00"`},
		{"k\x7f", "", `queue: kind has the control character U+007F: "k\x7f"`},
		{"k\u0085", "", `queue: kind has the control character U+0085: "k\u0085"`},
		{"k", "q\t", `queue: EnqueueOptions.Queue has the control character U+0009: "q\t"`},
		{"k", "\xff", `queue: EnqueueOptions.Queue is not valid UTF-8: "\xff"`},
		{strings.Repeat("é", 128), "", "queue: kind is 256 bytes long, at most 255"},
	} {
		_, err := NewJobInsert(tt.kind, nil, EnqueueOptions{Queue: tt.queue}, t0)
		got := ""
		if err != nil {
			got = err.Error()
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("%q/%q: %v does not match ErrInvalid", tt.kind, tt.queue, err)
			}
		}
		if got != tt.want {
			t.Errorf("NewJobInsert(%q, queue %q): %q, want %q", tt.kind, tt.queue, got, tt.want)
		}
	}
}

func TestLogObserverCutsErrors(t *testing.T) {
	var b strings.Builder
	obs := LogObserver(slog.New(slog.NewTextHandler(&b, nil)))
	obs(context.Background(), Event{Kind: EventDead, Job: &Job{ID: 1, Kind: "k", Queue: "q"},
		Err: errors.New("https://u:pw-CANARYx7Qp2Lm9Zr4@h/ " + strings.Repeat("z", 10<<20))})
	if n := b.Len(); n > jobstore.MaxErrorText+512 || strings.Contains(b.String(), "CANARY") || !strings.Contains(b.String(), "MB cut]") {
		t.Errorf("record of %d bytes: %.200s", n, b.String())
	}
}

func TestInvalidArgsErrorIsRedacted(t *testing.T) {
	_, err := NewJobInsert("k", json.RawMessage(`{"u":"http://u:CANARYx7Qp2Lm9Zr@h/"`), EnqueueOptions{}, t0)
	if !errors.Is(err, ErrInvalid) || strings.Contains(err.Error(), "CANARY") || !strings.Contains(err.Error(), "is not valid JSON") {
		t.Errorf("error %v", err)
	}
}

// TestWorkerLogsRedactErrors: a worker's own records (a store that
// fails, an outage) show a store's error without the secrets it quotes.
func TestWorkerLogsRedactErrors(t *testing.T) {
	const c = "Zq7cAnAry4secret"
	var buf bytes.Buffer
	w := &Worker{ctx: context.Background(), cfg: WorkerConfig{ID: "w1", Logger: slog.New(slog.NewJSONHandler(&buf, nil))}}
	w.storeFailed("claim", errors.New("failed to connect to postgres://heed:"+c+"@db:5432/heed?sslmode=disable"))
	w.log("rescue failed", errors.New(`dial: host=db user=heed password=`+c+` dbname=heed`))
	out := buf.String()
	if strings.Contains(out, c) || strings.Count(out, "\n") != 2 || strings.Count(out, "REDACTED") != 2 {
		t.Errorf("worker's log shows the secret, or not two redacted records:\n%s", out)
	}
}
