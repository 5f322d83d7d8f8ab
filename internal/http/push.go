package http

import (
	"errors"
	"net/http"

	"github.com/echo-mq/echo_mq/internal/job"
	"github.com/echo-mq/echo_mq/internal/push"
)

// PushTargetRequest is a queue's push target, put whole.
type PushTargetRequest struct {
	// Where each job is POSTed: http or https, its host in the service's
	// EMQ_PUSH_ALLOW. No credentials in it: sign with secret instead (the
	// whole URL, its query too, is answered to any key and audited).
	URL string `json:"url" validate:"required,max=2048" example:"https://worker.example.com/jobs"`
	// How long one delivery may take, in ms; then it fails as a timeout.
	// Default 30000.
	TimeoutMs *int64 `json:"timeout_ms,omitempty" format:"int64" validate:"omitnil,min=100,max=3600000" example:"30000"`
	// At most this many of the queue's jobs active at once, across every
	// service replica (a worker's claimed jobs count too). Default 10.
	Concurrency *int `json:"concurrency,omitempty" validate:"omitnil,min=1,max=1000" example:"10"`
	// Each delivery's lease, in ms: at least timeout_ms + 1000, time to
	// report the answer. A receiver that answers 202 has this long before
	// its first extend. Default timeout_ms + 30000.
	LeaseMs *int64 `json:"lease_ms,omitempty" format:"int64" validate:"omitnil,min=1100,max=86400000" example:"60000"`
	// The Standard Webhooks signing secret: "whsec_" and the base64 of 24
	// to 64 random bytes. Each delivery then carries webhook-signature.
	// Never answered back. Default none (unsigned deliveries).
	Secret *string `json:"secret,omitempty" validate:"omitnil,max=200" example:"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"`
	// Headers sent with every delivery, such as a gateway's own token in
	// front of the receiver: at most 20, names HTTP tokens given once
	// (case does not matter), values printable ASCII without CR or LF,
	// at most 8192 bytes together. Names each delivery sets or that would
	// break it are refused: Host, Content-Type, Content-Length,
	// Content-Encoding, Transfer-Encoding, Connection, Keep-Alive, TE,
	// Trailer, Upgrade, Expect, Accept-Encoding, Proxy-*, User-Agent,
	// traceparent, tracestate, baggage and webhook-*. Never answered back
	// (header_names says which are set), logged or put in an event.
	// Default none.
	Headers map[string]string `json:"headers,omitempty" example:"Authorization:Bearer gw-token"`
} // @name PushTargetRequest

// PushTarget is a queue's push target as the service answers it: never
// its secret.
type PushTarget struct {
	URL         string `json:"url" binding:"required" example:"https://worker.example.com/jobs"`
	TimeoutMs   int64  `json:"timeout_ms" binding:"required" format:"int64" example:"30000"`
	Concurrency int    `json:"concurrency" binding:"required" example:"10"`
	LeaseMs     int64  `json:"lease_ms" binding:"required" format:"int64" example:"60000"`
	// Whether deliveries are signed.
	SecretSet bool `json:"secret_set" binding:"required"`
	// The names of the headers each delivery carries, canonical and
	// sorted; never their values.
	HeaderNames []string `json:"header_names" binding:"required" example:"Authorization"`
	UpdatedAt   string   `json:"updated_at" binding:"required" format:"date-time" example:"2026-12-02T09:30:00.000Z"`
	// The last failed deliveries, newest first (at most 20).
	RecentErrors []PushError `json:"recent_errors" binding:"required"`
} // @name PushTarget

// PushError is one failed delivery.
type PushError struct {
	At      string `json:"at" binding:"required" format:"date-time" example:"2026-12-02T09:31:04.512Z"`
	JobID   string `json:"job_id" binding:"required" example:"3f2b8c1e-7a4d-4e9b-9c2a-1d5e6f7a8b9c"`
	Attempt int    `json:"attempt" binding:"required" example:"1"`
	// The receiver's HTTP status; absent when none came (a timeout, a
	// refused connection).
	Status int `json:"status,omitempty" example:"503"`
	// What the attempt's last_error says.
	Error string `json:"error" binding:"required" example:"HTTP 503: busy"`
} // @name PushError

