package ui

import (
	"errors"
	"net/http"

	"github.com/heed-go/heed/queue/jobstore"
)

// periodicView is the page of periodic jobs.
type periodicView struct {
	Jobs []jobstore.PeriodicSchedule
	// Missing says why there is no list: the store keeps none, or the
	// database is one release behind ("" when there is a list).
	Missing string
}

// periodic is GET periodic: each periodic job with its schedule, latest
// and next tick, when a worker last saw it, and a link to its jobs.
func (h *Handler) periodic(w http.ResponseWriter, r *http.Request) {
	var v periodicView
	sr, ok := h.client.Store().(jobstore.ScheduleRecorder)
	if !ok {
		v.Missing = "This store does not record periodic jobs."
		h.render(w, r, "periodic", "Periodic jobs", v)
		return
	}
	jobs, err := sr.JobSchedules(r.Context())
	switch {
	case errors.Is(err, jobstore.ErrSchemaTooOld):
		v.Missing = "This database is one release behind: heed jobs migrate adds the record of schedules."
	case err != nil:
		h.internal(w, r, "list the periodic jobs", err)
		return
	}
	v.Jobs = jobs
	h.render(w, r, "periodic", "Periodic jobs", v)
}
