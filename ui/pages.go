package ui

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/heed-go/heed/internal/liststate"
	"github.com/heed-go/heed/internal/redact"
	"github.com/heed-go/heed/internal/textfmt"
	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/queue/jobstore"
)

// page is what every template gets.
type page struct {
	Title    string
	Nav      string // the template's name, for the navigation's current link
	Path     string // the handler's mount point
	Now      time.Time
	Actions  bool // the dashboard may act (not read-only)
	Authed   bool // this request carries the token
	Live     bool // the page refreshes itself (with JavaScript)
	Flash    string
	Self     string // this page's path and query, for sign-in's return
	Data     any
	AxisW    int
	ChartW   int
	ChartH   int
	MaxGroup int
}

// plural is "1 job" or "12,000 jobs": numbers grouped by thousands.
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return textfmt.Group(float64(n)) + " " + many
}

// words returns a stored word (a dead reason, an action, an outcome:
// "time_budget", "give_up") as people write it ("time budget", "give up").
func words(key string) string { return strings.ReplaceAll(key, "_", " ") }

func (h *Handler) parseTemplates() error {
	funcs := template.FuncMap{
		"ago":    ago,
		"stamp":  stamp,
		"dur":    brief,
		"plural": plural,
		"num":    func(n int) string { return textfmt.Group(float64(n)) },
		"words":  words,
		"acts":   func(n int) int { return min(n, maxSelect) },
		"u":      h.u,
		"cut": func(n int, s string) string {
			if len(s) <= n {
				return s
			}
			for n > 0 && s[n]&0xC0 == 0x80 {
				n--
			}
			return s[:n] + "…"
		},
		"add": func(a, b float64) float64 { return a + b },
		"sub": func(a, b int) int { return a - b },
		"dict": func(kv ...string) map[string]string {
			m := map[string]string{}
			for i := 0; i+1 < len(kv); i += 2 {
				m[kv[i]] = kv[i+1]
			}
			return m
		},
		"mul": func(a float64, b int) float64 { return a * float64(b) },
		"int": func(i int) float64 { return float64(i) },
		"pct": func(n, total int) string {
			if total == 0 {
				return "0"
			}
			return strconv.FormatFloat(float64(n)/float64(total)*100, 'f', 1, 64)
		},
		"join": strings.Join,
		"svg":  svgOf,
		"offset": func(from, t time.Time) string {
			return "+" + brief(t.Sub(from).Round(time.Millisecond))
		},
		"lasterr": lastError,
		"shown":   shownState,
		"query": func(kv ...string) string {
			v := url.Values{}
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i+1] != "" {
					v.Set(kv[i], kv[i+1])
				}
			}
			if len(v) == 0 {
				return ""
			}
			return "?" + v.Encode()
		},
	}
	base, err := template.New("base").Funcs(funcs).ParseFS(templateFS, "templates/base.html")
	if err != nil {
		return fmt.Errorf("ui: templates: %w", err)
	}
	h.pages = map[string]*template.Template{}
	for _, name := range []string{"overview", "jobs", "job", "dead", "group", "confirm", "bulk", "periodic", "login", "message"} {
		t, err := template.Must(base.Clone()).ParseFS(templateFS, "templates/"+name+".html")
		if err != nil {
			return fmt.Errorf("ui: template %s: %w", name, err)
		}
		h.pages[name] = t
	}
	return nil
}

// livePages are the pages that refresh themselves: every page that
// reads (not a confirmation, a form or a message).
var livePages = map[string]bool{"overview": true, "jobs": true, "job": true, "dead": true, "group": true, "periodic": true}

// render writes the page name with data; a request with the header
// X-Heed-Partial gets only its main part (the live updates swap it in).
func (h *Handler) render(w http.ResponseWriter, r *http.Request, name, title string, data any) {
	h.renderStatus(w, r, http.StatusOK, name, title, data, "")
}

