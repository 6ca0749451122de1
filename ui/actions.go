package ui

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/heed-go/heed/queue"
)

type loginView struct {
	Next  string
	Error string
}

func (h *Handler) loginPage(w http.ResponseWriter, r *http.Request) {
	h.render(w, r, "login", "Sign in", loginView{Next: h.safeNext(r.URL.Query().Get("next"))})
}

// done redirects to page after an action, saying what it did.
func (h *Handler) done(w http.ResponseWriter, r *http.Request, page, op string, n int, extra ...string) {
	h.count.invalidate()
	v := url.Values{"done": {op}, "n": {strconv.Itoa(n)}}
	for i := 0; i+1 < len(extra); i += 2 {
		v.Set(extra[i], extra[i+1])
	}
	http.Redirect(w, r, h.u(page)+"?"+v.Encode(), http.StatusSeeOther)
}

// jobAction is POST jobs/{id}/{op}: requeue a dead job, delete a finished
// one, cancel one that has not finished, or run a waiting one now.
func (h *Handler) jobAction(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		h.fail(w, r, http.StatusBadRequest, "Bad request: a job's ID is a positive number.")
		return
	}
	op := r.PathValue("op")
	n, err := h.apply(r, op, []int64{id})
	if err != nil {
		h.internal(w, r, op+" the job", err)
		return
	}
	if n < 0 {
		h.fail(w, r, http.StatusNotFound, fmt.Sprintf("There is no action %q.", op))
		return
	}
	if op == "delete" && n > 0 {
		h.done(w, r, "jobs", op, n)
		return
	}
	h.done(w, r, "jobs/"+strconv.FormatInt(id, 10), op, n)
}

// apply runs op on the jobs ids and returns how many it changed, or -1
// for an unknown op.
func (h *Handler) apply(r *http.Request, op string, ids []int64) (int, error) {
	ctx := r.Context()
	f := queue.JobFilter{IDs: ids}
	switch op {
	case "requeue":
		return h.client.Requeue(ctx, queue.DeadFilter{IDs: ids})
	case "delete":
		return h.client.Delete(ctx, f)
	case "delete-dead": // the dead-letter's confirmation: dead jobs only
		f.State = queue.StateDead
		return h.client.Delete(ctx, f)
	case "cancel":
		return h.client.Cancel(ctx, f)
	case "run-now":
		return h.client.RunNow(ctx, f)
	}
	return -1, nil
}

// maxSelect caps the jobs one confirmation may touch.
const maxSelect = 10000

type confirmView struct {
	Op          string // "requeue" or "delete"
	IDs         string // comma-separated
	Count       int
	Group       *deadGroup
	Description string
}

// deadConfirm is POST dead/confirm: the page that states how many jobs
// an action on a group or a selection touches, with the button that
// applies it to exactly those jobs.
func (h *Handler) deadConfirm(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		h.fail(w, r, http.StatusBadRequest, "Bad request: the form could not be read (a selection is at most 10,000 jobs).")
		return
	}
	op := r.PostForm.Get("op")
	if op != "requeue" && op != "delete" {
		h.fail(w, r, http.StatusBadRequest, fmt.Sprintf("Bad request: op %q is not requeue or delete.", op))
		return
	}
	v := confirmView{Op: op}
	var ids []int64
	if gid := r.PostForm.Get("group"); gid != "" && len(r.PostForm["id"]) == 0 {
		g := h.findGroup(w, r, gid)
		if g == nil {
			return
		}
		var err error
		if ids, err = h.groupJobs(r.Context(), g, maxSelect); err != nil {
			h.internal(w, r, "list the group's jobs", err)
			return
		}
		v.Group = g
	} else {
		var err error
		if ids, err = parseIDs(r.PostForm["id"]); err != nil {
			h.fail(w, r, http.StatusBadRequest, "Bad request: "+err.Error())
			return
		}
		if len(ids) == 0 {
			h.fail(w, r, http.StatusBadRequest, "Nothing selected: tick the jobs to "+op+" first.")
			return
		}
	}
	strs := make([]string, len(ids))
	for i, id := range ids {
		strs[i] = strconv.FormatInt(id, 10)
	}
	v.IDs, v.Count = strings.Join(strs, ","), len(ids)
	h.render(w, r, "confirm", "Confirm", v)
}

func parseIDs(vals []string) ([]int64, error) {
	var ids []int64
	for _, v := range vals {
		for s := range strings.SplitSeq(v, ",") {
			if s = strings.TrimSpace(s); s == "" {
				continue
			}
			id, err := strconv.ParseInt(s, 10, 64)
			if err != nil || id <= 0 {
				return nil, fmt.Errorf("%q is not a job ID", s)
			}
			ids = append(ids, id)
		}
	}
	if len(ids) > maxSelect {
		return nil, fmt.Errorf("%d jobs selected; one action takes at most %d", len(ids), maxSelect)
	}
	return ids, nil
}

// deadApply is POST dead/apply: requeue or delete the confirmed dead jobs.
func (h *Handler) deadApply(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		h.fail(w, r, http.StatusBadRequest, "Bad request: the form could not be read.")
		return
	}
	op := r.PostForm.Get("op")
	ids, err := parseIDs([]string{r.PostForm.Get("ids")})
	if err != nil || len(ids) == 0 {
		h.fail(w, r, http.StatusBadRequest, "Bad request: no job IDs to act on.")
		return
	}
	if op != "requeue" && op != "delete" {
		h.fail(w, r, http.StatusBadRequest, fmt.Sprintf("Bad request: op %q is not requeue or delete.", op))
		return
	}
	apply := op
	if op == "delete" {
		apply = "delete-dead"
	}
	n, err := h.apply(r, apply, ids)
	if err != nil {
		h.internal(w, r, op+" the jobs", err)
		return
	}
	h.done(w, r, "dead", op, n)
}

// queueAction is POST queues/{op}: pause or resume the queue in the form.
func (h *Handler) queueAction(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		h.fail(w, r, http.StatusBadRequest, "Bad request: the form could not be read.")
		return
	}
	q, op := r.PostForm.Get("queue"), r.PathValue("op")
	var (
		changed bool
		err     error
	)
	switch op {
	case "pause":
		changed, err = h.client.Pause(r.Context(), q)
	case "resume":
		changed, err = h.client.Resume(r.Context(), q)
	default:
		h.fail(w, r, http.StatusNotFound, fmt.Sprintf("There is no action %q.", op))
		return
	}
	if err != nil {
		h.internal(w, r, op+" the queue", err)
		return
	}
	n := 0
	if changed {
		n = 1
	}
	h.done(w, r, "", op, n, "queue", q)
}
