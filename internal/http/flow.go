package http

import (
	"encoding/json"
	"net/http"

	"github.com/echo-mq/echo_mq/internal/flow"
)

// RateLimit is at most limit claims starting in any window of window_ms
// ms, on the Redis server's clock.
type RateLimit struct {
	Limit    int   `json:"limit" validate:"required,min=1,max=1000000" example:"100"`
	WindowMs int64 `json:"window_ms" format:"int64" validate:"required,min=10,max=86400000" example:"1000"`
} // @name RateLimit

// QueueSettings are a queue's settings, put whole: its flow control (an
// absent or null field is no limit, and an answer leaves it out), the
// defaults of its jobs and its retention of finished jobs.
type QueueSettings struct {
	// At most this many of the queue's jobs active at once, across every
	// worker and service replica.
	Concurrency *int `json:"concurrency,omitempty" validate:"omitnil,min=1,max=100000" example:"20"`
	// At most limit claims start in any window_ms, for the whole queue.
	RateLimit *RateLimit `json:"rate_limit,omitempty"`
	// At most this many active jobs per group.
	GroupConcurrency *int `json:"group_concurrency,omitempty" validate:"omitnil,min=1,max=100000" example:"2"`
	// At most limit claims start in any window_ms, per group.
	GroupRateLimit *RateLimit `json:"group_rate_limit,omitempty"`
	// "fifo": at most one job per group in flight (active, or delayed for
	// its retry), and a group's next job starts only when that one has
	// finished; a retried job keeps its group's head.
	GroupOrder *string `json:"group_order,omitempty" validate:"omitnil,oneof=fifo" enums:"fifo" example:"fifo"`
	// What an enqueue that does not name them gets; absent: none.
	JobDefaults *JobDefaults `json:"job_defaults,omitempty"`
	// How many finished jobs are kept, and how long; absent: the service's
	// defaults (completed: the newest EMQ_KEEP_COMPLETED, default 10,000;
	// dead and cancelled: all).
	Retention *Retention `json:"retention,omitempty"`
} // @name QueueSettings

// settingsOf is the API view of s: the limits it sets, its job defaults
// and its retention, as put.
func settingsOf(s flow.Settings) QueueSettings {
	rate := func(r *flow.Rate) *RateLimit {
		if r == nil {
			return nil
		}
		return &RateLimit{Limit: r.Limit, WindowMs: r.WindowMS}
	}
	out := QueueSettings{Concurrency: s.Concurrency, RateLimit: rate(s.RateLimit),
		GroupConcurrency: s.GroupConcurrency, GroupRateLimit: rate(s.GroupRateLimit),
		JobDefaults: jobDefaultsOf(s.Defaults), Retention: retentionOf(s.Retention)}
	if s.FIFO {
		fifo := "fifo"
		out.GroupOrder = &fifo
	}
	return out
}

// settings is the flow.Settings that q asks for.
func (q QueueSettings) settings() flow.Settings {
	rate := func(r *RateLimit) *flow.Rate {
		if r == nil {
			return nil
		}
		return &flow.Rate{Limit: r.Limit, WindowMS: r.WindowMs}
	}
	return flow.Settings{Concurrency: q.Concurrency, RateLimit: rate(q.RateLimit),
		GroupConcurrency: q.GroupConcurrency, GroupRateLimit: rate(q.GroupRateLimit),
		FIFO: q.GroupOrder != nil, Defaults: q.JobDefaults.jobDefaults(), Retention: q.Retention.retention()}
}

// handleSettingsGet godoc
//
//	@Summary		Read a queue's settings
//	@Description	The settings as put: flow control limits (an absent field is no limit), job_defaults (absent: none) and retention (an absent state keeps the service's default: completed the newest EMQ_KEEP_COMPLETED, default 10,000; dead and cancelled all). A queue that never had settings answers {}.
//	@ID				getQueueSettings
//	@Tags			operator
//	@Security		BearerAuth
//	@Security		Signature
//	@Param			queue	path	string	true	"queue name: 1 to 100 of A-Z a-z 0-9 . _ -, not only dots"	minlength(1)	maxlength(100)
//	@Produce		application/problem+json
//	@Failure		400	{object}	Problem	"EMQINVALID"
//	@Failure		403	{object}	Problem	"EMQFORBIDDEN: the key's role may not do this"
//	@Produce		json
//	@Success		200	{object}	QueueSettings
//	@Router			/queues/{queue}/settings [get]
func (s *server) handleSettingsGet(w http.ResponseWriter, r *http.Request) {
	queue, err := queueParam(r)
	var set flow.Settings
	if err == nil {
		set, err = s.admin.Settings(r.Context(), queue)
	}
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, settingsOf(set))
}

