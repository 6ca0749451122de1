package retry_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/heed-go/heed/backoff"
	"github.com/heed-go/heed/retry"
)

// TestLogObserverRedacts: the error of an attempt is logged without the
// secrets it quotes, in the text and the JSON forms of slog, and the
// rest of the message stays readable.
func TestLogObserverRedacts(t *testing.T) {
	const c = "Zq7cAnAry4secret"
	for _, msg := range []string{
		"upstream said 401: Authorization: Bearer " + c,
		"call failed: token=" + c + " attempt=2",
		`Get "https://api.example.com/v1/items?page=2&access_token=` + c + `": EOF`,
		"redirect to https://example.com/callback#id_token=" + c,
		"redirect to https://example.com/callback#" + c,
		"dial https://bob:" + c + "@db.example.com:5432/app: connection refused",
		`bad request: {"password": "` + c + `", "user": "bob"}`,
		"exec: psql --password " + c,
	} {
		for name, newHandler := range map[string]func(*bytes.Buffer) slog.Handler{
			"text": func(b *bytes.Buffer) slog.Handler { return slog.NewTextHandler(b, nil) },
			"json": func(b *bytes.Buffer) slog.Handler { return slog.NewJSONHandler(b, nil) },
		} {
			var buf bytes.Buffer
			p := retry.Policy{Attempts: 2, Backoff: backoff.Schedule{Kind: backoff.Immediate},
				Observe: retry.LogObserver(slog.New(newHandler(&buf)), "fetch")}
			err := retry.Do(context.Background(), p, func(context.Context) error { return retry.Transient(errors.New(msg)) })
			if err == nil {
				t.Fatal("no error")
			}
			out := buf.String()
			if strings.Contains(out, c) {
				t.Errorf("%s log of %q shows the secret:\n%s", name, msg, out)
			}
			if !strings.Contains(out, "REDACTED") || strings.Count(out, "\n") != 2 {
				t.Errorf("%s log of %q: want two records with the secret redacted:\n%s", name, msg, out)
			}
		}
	}
	// Innocent text is logged as it is.
	var buf bytes.Buffer
	p := retry.Policy{Attempts: 1, Observe: retry.LogObserver(slog.New(slog.NewTextHandler(&buf, nil)), "fetch")}
	retry.Do(context.Background(), p, func(context.Context) error {
		return errors.New("GET https://example.com/items?page=2: 503 Service Unavailable")
	})
	if want := `error="GET https://example.com/items?page=2: 503 Service Unavailable"`; !strings.Contains(buf.String(), want) {
		t.Errorf("log %s lacks %s", buf.String(), want)
	}
}
