package ui

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/heed-go/heed/internal/liststate"
	"github.com/heed-go/heed/queue"
	"github.com/heed-go/heed/queue/jobstore"
)

// bulkOp is an action on a filtered list or a selection of jobs: the
// jobs it takes are those in one of its states; it leaves the others
// alone.
type bulkOp struct {
	Verb  string        // "Retry"
	apply string        // the name Handler.apply knows
	takes []queue.State // the states of the jobs it changes
	What  string        // what it does to them
}

var bulkOps = map[string]bulkOp{
	"retry": {"Retry", "requeue", []queue.State{queue.StateDead},
		"Dead jobs become available now, with their attempts and time budget reset; their history is kept."},
	"cancel": {"Cancel", "cancel", []queue.State{queue.StateAvailable, queue.StateRunning},
		"Jobs that have not finished are cancelled and never run again; a running job's handler sees its context cancelled."},
	"delete": {"Delete", "delete", []queue.State{queue.StateSucceeded, queue.StateDead, queue.StateCancelled},
		"Finished jobs are deleted with their history. This cannot be undone."},
}

// listKeys are the query keys of a filtered list of jobs.
var listKeys = []string{"queue", "kind", "state", "q", "order"}

// listQuery is the query of the jobs list that q (a query or a form)
// filters: only its filter keys, "" when none.
func listQuery(q url.Values) string {
	v := url.Values{}
	for _, k := range listKeys {
		if s := q.Get(k); s != "" {
			v.Set(k, s)
		}
	}
	if len(v) == 0 {
		return ""
	}
	return "?" + v.Encode()
}

// listFilter is the filter of the jobs list q selects, and its text.
func (h *Handler) listFilter(q url.Values) (queue.JobFilter, string, error) {
	f := queue.JobFilter{Queue: q.Get("queue"), Kind: q.Get("kind")}
	if err := liststate.Select(&f, q.Get("state"), h.now()); err != nil {
		return f, "", fmt.Errorf("state %q is not one of %s", q.Get("state"), strings.Join(liststate.Names, ", "))
	}
	return f, q.Get("q"), nil
}

type bulkView struct {
	Op string
	bulkOp
	IDs      string // the jobs it takes, comma-separated
	Count    int    // how many it takes
	Matched  int    // the jobs selected (up to maxSelect)
	More     bool   // the filter selects more than maxSelect
	Selected bool   // a selection, not the whole filter
	Filter   string // the filter, in words
	Back     string // the list's query
	States   string // the states it takes, in words
}

// bulkConfirm is POST bulk/confirm: the page that states how many of
// the jobs a filter (or a selection) holds an action takes, with the
// button that applies it to exactly those.
func (h *Handler) bulkConfirm(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		h.fail(w, r, http.StatusBadRequest, "Bad request: the form could not be read (a selection is at most 10,000 jobs).")
		return
	}
	op := r.PostForm.Get("op")
	bo, ok := bulkOps[op]
	if !ok {
		h.fail(w, r, http.StatusBadRequest, fmt.Sprintf("Bad request: op %q is not retry, cancel or delete.", op))
		return
	}
	sel, err := parseIDs(r.PostForm["id"])
	if err != nil {
		h.fail(w, r, http.StatusBadRequest, "Bad request: "+err.Error())
		return
	}
	f, text, err := h.listFilter(r.PostForm)
	if err != nil {
		h.fail(w, r, http.StatusBadRequest, "Bad request: "+err.Error()+".")
		return
	}
	v := bulkView{Op: op, bulkOp: bo, Back: listQuery(r.PostForm), Selected: len(sel) > 0, Filter: describe(r.PostForm)}
	if v.Selected {
		f, text = queue.JobFilter{IDs: sel}, ""
	}
	f.Newest, f.Limit = true, maxSelect+1
	jobs, err := h.inspect.JobSearch(r.Context(), jobstore.SearchParams{Filter: f, Text: text, InArgs: true})
	if err != nil {
		h.internal(w, r, "list the jobs", err)
		return
	}
	if len(jobs) > maxSelect {
		jobs, v.More = jobs[:maxSelect], true
	}
	v.Matched = len(jobs)
	var ids []string
	for _, j := range jobs {
		for _, s := range bo.takes {
			if j.State == s {
				ids = append(ids, strconv.FormatInt(j.ID, 10))
				break
			}
		}
	}
	words := make([]string, len(bo.takes))
	for i, s := range bo.takes {
		words[i] = string(s)
	}
	v.IDs, v.Count, v.States = strings.Join(ids, ","), len(ids), strings.Join(words, " or ")
	h.render(w, r, "bulk", "Confirm", v)
}

// describe writes a list's filter in words ("state dead, kind email").
func describe(q url.Values) string {
	var parts []string
	for _, k := range []string{"queue", "kind", "state"} {
		if s := q.Get(k); s != "" {
			parts = append(parts, k+" "+s)
		}
	}
	if s := q.Get("q"); s != "" {
		parts = append(parts, strconv.Quote(s)+" in their text")
	}
	if len(parts) == 0 {
		return "every job"
	}
	return "the jobs with " + strings.Join(parts, ", ")
}

// bulkApply is POST bulk/apply: the confirmed action on the confirmed
// jobs (those no longer in a state it takes are left alone), back to the
// list.
func (h *Handler) bulkApply(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		h.fail(w, r, http.StatusBadRequest, "Bad request: the form could not be read.")
		return
	}
	bo, ok := bulkOps[r.PostForm.Get("op")]
	if !ok {
		h.fail(w, r, http.StatusBadRequest, "Bad request: op is not retry, cancel or delete.")
		return
	}
	ids, err := parseIDs([]string{r.PostForm.Get("ids")})
	if err != nil || len(ids) == 0 {
		h.fail(w, r, http.StatusBadRequest, "Bad request: no job IDs to act on.")
		return
	}
	n, err := h.apply(r, bo.apply, ids)
	if err != nil {
		h.internal(w, r, strings.ToLower(bo.Verb)+" the jobs", err)
		return
	}
	back, _ := url.ParseQuery(strings.TrimPrefix(r.PostForm.Get("back"), "?"))
	q := url.Values{}
	for _, k := range listKeys {
		if s := back.Get(k); s != "" {
			q.Set(k, s)
		}
	}
	q.Set("done", bo.apply)
	q.Set("n", strconv.Itoa(n))
	h.count.invalidate()
	http.Redirect(w, r, h.u("jobs")+"?"+q.Encode(), http.StatusSeeOther)
}