// handleSettingsPut godoc
//
//	@Summary		Set a queue's settings
//	@Description	Replaces the settings whole: an absent or null field is no limit (no job default, the default retention), {} removes every limit. Limits take effect at the next claim, job_defaults at the next enqueue (and schedule tick), retention at the next finish and reaper visit, on every service replica; jobs already active run on (a lowered limit holds new claims back until enough finish), jobs already enqueued keep their values. Invalid settings are 400 EMQINVALID naming the field, and change nothing. Audited as a settings event, which carries them.
//	@ID				putQueueSettings
//	@Tags			operator
//	@Security		BearerAuth
//	@Security		Signature
//	@Accept			json
//	@Param			queue		path	string			true	"queue name: 1 to 100 of A-Z a-z 0-9 . _ -, not only dots"	minlength(1)	maxlength(100)
//	@Param			settings	body	QueueSettings	true	"the settings"
//	@Produce		application/problem+json
//	@Failure		400	{object}	Problem	"EMQINVALID"
//	@Failure		403	{object}	Problem	"EMQFORBIDDEN: the key's role may not do this"
//	@Failure		409	{object}	Problem	"EMQQUOTA: the queue is new and there are EMQ_MAX_QUEUES queues already"
//	@Produce		json
//	@Success		200	{object}	QueueSettings
//	@Router			/queues/{queue}/settings [put]
func (s *server) handleSettingsPut(w http.ResponseWriter, r *http.Request) {
	queue, err := queueParam(r)
	var req QueueSettings
	if err == nil {
		err = s.decode(r, &req)
	}
	set := req.settings()
	answer := settingsOf(set)
	if err == nil {
		asJSON, _ := json.Marshal(answer)
		err = s.admin.SetSettings(r.Context(), queue, set, string(asJSON), actorOf(r))
	}
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	s.audit(r, "settings", "queue", queue, "settings", set.Encode(),
		"job_defaults", set.Defaults.Encode(), "retention", set.Retention.Encode())
	writeJSON(w, http.StatusOK, answer)
}

// Group is one group of a queue's jobs (flow control).
type Group struct {
	Name   string      `json:"name" binding:"required" example:"tenant-42"`
	Paused bool        `json:"paused" binding:"required"`
	Counts GroupCounts `json:"counts" binding:"required"`
} // @name Group

// GroupCounts are a group's jobs by state.
type GroupCounts struct {
	Pending int64 `json:"pending" binding:"required" format:"int64"`
	Active  int64 `json:"active" binding:"required" format:"int64"`
	Delayed int64 `json:"delayed" binding:"required" format:"int64"`
} // @name GroupCounts

// GroupPage is a page of a queue's groups, by name.
type GroupPage struct {
	Groups []Group `json:"groups" binding:"required"`
	// Fetches the next page; null on the last one.
	NextCursor *string `json:"next_cursor" binding:"required" extensions:"x-nullable"`
} // @name GroupPage

func groupOf(g flow.Group) Group {
	return Group{Name: g.Name, Paused: g.Paused,
		Counts: GroupCounts{Pending: g.Pending, Active: g.Active, Delayed: g.Delayed}}
}