func (h *Handler) renderStatus(w http.ResponseWriter, r *http.Request, status int, name, title string, data any, flash string) {
	p := page{Title: title, Nav: name, Path: h.cfg.Path, Now: h.now(), Actions: !h.cfg.ReadOnly, Authed: h.authed(r),
		Live: livePages[name], Flash: flash, Self: r.URL.RequestURI(), Data: data, AxisW: axisWidth,
		ChartW: chartW, ChartH: chartH, MaxGroup: maxGrouped}
	if p.Flash == "" {
		p.Flash = flashOf(r.URL.Query())
	}
	var b bytes.Buffer
	tmpl := "base"
	if r.Header.Get("X-Heed-Partial") != "" {
		tmpl = "main"
	}
	if err := h.pages[name].ExecuteTemplate(&b, tmpl, p); err != nil {
		h.cfg.Log.Error("ui: render", "page", name, "err", redact.Error(err))
		http.Error(w, "the page could not be drawn", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(b.Bytes())
}

// flashOf is the message a redirect after an action carries in its
// query: what was done and how many jobs it touched (no secret).
func flashOf(q url.Values) string {
	done, n := q.Get("done"), q.Get("n")
	if done == "" {
		return ""
	}
	count, err := strconv.Atoi(n)
	if err != nil || count < 0 {
		return ""
	}
	switch done {
	case "requeue", "delete", "cancel", "run-now":
		verb := map[string]string{"requeue": "Requeued", "delete": "Deleted", "cancel": "Cancelled", "run-now": "Made due now:"}[done]
		return verb + " " + textfmt.Plural(count, "job", "jobs") + "."
	case "pause", "resume":
		q := q.Get("queue")
		if count == 0 {
			return fmt.Sprintf("Queue %q was already %sd.", q, done)
		}
		return fmt.Sprintf("Queue %q %sd.", q, done)
	}
	return ""
}

// fail writes an error page.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, status int, msg string) {
	h.renderStatus(w, r, status, "message", http.StatusText(status), msg, "")
}

// internal reports a failure of the store.
func (h *Handler) internal(w http.ResponseWriter, r *http.Request, what string, err error) {
	if errors.Is(err, queue.ErrInvalid) {
		h.fail(w, r, http.StatusBadRequest, "Bad request: "+redact.Text(err.Error()))
		return
	}
	h.cfg.Log.Error("ui: cannot "+what, "err", redact.Error(err))
	h.fail(w, r, http.StatusInternalServerError, "Cannot "+what+": the database did not answer (see the server's log).")
}

// pageSize is how many jobs a page of the jobs list shows.
const pageSize = 50

// jobsView is the jobs page.
type jobsView struct {
	Queue, Kind, State, Text, Order string
	States                          []string
	Jobs                            []jobRow
	Prev, Next                      string // queries of the neighbour pages ("" when none)
	SearchedArgs                    bool
	Filter, Query                   string // the filter in words, and as a query
}

type jobRow struct {
	*queue.Job
	LastError string
}

// shownState is the state a job is shown in: its stored state, except that
// an available job due later is "scheduled", as heed jobs ls and the
// overview's counts say.
func shownState(now time.Time, j *queue.Job) string {
	if j.State == queue.StateAvailable && j.AvailableAt.After(now) {
		return "scheduled"
	}
	return string(j.State)
}

// lastError is the error the jobs page shows for j (liststate.LastError,
// as heed jobs ls shows it), redacted.
func lastError(j *queue.Job) string {
	if e := liststate.LastError(j); e != "" {
		return redact.Text(e)
	}
	return ""
}

func (h *Handler) jobs(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	v := jobsView{Queue: q.Get("queue"), Kind: q.Get("kind"), State: q.Get("state"), Text: q.Get("q"), Order: q.Get("order"),
		States: liststate.Names}
	if v.Order != "oldest" {
		v.Order = "newest"
	}
	f, _, err := h.listFilter(q)
	if err != nil {
		h.fail(w, r, http.StatusBadRequest, "Bad request: "+err.Error()+".")
		return
	}
	f.Limit = pageSize + 1
	after, errA := cursor(q.Get("after"))
	before, errB := cursor(q.Get("before"))
	if errA != nil || errB != nil {
		h.fail(w, r, http.StatusBadRequest, "Bad request: after and before are job IDs.")
		return
	}
	// Keyset pagination: "before" pages towards lower IDs, "after"
	// towards higher ones; the page is shown in the chosen order.
	newest := v.Order == "newest"
	backward := false // the query runs against the display order
	switch {
	case before > 0:
		f.BeforeID, f.Newest = before, true
		backward = !newest
	case after > 0:
		f.AfterID = after
		backward = newest
	default:
		f.Newest = newest
	}
	v.SearchedArgs = h.authed(r)
	v.Filter, v.Query = describe(q), listQuery(q)
	list, err := h.inspect.JobSearch(r.Context(), jobstore.SearchParams{Filter: f, Text: v.Text, InArgs: v.SearchedArgs})
	if err != nil {
		h.internal(w, r, "list the jobs", err)
		return
	}
	more := len(list) > pageSize
	if more {
		list = list[:pageSize]
	}
	if backward {
		for i, j := 0, len(list)-1; i < j; i, j = i+1, j-1 {
			list[i], list[j] = list[j], list[i]
		}
	}
	for _, j := range list {
		v.Jobs = append(v.Jobs, jobRow{Job: j, LastError: lastError(j)})
	}
	base := url.Values{}
	for _, k := range []string{"queue", "kind", "state", "q"} {
		if s := q.Get(k); s != "" {
			base.Set(k, s)
		}
	}
	if v.Order == "oldest" {
		base.Set("order", "oldest")
	}
	link := func(key string, id int64) string {
		l := url.Values{}
		for k, vs := range base {
			l[k] = vs
		}
		l.Set(key, strconv.FormatInt(id, 10))
		return "?" + l.Encode()
	}
	if len(v.Jobs) > 0 {
		firstID, lastID := v.Jobs[0].ID, v.Jobs[len(v.Jobs)-1].ID
		// A page read in the display order has a next page when the
		// query found more, and a previous one when it started at a
		// cursor; a page read backwards (towards the start) the other
		// way round.
		hasNext, hasPrev := more, after > 0 || before > 0
		if backward {
			hasNext, hasPrev = true, more
		}
		if newest {
			if hasNext {
				v.Next = link("before", lastID)
			}
			if hasPrev {
				v.Prev = link("after", firstID)
			}
		} else {
			if hasNext {
				v.Next = link("after", lastID)
			}
			if hasPrev {
				v.Prev = link("before", firstID)
			}
		}
	}
	h.render(w, r, "jobs", "Jobs", v)
}

func cursor(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, errors.New("bad cursor")
	}
	return n, nil
}

