package push

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/echo-mq/echo_mq/internal/job"
	"github.com/echo-mq/echo_mq/internal/lease"
	"github.com/echo-mq/echo_mq/internal/telemetry"
	"github.com/echo-mq/echo_mq/internal/wake"
)

// The outcomes of a delivery, for the metrics and the logs.
const (
	Completed   = "completed"   // a 2xx but 202: the job is completed
	Accepted    = "accepted"    // 202: the receiver reports itself
	Failed      = "failed"      // another status: the attempt failed
	TimedOut    = "timeout"     // no answer within the target's timeout
	Unreachable = "unreachable" // no connection, or it broke
	Late        = "late"        // the answer came after the attempt lost its lease
)

// errorTextMax bounds the part of a receiver's answer kept in last_error.
const errorTextMax = 200

// Config is what a Deliverer runs with.
type Config struct {
	Store  *Store
	Leases *lease.Service
	// Waiters wakes a queue's loop when its jobs become pending; nil: it
	// looks every Interval.
	Waiters *wake.Hub
	// Allow is the hosts a target may name, checked again before each
	// claim: a target whose host left EMQ_PUSH_ALLOW gets nothing.
	Allow Allow
	// Encode is a claimed job as a claim answers it, token included: the
	// body of its delivery.
	Encode func(job.Job) []byte
	// MaxResultBytes bounds a receiver's answer that becomes a job's
	// result (EMQ_MAX_VALUE_BYTES).
	MaxResultBytes int
	// Interval is how often the set of queues with a target is read, and
	// the longest a queue's loop sleeps; 0: one second.
	Interval time.Duration
	// Drain is how long Run waits for deliveries under way once its
	// context ends; those still running then are abandoned, their jobs
	// left to their leases (the sweep hands them out again). 0: 10 s.
	Drain time.Duration
	// OnDelivery is told each delivery's outcome and how long it took; nil: nothing.
	OnDelivery func(queue, outcome string, took time.Duration)
	// Telemetry traces each delivery in its producer's trace; nil (or
	// off): none, and a job's traceparent is passed on as it was sent.
	Telemetry *telemetry.Telemetry
	Logger    *slog.Logger
}

// Deliverer delivers the jobs of every queue that has a target, one loop
// per queue; every service replica runs one.
type Deliverer struct {
	cfg    Config
	client *http.Client
	worker string // the claims' worker name: push@<host>:<pid>
	log    *slog.Logger

	mu      sync.Mutex
	loops   map[string]bool      // the queues with a loop running
	refused map[string]time.Time // when a queue's refused target was last logged
	wg      sync.WaitGroup       // the loops and their deliveries
}

