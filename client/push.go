package client

import (
	"context"
	"net/http"
	"time"
)

// PushTarget is where the service delivers a queue's jobs instead of
// handing them to workers (docs/push.md): each job is POSTed to URL,
// signed with Secret the Standard Webhooks way, and the answer completes
// or fails the attempt (202: the receiver reports itself with the job's
// token, as a worker does).
type PushTarget struct {
	// URL is where each job is POSTed: http or https, its host in the
	// service's EMQ_PUSH_ALLOW.
	URL string
	// Timeout bounds one delivery; 0 leaves the default, 30 s.
	Timeout time.Duration
	// Concurrency is the queue's active jobs at most, across every service
	// replica; 0 leaves the default, 10.
	Concurrency int
	// Lease is each delivery's lease, longer than Timeout; 0 leaves the
	// default, Timeout + 30 s.
	Lease time.Duration
	// Secret signs the deliveries: "whsec_" and the base64 of 24 to 64
	// random bytes. The service never answers it back: in a target it
	// answered, Secret is "" and SecretSet says whether it has one.
	Secret    string
	SecretSet bool
	// Headers are sent with every delivery, such as a gateway's token in
	// front of the receiver: at most 20, names HTTP tokens the delivery
	// does not set itself (not Host, Content-Type, User-Agent, webhook-*,
	// hop-by-hop ones...), values printable ASCII, 8 KB together. Like
	// Secret, the service never answers them back: in a target it
	// answered, Headers is nil and HeaderNames names the ones set
	// (canonical, sorted).
	Headers     map[string]string
	HeaderNames []string
	// UpdatedAt is when the target was last put (answers only).
	UpdatedAt time.Time
	// RecentErrors are the last failed deliveries, newest first (answers
	// only).
	RecentErrors []PushError
}

// PushError is one failed delivery.
type PushError struct {
	At      time.Time `json:"at"`
	JobID   string    `json:"job_id"`
	Attempt int       `json:"attempt"`
	Status  int       `json:"status"` // the receiver's HTTP status; 0 when none came
	Error   string    `json:"error"`  // the attempt's last_error
}

// pushBody is a PushTarget as the API reads and answers it.
type pushBody struct {
	URL          string            `json:"url"`
	TimeoutMs    *int64            `json:"timeout_ms,omitempty"`
	Concurrency  int               `json:"concurrency,omitempty"`
	LeaseMs      *int64            `json:"lease_ms,omitempty"`
	Secret       string            `json:"secret,omitempty"`
	SecretSet    bool              `json:"secret_set,omitempty"`
	Headers      map[string]string `json:"headers,omitempty"`
	HeaderNames  []string          `json:"header_names,omitempty"`
	UpdatedAt    time.Time         `json:"updated_at,omitzero"`
	RecentErrors []PushError       `json:"recent_errors,omitempty"`
}

func (b pushBody) target() PushTarget {
	t := PushTarget{URL: b.URL, Concurrency: b.Concurrency, SecretSet: b.SecretSet, UpdatedAt: b.UpdatedAt,
		RecentErrors: b.RecentErrors, HeaderNames: b.HeaderNames}
	if b.TimeoutMs != nil {
		t.Timeout = time.Duration(*b.TimeoutMs) * time.Millisecond
	}
	if b.LeaseMs != nil {
		t.Lease = time.Duration(*b.LeaseMs) * time.Millisecond
	}
	return t
}

// PutPush sets queue's push target, replacing any it had whole, and
// returns it as the service keeps it (defaults filled in, no secret). It
// takes an admin key; the service must allow the URL's host
// (EMQ_PUSH_ALLOW): a host it does not is a 400, no allow list at all a
// 409 (Error.Code "EMQSTATE").
func (c *Client) PutPush(ctx context.Context, queue string, t PushTarget) (PushTarget, error) {
	body := pushBody{URL: t.URL, TimeoutMs: millisIfSet(t.Timeout), Concurrency: t.Concurrency,
		LeaseMs: millisIfSet(t.Lease), Secret: t.Secret, Headers: t.Headers}
	var out pushBody
	_, err := c.do(ctx, http.MethodPut, queuePath(queue, "/push"), body, &out)
	return out.target(), err
}

// Push returns queue's push target and its recent delivery errors; ErrGone
// if it has none.
func (c *Client) Push(ctx context.Context, queue string) (PushTarget, error) {
	var out pushBody
	_, err := c.do(ctx, http.MethodGet, queuePath(queue, "/push"), nil, &out)
	return out.target(), err
}

// DeletePush takes queue's push target away: its jobs wait for workers
// again once each replica has seen it (within a second). ErrGone if it had
// none. It takes an admin key.
func (c *Client) DeletePush(ctx context.Context, queue string) error {
	_, err := c.do(ctx, http.MethodDelete, queuePath(queue, "/push"), nil, nil)
	return err
}