// jobView is a job's page.
type jobView struct {
	*queue.Job
	Args      string // indented, redacted unless Revealed
	Revealed  bool
	Redacted  bool // the arguments hold something redacted
	Timeline  timeline
	CanReveal bool
	Due       bool // available and due
}

func (h *Handler) job(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		h.fail(w, r, http.StatusBadRequest, "Bad request: a job's ID is a positive number.")
		return
	}
	j, err := h.client.Job(r.Context(), id)
	if errors.Is(err, queue.ErrNotFound) {
		h.fail(w, r, http.StatusNotFound, fmt.Sprintf("There is no job %d (it may have been deleted).", id))
		return
	}
	if err != nil {
		h.internal(w, r, "read the job", err)
		return
	}
	now := h.now()
	v := jobView{Job: j, CanReveal: !h.cfg.ReadOnly, Timeline: newTimeline(j, h.cfg.TimeBudget, now),
		Due: j.State == queue.StateAvailable && !j.AvailableAt.After(now)}
	red := redact.JSON(j.Args)
	v.Redacted = !bytes.Equal(red, j.Args)
	args := red
	if r.URL.Query().Get("reveal") != "" {
		if !h.authed(r) {
			h.fail(w, r, http.StatusForbidden, "Refused: revealing arguments needs the dashboard's token. Sign in first.")
			return
		}
		args, v.Revealed = j.Args, true
	}
	var b bytes.Buffer
	if json.Indent(&b, args, "", "  ") != nil {
		b.Reset()
		b.Write(args)
	}
	v.Args = b.String()
	for i := range v.Timeline.Rows {
		// Stored texts are redacted when written; texts written by
		// older versions may not be.
		v.Timeline.Rows[i].Error = redact.Text(v.Timeline.Rows[i].Error)
		v.Timeline.Rows[i].Panic = redact.Text(v.Timeline.Rows[i].Panic)
	}
	h.render(w, r, "job", fmt.Sprintf("Job %d", j.ID), v)
}