// NewDeliverer returns a Deliverer; Run starts it.
func NewDeliverer(cfg Config) *Deliverer {
	if cfg.Interval == 0 {
		cfg.Interval = time.Second
	}
	if cfg.Drain == 0 {
		cfg.Drain = 10 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	host, _ := os.Hostname()
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.Proxy = nil // a target is called directly: EMQ_PUSH_ALLOW names what is called
	transport.MaxIdleConnsPerHost = 100
	transport.TLSHandshakeTimeout = 0 // bounded by each delivery's timeout, as the rest of the exchange
	return &Deliverer{cfg: cfg, worker: "push@" + host + ":" + strconv.Itoa(os.Getpid()), log: cfg.Logger, loops: map[string]bool{}, refused: map[string]time.Time{},
		client: &http.Client{Transport: transport,
			// A redirect is an answer like any other status: following it
			// would call a host EMQ_PUSH_ALLOW may not name.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}}
}

// Run starts a loop for each queue with a target, as targets come, until
// ctx ends; then it waits up to Config.Drain for the deliveries under way.
func (d *Deliverer) Run(ctx context.Context) {
	// Deliveries outlive ctx by up to Drain, so that a stopping replica
	// reports the answers it is waiting for.
	deliveries, abandon := context.WithCancel(context.WithoutCancel(ctx))
	defer abandon()
	tick := time.NewTicker(d.cfg.Interval)
	defer tick.Stop()
	for {
		d.startLoops(ctx, deliveries)
		select {
		case <-ctx.Done():
			d.drain(abandon)
			return
		case <-tick.C:
		}
	}
}

// drain waits up to Config.Drain for the loops and their deliveries, then
// abandons the rest.
func (d *Deliverer) drain(abandon context.CancelFunc) {
	done := make(chan struct{})
	go func() { d.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(d.cfg.Drain):
		d.log.Warn("Push deliveries abandoned at shutdown; their jobs go out again when their leases lapse")
		abandon()
		<-done
	}
}

// startLoops starts a loop for each queue with a target that has none.
func (d *Deliverer) startLoops(ctx, deliveries context.Context) {
	queues, err := d.cfg.Store.Queues(ctx)
	if err != nil {
		if ctx.Err() == nil {
			d.log.Warn("Push: cannot list the queues with a target", "error", err)
		}
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, queue := range queues {
		if !d.loops[queue] {
			d.loops[queue] = true
			d.wg.Add(1)
			go d.loop(ctx, deliveries, queue)
		}
	}
}

// loop delivers queue's jobs while it has a target: it claims as many as
// the target's concurrency leaves room for, here and across replicas
// (claim.lua's max_active), and sleeps until woken, a delivery ends or
// Interval passes.
func (d *Deliverer) loop(ctx, deliveries context.Context, queue string) {
	defer d.wg.Done()
	defer func() { d.mu.Lock(); delete(d.loops, queue); d.mu.Unlock() }()
	ended := make(chan struct{}, MaxConcurrency)
	inFlight := 0
	// The target, read again once Interval has passed: a busy queue's loop
	// turns once per delivery that ends, and should not read it each time.
	var t Target
	var ok bool
	var err error
	var readAt time.Time
	for ctx.Err() == nil {
		for drained := false; !drained; { // the deliveries that ended meanwhile
			select {
			case <-ended:
				inFlight--
			default:
				drained = true
			}
		}
		if err != nil || time.Since(readAt) >= d.cfg.Interval {
			t, ok, err = d.cfg.Store.Get(ctx, queue)
			readAt = time.Now()
		}
		if err == nil && !ok && inFlight == 0 { // the target is gone, and so are its deliveries
			if err := d.cfg.Store.forget(ctx, queue); err != nil && ctx.Err() == nil {
				d.log.Warn("Push: cannot forget a queue without a target", "queue", queue, "error", err)
			}
			return
		}
		var waiter *wake.Waiter
		if d.cfg.Waiters != nil {
			waiter = d.cfg.Waiters.Register(queue)
		}
		claimed := 0
		switch {
		case err != nil:
			d.log.Warn("Push: cannot read the target", "queue", queue, "error", err)
		case !ok || !d.permitted(queue, t):
			// No target (the deliveries under way finish), or its host is
			// no longer allowed: its jobs wait; both are looked at again.
		case inFlight < t.Concurrency:
			claimed = d.start(ctx, deliveries, queue, t, inFlight, ended)
			inFlight += claimed
		}
		if claimed == 0 || inFlight >= t.Concurrency {
			d.sleep(ctx, waiter, ended, &inFlight)
		}
		if waiter != nil {
			waiter.Done()
		}
	}
}

// permitted reports whether t's host is still in Config.Allow, and logs
// it (once a minute at most) when not.
func (d *Deliverer) permitted(queue string, t Target) bool {
	u, err := url.Parse(t.URL)
	if err == nil && d.cfg.Allow.Permits(u) {
		return true
	}
	if now := time.Now(); now.Sub(d.refusedAt(queue)) >= time.Minute {
		d.mu.Lock()
		d.refused[queue] = now
		d.mu.Unlock()
		d.log.Warn("Push: the queue's target host is not in EMQ_PUSH_ALLOW; nothing is delivered", "queue", queue)
	}
	return false
}

func (d *Deliverer) refusedAt(queue string) time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.refused[queue]
}

// start claims up to the room t's concurrency leaves beside inFlight and
// delivers each job it got, each telling ended when it is done; it returns
// how many it started.
func (d *Deliverer) start(ctx, deliveries context.Context, queue string, t Target, inFlight int, ended chan<- struct{}) int {
	if ctx.Err() != nil {
		return 0 // stopping: no new claim
	}
	// Under the deliveries' context, not ctx: a claim sent as the replica
	// begins to stop still has its reply read, and its jobs delivered in
	// the drain, instead of left to their leases.
	c, err := d.cfg.Leases.Claim(deliveries, queue, lease.ClaimParams{Count: min(t.Concurrency-inFlight, 100),
		Lease: t.Lease, Worker: d.worker, MaxActive: t.Concurrency})
	if err != nil && ctx.Err() == nil {
		d.log.Warn("Push: claim failed", "queue", queue, "error", err)
	}
	for _, j := range c.Jobs {
		d.wg.Add(1)
		go func() {
			defer d.wg.Done()
			d.deliver(deliveries, queue, t, j)
			ended <- struct{}{}
		}()
	}
	return len(c.Jobs)
}

// sleep waits for a wake, a delivery's end (counted off inFlight) or
// Interval.
func (d *Deliverer) sleep(ctx context.Context, waiter *wake.Waiter, ended <-chan struct{}, inFlight *int) {
	var woken <-chan struct{}
	if waiter != nil {
		woken = waiter.C
	}
	timer := time.NewTimer(d.cfg.Interval)
	defer timer.Stop()
	select {
	case <-ctx.Done():
	case <-woken:
	case <-ended:
		*inFlight--
	case <-timer.C:
	}
}

// deliver POSTs job j to t and reports the answer with the job's token:
// complete, fail, or nothing for a 202.
func (d *Deliverer) deliver(ctx context.Context, queue string, t Target, j job.Job) {
	started := time.Now()
	ctx, end := d.cfg.Telemetry.StartDelivery(ctx, j.Traceparent, queue, j.ID)
	answer := d.post(ctx, queue, t, j)
	if d.cfg.Telemetry.Enabled() {
		defer func() { end(answer.failure()) }()
	}
	outcome := answer.outcome
	if ctx.Err() != nil {
		// Abandoned at shutdown: the job keeps its lease, and goes out
		// again once that lapses. Nothing is reported.
		return
	}
	var err error
	switch outcome {
	case Completed:
		_, _, err = d.cfg.Leases.Complete(ctx, queue, j.ID, j.Token, answer.result, nil)
	case Failed, TimedOut, Unreachable:
		// Kept first, so that whoever sees the attempt failed finds why.
		d.remember(ctx, queue, j, answer)
		_, err = d.cfg.Leases.Fail(ctx, queue, j.ID, lease.FailParams{Token: j.Token, Error: answer.text, RetryIn: answer.retryIn})
	}
	switch {
	case errors.Is(err, job.ErrStale), errors.Is(err, job.ErrGone):
		outcome = Late // the sweep took it back (or it was removed): the answer changes nothing
	case err != nil:
		d.log.Warn("Push: cannot report a delivery's answer; the job goes out again when its lease lapses",
			"queue", queue, "job", j.ID, "outcome", outcome, "error", err)
	}
	if d.cfg.OnDelivery != nil {
		d.cfg.OnDelivery(queue, outcome, time.Since(started))
	}
	d.log.Debug("Push delivery", "queue", queue, "job", j.ID, "outcome", outcome, "status", answer.status)
}

// remember keeps a failed delivery in the queue's delivery errors.
func (d *Deliverer) remember(ctx context.Context, queue string, j job.Job, a answer) {
	e := DeliveryError{At: time.Now().UTC(), JobID: j.ID, Attempt: j.Attempts, Status: a.status, Error: a.text}
	if err := d.cfg.Store.record(ctx, queue, e); err != nil {
		d.log.Warn("Push: cannot keep a delivery error", "queue", queue, "error", err)
	}
}

// answer is what a delivery came back with.
type answer struct {
	outcome string
	status  int             // 0: no answer
	result  json.RawMessage // a 2xx's JSON body; nil: none
	text    string          // for a failure, its last_error
	retryIn *time.Duration  // a 429's or 503's Retry-After; nil: the job's backoff
}

// failure is the delivery's error for its span: nil when the receiver
// took the job (completed or accepted).
func (a answer) failure() error {
	if a.outcome == Completed || a.outcome == Accepted {
		return nil
	}
	if a.text != "" {
		return errors.New(a.text)
	}
	return errors.New(a.outcome)
}

// post sends j to t, signed when t has a secret, and reads the answer.
func (d *Deliverer) post(ctx context.Context, queue string, t Target, j job.Job) answer {
	body := d.cfg.Encode(j)
	bound := postBound(t, j)
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.URL, bytes.NewReader(body))
	if err != nil {
		return answer{outcome: Unreachable, text: "the target cannot be called: " + err.Error()}
	}
	setHeaders(req.Header, t.Headers) // first: the delivery's own come after
	d.passTrace(ctx, req.Header, j)
	if err := sign(req.Header, t.Secret, queue+":"+j.ID+":"+strconv.FormatInt(j.Token, 10), body); err != nil {
		return answer{outcome: Unreachable, text: "the delivery cannot be signed: " + err.Error()}
	}
	resp, err := d.client.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return answer{outcome: TimedOut, text: fmt.Sprintf("timeout: no answer within %d ms", bound.Milliseconds())}
		}
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err // without the URL, which may carry what a log should not
		}
		return answer{outcome: Unreachable, text: "unreachable: " + err.Error()}
	}
	defer resp.Body.Close()
	text, err := io.ReadAll(io.LimitReader(resp.Body, int64(d.cfg.MaxResultBytes)+1))
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return answer{outcome: TimedOut, status: resp.StatusCode,
			text: fmt.Sprintf("timeout: the answer did not end within %d ms", bound.Milliseconds())}
	}
	return answerOf(resp, text, d.cfg.MaxResultBytes)
}