// target is the push.Target req asks for, defaults filled in and checked
// against the service's EMQ_PUSH_ALLOW.
func (s *server) target(req PushTargetRequest) (push.Target, error) {
	t := push.Target{URL: req.URL}
	if req.TimeoutMs != nil {
		t.Timeout = ms(*req.TimeoutMs)
	}
	if req.Concurrency != nil {
		t.Concurrency = *req.Concurrency
	}
	if req.LeaseMs != nil {
		t.Lease = ms(*req.LeaseMs)
	}
	if req.Secret != nil {
		t.Secret = *req.Secret
	}
	t.Headers = req.Headers
	t = t.WithDefaults()
	var fe *push.FieldError
	switch err := push.Check(t, s.cfg.PushAllow); {
	case errors.Is(err, push.ErrNotAllowed):
		return t, &requestError{code: CodeState, detail: err.Error()}
	case errors.As(err, &fe):
		return t, invalid(fe.Error(), FieldError{Field: fe.Field, Message: fe.Message})
	case err != nil:
		return t, err
	}
	return t, nil
}

func pushTargetOf(t push.Target, recent []push.DeliveryError) PushTarget {
	out := PushTarget{URL: t.URL, TimeoutMs: t.Timeout.Milliseconds(), Concurrency: t.Concurrency,
		LeaseMs: t.Lease.Milliseconds(), SecretSet: t.Secret != "", HeaderNames: push.HeaderNames(t.Headers),
		UpdatedAt: stamp(t.UpdatedAt), RecentErrors: make([]PushError, len(recent))}
	for i, e := range recent {
		out.RecentErrors[i] = PushError{At: stamp(e.At), JobID: e.JobID, Attempt: e.Attempt, Status: e.Status, Error: e.Error}
	}
	return out
}

// errNoTarget answers a queue without a push target.
func errNoTarget(queue string) error {
	return &job.GoneError{What: "push target", Queue: queue}
}

// handlePushPut godoc
//
//	@Summary		Set a queue's push target
//	@Description	From now on every service replica claims the queue's jobs itself (under its flow control, and with at most concurrency of them active across replicas) and POSTs each to url: the job as a claim answers it, token included, with the Standard Webhooks headers webhook-id ("<queue>:<id>:<token>"), webhook-timestamp and, with a secret, webhook-signature. A 2xx answer but 202 completes the job (a JSON body is its result); 202 leaves it to the receiver, which reports over the worker routes with the token; any other status, a timeout or a connection error fails the attempt (429 and 503 honour Retry-After). Replaces the target whole. Needs the host in EMQ_PUSH_ALLOW: without that variable every target is refused (409). Audited; the secret is never answered, logged or put in an event.
//	@ID				putPushTarget
//	@Tags			operator
//	@Security		BearerAuth
//	@Security		Signature
//	@Accept			json
//	@Param			queue	path	string				true	"queue name: 1 to 100 of A-Z a-z 0-9 . _ -, not only dots"	minlength(1)	maxlength(100)
//	@Param			target	body	PushTargetRequest	true	"the target"
//	@Produce		application/problem+json
//	@Failure		400	{object}	Problem	"EMQINVALID: a field is wrong, or url's host is not in EMQ_PUSH_ALLOW"
//	@Failure		403	{object}	Problem	"EMQFORBIDDEN: the key's role may not do this"
//	@Failure		409	{object}	Problem	"EMQSTATE: EMQ_PUSH_ALLOW is not set: push delivery is off; EMQQUOTA: the queue is new and there are EMQ_MAX_QUEUES queues already"
//	@Produce		json
//	@Success		200	{object}	PushTarget
//	@Router			/queues/{queue}/push [put]
func (s *server) handlePushPut(w http.ResponseWriter, r *http.Request) {
	queue, err := queueParam(r)
	var req PushTargetRequest
	if err == nil {
		err = s.decode(r, &req)
	}
	var t push.Target
	if err == nil {
		t, err = s.target(req)
	}
	var recent []push.DeliveryError
	if err == nil {
		if t, _, err = s.cfg.Pushes.Put(r.Context(), queue, t, actorOf(r)); err == nil {
			recent, err = s.cfg.Pushes.Errors(r.Context(), queue)
		}
	}
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	s.audit(r, "put_push", "queue", queue, "url", t.URL, "concurrency", t.Concurrency, "signed", t.Secret != "",
		"header_names", push.HeaderNames(t.Headers)) // never their values
	writeJSON(w, http.StatusOK, pushTargetOf(t, recent))
}