// maxGrouped is how many of the newest dead jobs the dead-letter page
// groups when the database is one release behind (it has no index of
// causes): reading each one's last error costs a row read, about 0.1 ms
// in PostgreSQL, so that the page answers in a fraction of a second
// however large the dead-letter (which the page says when it is larger).
const maxGrouped = 2000

// maxCauses caps the causes (distinct kinds, reasons, queues and error
// texts read with their digits as 0) the dead-letter page reads from the
// index of causes; the dead jobs of further causes are counted, not
// grouped, and the page says so.
const maxCauses = 10000

// maxKeysRead caps the causes whose jobs a group's page (or an action on
// the whole group) reads: a group whose error texts differ beyond their
// numbers (random IDs with letters) may have many.
const maxKeysRead = 100

// maxSampled is how many groups of the dead-letter page show their
// newest death as their sample (one read of the index each).
const maxSampled = 50

type deadView struct {
	Groups  []deadGroup
	Total   int // dead jobs in the dead-letter
	Grouped int // of which grouped
	Oldest  time.Time
	Causes  int       // the causes read, at most maxCauses
	At      time.Time // when they were counted
	// Newest: grouped from the newest dead jobs (a database one release
	// behind, without the index of causes), not from all of them.
	Newest bool
}

// groups groups every dead job through the store's index of causes, or,
// in a database without it, the newest maxGrouped; with samples, each
// group's sample is read (its ID and error text), else only its ID is
// known.
func (h *Handler) groups(r *http.Request, samples bool) (deadView, error) {
	ctx := r.Context()
	counts, at, err := h.causes.get(ctx, h)
	if errors.Is(err, jobstore.ErrSchemaTooOld) {
		return h.groupsNewest(r)
	}
	if err != nil {
		return deadView{}, err
	}
	v := deadView{Groups: groupCounts(counts), Causes: len(counts), At: at}
	for _, c := range counts {
		v.Grouped += c.Count
		if v.Oldest.IsZero() || c.First.Before(v.Oldest) {
			v.Oldest = c.First
		}
	}
	v.Total = v.Grouped
	if len(counts) == maxCauses { // more causes than read: count them all
		ov, err := h.count.get(ctx)
		if err != nil {
			return v, err
		}
		v.Total, v.Oldest = max(ov.Dead, v.Grouped), ov.OldestDead
	}
	if !samples {
		return v, nil
	}
	// The sample is the newest death of the largest groups' latest
	// cause; further groups show their cause's highest ID.
	ids := make([]int64, len(v.Groups))
	for i, g := range v.Groups {
		ids[i] = g.Sample.ID
		if i < maxSampled {
			d, err := h.inspect.DeadOfCause(ctx, g.keys[0], 1)
			if err != nil {
				return v, err
			}
			if len(d) == 1 {
				ids[i], v.Groups[i].Sample.ID = d[0].ID, d[0].ID
			}
		}
	}
	if len(ids) > 0 {
		samples, err := h.inspect.DeadCauses(ctx, queue.JobFilter{IDs: ids})
		if err != nil {
			return v, err
		}
		byID := make(map[int64]jobstore.DeadCause, len(samples))
		for _, d := range samples {
			d.Error = redact.Text(d.Error)
			byID[d.ID] = d
		}
		for i := range v.Groups {
			if d, ok := byID[v.Groups[i].Sample.ID]; ok {
				v.Groups[i].Sample = d
			}
		}
	}
	return v, nil
}