// passTrace puts the trace on a delivery's headers, so that the receiver
// continues it as a claiming worker would from the job's traceparent: the
// delivery's own span when tracing is on, else the producer's traceparent
// as it was sent.
func (d *Deliverer) passTrace(ctx context.Context, h http.Header, j job.Job) {
	switch {
	case d.cfg.Telemetry.Enabled():
		d.cfg.Telemetry.Inject(ctx, h)
	case j.Traceparent != "":
		h.Set("traceparent", j.Traceparent)
	}
}

// postBound is how long the POST of j may take: the target's timeout, but
// never so long that the job's lease could lapse first. A job's own
// timeout_ms (docs/admission.md) shortens its lease below the target's
// lease_ms; a POST left open past the lease would let the sweep hand the
// job to another delivery while this one runs. The lease's last fifth (at
// most a second) is kept for reporting the answer.
func postBound(t Target, j job.Job) time.Duration {
	leased := j.LeaseExpiresAt.Sub(j.StartedAt)
	if j.LeaseExpiresAt.IsZero() || j.StartedAt.IsZero() || leased <= 0 {
		return t.Timeout
	}
	return max(min(t.Timeout, leased-min(leased/5, time.Second)), time.Millisecond)
}

// answerOf reads a receiver's answer: its status and body (at most
// maxResult+1 bytes read).
func answerOf(resp *http.Response, body []byte, maxResult int) answer {
	a := answer{status: resp.StatusCode}
	switch code := resp.StatusCode; {
	case code == http.StatusAccepted:
		a.outcome = Accepted
	case code >= 200 && code < 300:
		a.outcome = Completed
		var compact bytes.Buffer
		if len(body) <= maxResult && json.Compact(&compact, body) == nil && compact.Len() > 0 {
			a.result = compact.Bytes()
		}
	default:
		a.outcome = Failed
		a.text = fmt.Sprintf("HTTP %d", code)
		if snippet := oneLine(body, errorTextMax); snippet != "" {
			a.text += ": " + snippet
		}
		if code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable {
			a.retryIn = retryAfter(resp.Header.Get("Retry-After"), time.Now())
		}
	}
	return a
}

