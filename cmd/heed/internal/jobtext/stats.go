package jobtext

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/heed-go/heed/internal/textfmt"
	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/queue/jobstore"
)

// StatsJSON is the JSON form of the queues' counts and the paused queues.
func StatsJSON(st queue.Stats, paused []jobstore.PausedQueue) any {
	type qs struct {
		Queue     string `json:"queue"`
		Available int    `json:"available"`
		Scheduled int    `json:"scheduled"`
		Running   int    `json:"running"`
		Succeeded int    `json:"succeeded"`
		Dead      int    `json:"dead"`
		Cancelled int    `json:"cancelled"`
	}
	type pq struct {
		Queue    string    `json:"queue"`
		PausedAt time.Time `json:"paused_at"`
	}
	out := struct {
		Queues     []qs       `json:"queues"`
		Dead       int        `json:"dead"`
		OldestDead *time.Time `json:"oldest_dead,omitempty"`
		Paused     []pq       `json:"paused"`
	}{Queues: []qs{}, Dead: st.Dead, OldestDead: Time(st.OldestDead), Paused: []pq{}}
	for _, p := range paused {
		out.Paused = append(out.Paused, pq(p))
	}
	for _, q := range st.Queues {
		out.Queues = append(out.Queues, qs(q))
	}
	return out
}

// WriteStats writes a table of the jobs of each queue by state, then the
// dead-letter's size and age and the paused queues.
func WriteStats(w io.Writer, st queue.Stats, paused []jobstore.PausedQueue, now time.Time) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "QUEUE\tAVAILABLE\tSCHEDULED\tRUNNING\tSUCCEEDED\tDEAD\tCANCELLED\t")
	var total jobstore.QueueStats
	for _, q := range st.Queues {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t\n", q.Queue, q.Available, q.Scheduled, q.Running, q.Succeeded, q.Dead, q.Cancelled)
		total.Available += q.Available
		total.Scheduled += q.Scheduled
		total.Running += q.Running
		total.Succeeded += q.Succeeded
		total.Dead += q.Dead
		total.Cancelled += q.Cancelled
	}
	if len(st.Queues) > 1 {
		fmt.Fprintf(tw, "(all)\t%d\t%d\t%d\t%d\t%d\t%d\t\n", total.Available, total.Scheduled, total.Running, total.Succeeded, total.Dead, total.Cancelled)
	}
	tw.Flush()
	if len(st.Queues) == 0 {
		fmt.Fprintln(w, "(no jobs)")
	}
	fmt.Fprintf(w, "\n%s\n", DeadSummary(st, now))
	if line := PausedLine(paused, now); line != "" {
		fmt.Fprintln(w, line)
	}
}

// DeadSummary describes the dead-letter's size and age.
func DeadSummary(st queue.Stats, now time.Time) string {
	if st.Dead == 0 {
		return "dead-letter: empty"
	}
	return fmt.Sprintf("dead-letter: %s, the oldest died %s (%s)", textfmt.Plural(st.Dead, "job", "jobs"), textfmt.Ago(st.OldestDead, now),
		st.OldestDead.UTC().Format(time.RFC3339))
}

// PausedLine describes the paused queues for heed jobs stats ("" for
// none).
func PausedLine(ps []jobstore.PausedQueue, now time.Time) string {
	if len(ps) == 0 {
		return ""
	}
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = fmt.Sprintf("%s (since %s)", p.Queue, textfmt.Ago(p.PausedAt, now))
	}
	return "paused: " + strings.Join(parts, ", ")
}

// DrainReport describes what --until-empty left behind, for the worker's
// log: jobs scheduled later, paused queues, jobs the worker declined (an
// exec job without --allow-exec), and jobs in queues the worker does not
// serve.
func DrainReport(res queue.DrainResult) []string {
	var lines []string
	if res.Scheduled > 0 {
		lines = append(lines, fmt.Sprintf("%s of these queues scheduled for later, not waited for (--wait-scheduled waits)",
			textfmt.Plural(res.Scheduled, "job", "jobs")))
	}
	if len(res.Paused) > 0 {
		lines = append(lines, "paused queues with jobs waiting, not run: "+strings.Join(res.Paused, ", ")+" (heed jobs resume QUEUE)")
	}
	const maxDeclined = 10 // lines, the rest counted
	for i, d := range res.Declined {
		if i == maxDeclined {
			lines = append(lines, fmt.Sprintf("and %s not run", textfmt.Plural(len(res.Declined)-i, "more job", "more jobs")))
			break
		}
		lines = append(lines, fmt.Sprintf("%s job %d (queue %s) not run: %s; it stays available for another worker", d.Kind, d.ID, d.Queue, d.Reason))
	}
	if len(res.Elsewhere) > 0 {
		parts := make([]string, len(res.Elsewhere))
		n := 0
		for i, q := range res.Elsewhere {
			parts[i] = fmt.Sprintf("%s (%d available, %d scheduled, %d running)", q.Queue, q.Available, q.Scheduled, q.Running)
			n += q.Available + q.Scheduled + q.Running
		}
		lines = append(lines, fmt.Sprintf("%s wait in queues this worker does not serve: %s (add them to --queues)",
			textfmt.Plural(n, "job", "jobs"), strings.Join(parts, ", ")))
	}
	return lines
}
