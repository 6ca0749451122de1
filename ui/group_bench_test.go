package ui

import (
	"fmt"
	"testing"
	"time"

	"github.com/heed-go/heed/queue/jobstore"
)

// BenchmarkGroupDead groups 10,000 dead jobs (five times what the
// dead-letter page groups) of three causes.
func BenchmarkGroupDead(b *testing.B) {
	t0 := time.Date(2026, 3, 4, 5, 0, 0, 0, time.UTC)
	dead := make([]jobstore.DeadCause, 10000)
	for i := range dead {
		dead[i] = jobstore.DeadCause{ID: int64(i), Kind: "email", Queue: "mail", Reason: "attempts", FinishedAt: t0.Add(time.Duration(i) * time.Second),
			Error: []string{fmt.Sprintf("dial tcp 10.0.%d.%d:5432: connect: connection refused", i%250, i%7),
				fmt.Sprintf("POST https://pay.example.com/charges/%d: 503 Service Unavailable", i),
				fmt.Sprintf("smtp 421: mailbox user%d@example.com busy, try later", i)}[i%3]}
	}
	b.ReportAllocs()
	for b.Loop() {
		if g := groupDead(dead); len(g) != 3 {
			b.Fatalf("%d groups", len(g))
		}
	}
}