// causeCache is the latest count of the dead-letter's causes, shared by
// every viewer of the dead-letter and its groups as the overview's count
// is: reused while younger than max(Config.Refresh, 10 × its duration),
// one count at a time, dropped after an action.
type causeCache struct {
	mu     sync.Mutex
	at     time.Time
	took   time.Duration
	counts []jobstore.DeadCauseCount
}

// get returns the cached counts while fresh, else counts.
func (c *causeCache) get(ctx context.Context, h *Handler) ([]jobstore.DeadCauseCount, time.Time, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := h.now()
	if c.counts != nil && now.Sub(c.at) < max(h.cfg.Refresh, 10*c.took) {
		return c.counts, c.at, nil
	}
	start := time.Now()
	counts, err := h.inspect.DeadCauseCounts(ctx, maxCauses)
	if err != nil {
		return nil, time.Time{}, err
	}
	if counts == nil {
		counts = []jobstore.DeadCauseCount{}
	}
	c.counts, c.at, c.took = counts, now, time.Since(start)
	return counts, now, nil
}

// drop forgets the cached counts (after an action).
func (c *causeCache) drop() {
	c.mu.Lock()
	c.counts = nil
	c.mu.Unlock()
}

// groupsNewest groups the newest maxGrouped dead jobs.
func (h *Handler) groupsNewest(r *http.Request) (deadView, error) {
	v := deadView{Newest: true}
	ov, err := h.count.get(r.Context())
	if err != nil {
		return v, err
	}
	causes, err := h.inspect.DeadCauses(r.Context(), queue.JobFilter{Newest: true, Limit: maxGrouped})
	if err != nil {
		return v, err
	}
	for i := range causes {
		causes[i].Error = redact.Text(causes[i].Error)
	}
	v.Groups, v.Total, v.Grouped, v.Oldest = groupDead(causes), ov.Dead, len(causes), ov.OldestDead
	if v.Total < v.Grouped { // the count is a little older than the list
		v.Total = v.Grouped
	}
	return v, nil
}

// groupJobs returns the IDs of the newest limit jobs of g, newest death
// first.
func (h *Handler) groupJobs(ctx context.Context, g *deadGroup, limit int) ([]int64, error) {
	if g.keys == nil { // grouped from the newest dead jobs: IDs known
		ids := slices.Clone(g.IDs)
		slices.Reverse(ids)
		return ids[:min(len(ids), limit)], nil
	}
	var all []jobstore.DeadCause
	for _, k := range g.keys[:min(len(g.keys), maxKeysRead)] {
		d, err := h.inspect.DeadOfCause(ctx, k, limit)
		if err != nil {
			return nil, err
		}
		all = append(all, d...)
	}
	slices.SortFunc(all, func(a, b jobstore.DeadCause) int {
		if c := b.FinishedAt.Compare(a.FinishedAt); c != 0 {
			return c
		}
		return cmp.Compare(b.ID, a.ID)
	})
	ids := make([]int64, 0, min(len(all), limit))
	for _, d := range all[:min(len(all), limit)] {
		ids = append(ids, d.ID)
	}
	return ids, nil
}

func (h *Handler) dead(w http.ResponseWriter, r *http.Request) {
	v, err := h.groups(r, true)
	if err != nil {
		h.internal(w, r, "group the dead-letter", err)
		return
	}
	h.render(w, r, "dead", "Dead-letter", v)
}