// handlePushGet godoc
//
//	@Summary		Read a queue's push target
//	@Description	The target without its secret (secret_set says whether there is one), and the last failed deliveries, newest first.
//	@ID				getPushTarget
//	@Tags			operator
//	@Security		BearerAuth
//	@Security		Signature
//	@Param			queue	path	string	true	"queue name: 1 to 100 of A-Z a-z 0-9 . _ -, not only dots"	minlength(1)	maxlength(100)
//	@Produce		application/problem+json
//	@Failure		400	{object}	Problem	"EMQINVALID"
//	@Failure		403	{object}	Problem	"EMQFORBIDDEN: the key's role may not do this"
//	@Failure		404	{object}	Problem	"EMQGONE: the queue has no push target"
//	@Produce		json
//	@Success		200	{object}	PushTarget
//	@Router			/queues/{queue}/push [get]
func (s *server) handlePushGet(w http.ResponseWriter, r *http.Request) {
	queue, err := queueParam(r)
	var t push.Target
	var recent []push.DeliveryError
	if err == nil {
		var ok bool
		if t, ok, err = s.cfg.Pushes.Get(r.Context(), queue); err == nil && !ok {
			err = errNoTarget(queue)
		}
	}
	if err == nil {
		recent, err = s.cfg.Pushes.Errors(r.Context(), queue)
	}
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, pushTargetOf(t, recent))
}

// handlePushDelete godoc
//
//	@Summary		Stop pushing a queue's jobs
//	@Description	Takes the target away: no delivery starts once each replica has seen it (within a second); deliveries under way finish and report. The queue's jobs wait for workers again. Audited.
//	@ID				deletePushTarget
//	@Tags			operator
//	@Security		BearerAuth
//	@Security		Signature
//	@Param			queue	path	string	true	"queue name: 1 to 100 of A-Z a-z 0-9 . _ -, not only dots"	minlength(1)	maxlength(100)
//	@Produce		application/problem+json
//	@Failure		400	{object}	Problem	"EMQINVALID"
//	@Failure		403	{object}	Problem	"EMQFORBIDDEN: the key's role may not do this"
//	@Failure		404	{object}	Problem	"EMQGONE: the queue has no push target"
//	@Produce		json
//	@Success		200	{object}	Removed	"removed: 1"
//	@Router			/queues/{queue}/push [delete]
func (s *server) handlePushDelete(w http.ResponseWriter, r *http.Request) {
	queue, err := queueParam(r)
	if err == nil {
		var existed bool
		if existed, err = s.cfg.Pushes.Delete(r.Context(), queue, actorOf(r)); err == nil && !existed {
			err = errNoTarget(queue)
		}
	}
	if err != nil {
		s.writeProblem(w, r, err)
		return
	}
	s.audit(r, "delete_push", "queue", queue)
	writeJSON(w, http.StatusOK, Removed{Removed: 1})
}

// PushBody is job j as a push delivery carries it: as a claim answers it,
// its token included (internal/push's Config.Encode).
func PushBody(j job.Job) []byte { return appendJob(nil, j, claimed) }