// retryAfter reads a Retry-After header (seconds, or an HTTP date) as a
// delay from now; nil when there is none or it cannot be read. A date
// that has passed is 0; a delay is at most a year.
func retryAfter(v string, now time.Time) *time.Duration {
	var d time.Duration
	if secs, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil && secs >= 0 {
		d = time.Duration(min(secs, 365*24*3600)) * time.Second
	} else if at, err := http.ParseTime(v); err == nil {
		d = max(0, min(at.Sub(now), 365*24*time.Hour)).Truncate(time.Millisecond)
	} else {
		return nil
	}
	return &d
}

// oneLine is the start of b as one line of at most n bytes, for last_error.
func oneLine(b []byte, n int) string {
	s := strings.Join(strings.Fields(string(b)), " ")
	if len(s) > n {
		s = strings.ToValidUTF8(s[:n], "") + "…"
	}
	return s
}

// sign writes the Standard Webhooks headers of a delivery: its id and
// timestamp, and with a secret its signature over both and the body.
func sign(h http.Header, secret, id string, body []byte) error {
	now := time.Now()
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", "echo_mq push")
	h.Set("webhook-id", id)
	h.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
	if secret == "" {
		return nil
	}
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		return err
	}
	signature, err := wh.Sign(id, now, body)
	if err != nil {
		return err
	}
	h.Set("webhook-signature", signature)
	return nil
}