type groupView struct {
	deadGroup
	Jobs []*queue.Job
	// Acts is how many jobs an action on the whole group takes (the
	// newest, at most maxSelect).
	Acts int
}

// maxGroupJobs is how many jobs of a group its page lists.
const maxGroupJobs = 200

// findGroup returns the dead-letter's group id, or writes the error page
// and returns nil.
func (h *Handler) findGroup(w http.ResponseWriter, r *http.Request, id string) *deadGroup {
	v, err := h.groups(r, false)
	if err != nil {
		h.internal(w, r, "group the dead-letter", err)
		return nil
	}
	for i := range v.Groups {
		if v.Groups[i].ID == id {
			return &v.Groups[i]
		}
	}
	h.fail(w, r, http.StatusNotFound, "There is no such group in the dead-letter now (its jobs may have been requeued or deleted).")
	return nil
}

func (h *Handler) deadGroup(w http.ResponseWriter, r *http.Request) {
	g := h.findGroup(w, r, r.PathValue("group"))
	if g == nil {
		return
	}
	ids, err := h.groupJobs(r.Context(), g, maxGroupJobs)
	if err != nil {
		h.internal(w, r, "list the group's jobs", err)
		return
	}
	jobs, err := h.client.Dead(r.Context(), queue.DeadFilter{IDs: ids})
	if err != nil {
		h.internal(w, r, "list the group's jobs", err)
		return
	}
	slices.SortFunc(jobs, func(a, b *queue.Job) int {
		if c := b.FinishedAt.Compare(a.FinishedAt); c != 0 {
			return c
		}
		return cmp.Compare(b.ID, a.ID)
	})
	h.render(w, r, "group", "Dead-letter group", groupView{deadGroup: *g, Jobs: jobs, Acts: min(g.Count, maxSelect)})
}

// tlSVG is a Timeline drawn in an SVG viewBox: the page draws it twice,
// wide for screens and narrow (larger text for its size) for phones.
type tlSVG struct {
	Class      string
	ViewBox    string
	AxisBottom float64 // y of the end of the tick lines
	LabelY     float64 // y of the tick labels
	Ticks      []tick
	BudgetX    float64 // 0: no budget line
	Rows       []svgRow
}

type svgRow struct {
	Num                string // the attempt number, "" for an operator's entry
	X, W, Y            float64
	WaitX1, WaitX2     float64 // the wait's dashes (equal: none)
	MidY, TextY, Class string
	Title              string
}

// svgOf lays tl out on an axis width units wide.
func svgOf(tl timeline, width float64, class string) tlSVG {
	const rowH = 24
	k := width / axisWidth
	n := float64(len(tl.Rows))
	s := tlSVG{Class: class, AxisBottom: n*rowH + 8, LabelY: n*rowH + 26}
	s.ViewBox = fmt.Sprintf("-28 0 %g %g", width+56, n*rowH+34)
	for _, t := range tl.Ticks {
		s.Ticks = append(s.Ticks, tick{X: t.X * k, Label: t.Label})
	}
	s.BudgetX = tl.BudgetX * k
	for i, r := range tl.Rows {
		y := float64(i) * rowH
		row := svgRow{X: r.X * k, W: max(r.W*k, 2), Y: y + 6, Class: r.Class,
			MidY: strconv.FormatFloat(y+13, 'f', -1, 64), TextY: strconv.FormatFloat(y+17, 'f', -1, 64)}
		if r.Attempt.Attempt > 0 {
			row.Num = strconv.Itoa(r.Attempt.Attempt)
		}
		row.WaitX1 = row.X + row.W
		row.WaitX2 = row.WaitX1 + r.WaitW*k
		if r.Running {
			row.Title = fmt.Sprintf("attempt %d: running", r.Attempt.Attempt)
		} else {
			row.Title = r.Attempt.String()
		}
		s.Rows = append(s.Rows, row)
	}
	return s
}