// handleGroupList godoc
//
//	@Summary		List a queue's groups
//	@Description	A page of the queue's groups by name: every group with jobs pending, active or delayed, and every paused one. Pass next_cursor back as cursor until it is null; a cursor the service did not give out is 400 EMQINVALID (field cursor).
//	@ID				listGroups
//	@Tags			operator
//	@Security		BearerAuth
//	@Security		Signature
//	@Param			queue	path	string	true	"queue name: 1 to 100 of A-Z a-z 0-9 . _ -, not only dots"	minlength(1)	maxlength(100)
//	@Param			limit	query	int		false	"groups per page"	minimum(1)	maximum(500)	default(50)
//	@Param			cursor	query	string	false	"next_cursor of the previous page"
//	@Produce		application/problem+json
//	@Failure		400	{object}	Problem	"EMQINVALID"
//	@Failure		403	{object}	Problem	"EMQFORBIDDEN: the key's role may not do this"
//	@Produce		json
//	@Success		200	{object}	GroupPage
//	@Router			/queues/{queue}/groups [get]
func (s *server) handleGroupList(w http.ResponseWriter, r *http.Request) {
	queue, err := queueParam(r)
	limit := 0
	if err == nil {
		limit, err = limitQuery(r, 50, 500)
	}
	var groups []flow.Group
	var next string
	if err == nil {
		groups, next, err = s.admin.Groups(r.Context(), queue, r.URL.Query().Get("cursor"), limit)
	}
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	page := GroupPage{Groups: make([]Group, len(groups))}
	for i, g := range groups {
		page.Groups[i] = groupOf(g)
	}
	if next != "" {
		page.NextCursor = &next
	}
	writeJSON(w, http.StatusOK, page)
}

// handleGroupPause godoc
//
//	@Summary		Pause a group
//	@Description	The group's jobs are not claimed while it is paused; its active jobs run on. Pausing a group that has no jobs yet lists it, so that its first jobs wait. Pausing a paused group changes nothing.
//	@ID				pauseGroup
//	@Tags			operator
//	@Security		BearerAuth
//	@Security		Signature
//	@Param			queue	path	string	true	"queue name: 1 to 100 of A-Z a-z 0-9 . _ -, not only dots"	minlength(1)	maxlength(100)
//	@Param			group	path	string	true	"group name: 1 to 128 of A-Z a-z 0-9 . _ : -, not only dots"	minlength(1)	maxlength(128)
//	@Produce		application/problem+json
//	@Failure		400	{object}	Problem	"EMQINVALID"
//	@Failure		403	{object}	Problem	"EMQFORBIDDEN: the key's role may not do this"
//	@Failure		409	{object}	Problem	"EMQQUOTA: the queue is new and there are EMQ_MAX_QUEUES queues already"
//	@Produce		json
//	@Success		200	{object}	Group
//	@Router			/queues/{queue}/groups/{group}/pause [post]
func (s *server) handleGroupPause(w http.ResponseWriter, r *http.Request) {
	s.setGroupPaused(w, r, true)
}

// handleGroupResume godoc
//
//	@Summary		Resume a group
//	@Description	The group's jobs are claimed again, in their turn; waiting long polls are woken. Resuming a group that is not paused changes nothing.
//	@ID				resumeGroup
//	@Tags			operator
//	@Security		BearerAuth
//	@Security		Signature
//	@Param			queue	path	string	true	"queue name: 1 to 100 of A-Z a-z 0-9 . _ -, not only dots"	minlength(1)	maxlength(100)
//	@Param			group	path	string	true	"group name: 1 to 128 of A-Z a-z 0-9 . _ : -, not only dots"	minlength(1)	maxlength(128)
//	@Produce		application/problem+json
//	@Failure		400	{object}	Problem	"EMQINVALID"
//	@Failure		403	{object}	Problem	"EMQFORBIDDEN: the key's role may not do this"
//	@Failure		409	{object}	Problem	"EMQQUOTA: the queue is new and there are EMQ_MAX_QUEUES queues already"
//	@Produce		json
//	@Success		200	{object}	Group
//	@Router			/queues/{queue}/groups/{group}/resume [post]
func (s *server) handleGroupResume(w http.ResponseWriter, r *http.Request) {
	s.setGroupPaused(w, r, false)
}

func (s *server) setGroupPaused(w http.ResponseWriter, r *http.Request, paused bool) {
	queue, err := queueParam(r)
	group := ""
	if err == nil {
		group, err = groupParam(r)
	}
	var g flow.Group
	if err == nil {
		g, err = s.admin.SetGroupPaused(r.Context(), queue, group, paused, actorOf(r))
	}
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	action := map[bool]string{true: "pause_group", false: "resume_group"}[paused]
	s.audit(r, action, "queue", queue, "group", group)
	writeJSON(w, http.StatusOK, groupOf(g))
}
