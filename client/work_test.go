package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/echo-mq/echo_mq/client"
	"github.com/echo-mq/echo_mq/internal/redistest"
	"github.com/echo-mq/echo_mq/internal/servicetest"
)

// Work tests lease for 900 ms (an extend every 300 ms) and wait 300 ms, so
// that they run fast and still stand a loaded machine.
var fast = []client.WorkOption{client.WithLease(900 * time.Millisecond), client.WithWait(300 * time.Millisecond)}

func TestWorkCompletesJobs(t *testing.T) {
	t.Parallel()
	c, q := newClient(t), redistest.Queue(t)
	for i := range 6 {
		enqueue(t, c, q, client.EnqueueRequest{ID: fmt.Sprint("j", i), Payload: i})
	}
	w := startWork(t, c, q, func(ctx context.Context, job client.Job) (any, error) {
		var n int
		if err := json.Unmarshal(job.Payload, &n); err != nil {
			return nil, err
		}
		return map[string]int{"double": 2 * n}, nil
	}, append(fast, client.WithConcurrency(3), client.WithWorker("tester"))...)
	for i := range 6 {
		job := waitState(t, c, q, fmt.Sprint("j", i), client.StateCompleted)
		if want := fmt.Sprintf(`{"double":%d}`, 2*i); string(job.Result) != want || job.Worker != "tester" {
			t.Errorf("job %s: result %s by %q, want %s by tester", job.ID, job.Result, job.Worker, want)
		}
	}
	if err := w.stop(); err != nil {
		t.Fatalf("Work returned %v, want nil after a stop", err)
	}
}

func TestWorkFailsJobWithHandlerError(t *testing.T) {
	t.Parallel()
	c, q := newClient(t), redistest.Queue(t)
	// No backoff: the retry is claimable at once.
	enqueue(t, c, q, client.EnqueueRequest{ID: "j", MaxAttempts: 2, Backoff: &client.Backoff{Fixed: true}})
	var calls atomic.Int32
	w := startWork(t, c, q, func(ctx context.Context, job client.Job) (any, error) {
		calls.Add(1)
		return nil, errors.New("smtp timeout")
	}, fast...)
	job := waitState(t, c, q, "j", client.StateDead)
	w.stop()
	if job.LastError != "smtp timeout" || job.Attempts != 2 || calls.Load() != 2 {
		t.Fatalf("dead job %+v after %d calls, want last_error \"smtp timeout\" after 2 attempts", job, calls.Load())
	}
}

func TestWorkFatalAndRetryIn(t *testing.T) {
	t.Parallel()
	c, q := newClient(t), redistest.Queue(t)
	// An hour's backoff: only RetryIn brings the job back soon.
	enqueue(t, c, q, client.EnqueueRequest{ID: "j", MaxAttempts: 5, Backoff: &client.Backoff{Fixed: true, Delay: time.Hour}})
	w := startWork(t, c, q, func(ctx context.Context, job client.Job) (any, error) {
		if job.Attempts == 1 {
			return nil, client.RetryIn(errors.New("rate limited"), 0)
		}
		return nil, client.Fatal(errors.New("bad input"))
	}, fast...)
	job := waitState(t, c, q, "j", client.StateDead)
	w.stop()
	if job.Attempts != 2 || job.LastError != "bad input" {
		t.Fatalf("dead job %+v, want 2 attempts (a retry at once, then fatal) and last_error \"bad input\"", job)
	}
}

func TestWorkSnoozeForPutsTheJobBackWithoutSpendingTheAttempt(t *testing.T) {
	t.Parallel()
	direct, q := newClient(t), redistest.Queue(t)
	// One attempt: a snooze that failed the job, or spent its attempt,
	// would leave it dead.
	enqueue(t, direct, q, client.EnqueueRequest{ID: "j", MaxAttempts: 1})
	// The first snooze reaches the service, which snoozes the job, but its
	// answer is lost: Work sends it again, and the repeat is answered 200.
	proxy := servicetest.NewFlakyProxy(t, serviceURL(t))
	proxy.Answer("/jobs/j/snooze", servicetest.Answer{PassOn: true, Status: http.StatusBadGateway})
	logger, logs := captureLogs(slog.LevelInfo)
	const delay = 300 * time.Millisecond
	var calls []time.Time // one Work loop: the handler runs one job at a time
	w := startWork(t, mustNew(t, proxy.URL()), q, func(ctx context.Context, job client.Job) (any, error) {
		calls = append(calls, time.Now())
		if len(calls) == 1 {
			return nil, fmt.Errorf("upstream busy: %w", client.SnoozeFor(delay)) // wrapped: errors.As finds it
		}
		return "done", nil
	}, client.WithLease(3*time.Second), client.WithWait(300*time.Millisecond), client.WithLogger(logger))
	job := waitState(t, direct, q, "j", client.StateCompleted)
	if err := w.stop(); err != nil {
		t.Fatal(err)
	}
	if len(calls) != 2 || job.Attempts != 1 || job.Stalled != 0 || job.LastError != "" || string(job.Result) != `"done"` {
		t.Fatalf("job %+v after %d handler calls; want completed on the second, with 1 attempt, never failed or stalled",
			job, len(calls))
	}
	// 50 ms of slack for the service's clock, read in whole ms.
	if gap := calls[1].Sub(calls[0]); gap < delay-50*time.Millisecond {
		t.Errorf("the job was claimed again %v after it was snoozed for %v", gap, delay)
	}
	if n, fails := len(proxy.Requests("/jobs/j/snooze")), len(proxy.Requests("/jobs/j/fail")); n != 2 || fails != 0 {
		t.Errorf("Work sent %d snoozes and %d fails, want 2 snoozes (the second after a 502) and no fail", n, fails)
	}
	if text := logs.String(); strings.Count(text, `msg="Snoozed job"`) != 1 || !strings.Contains(text, "delay=300ms") {
		t.Errorf("Work did not log the snooze once, with its delay:\n%s", text)
	}
}

func TestWorkSnoozeRefusedFailsTheJob(t *testing.T) {
	t.Parallel()
	c, q := newClient(t), redistest.Queue(t)
	enqueue(t, c, q, client.EnqueueRequest{ID: "j", MaxAttempts: 1})
	w := startWork(t, c, q, func(ctx context.Context, job client.Job) (any, error) {
		return nil, client.SnoozeFor(2 * 365 * 24 * time.Hour) // the service takes a year at most
	}, fast...)
	job := waitState(t, c, q, "j", client.StateDead)
	w.stop()
	if !strings.HasPrefix(job.LastError, "the snooze was refused: ") || !strings.Contains(job.LastError, "EMQINVALID") {
		t.Fatalf("last_error %q, want the refusal of the snooze", job.LastError)
	}
}

func TestWorkHandlerPanicFailsJob(t *testing.T) {
	t.Parallel()
	c, q := newClient(t), redistest.Queue(t)
	enqueue(t, c, q, client.EnqueueRequest{ID: "bad", Payload: "panic", MaxAttempts: 1})
	enqueue(t, c, q, client.EnqueueRequest{ID: "good", Payload: "ok"})
	w := startWork(t, c, q, func(ctx context.Context, job client.Job) (any, error) {
		if string(job.Payload) == `"panic"` {
			panic("boom")
		}
		return "fine", nil
	}, fast...)
	bad := waitState(t, c, q, "bad", client.StateDead)
	waitState(t, c, q, "good", client.StateCompleted) // the loop lived on
	if err := w.stop(); err != nil {
		t.Fatal(err)
	}
	if bad.LastError != "panic: boom" {
		t.Fatalf("last_error %q, want \"panic: boom\"", bad.LastError)
	}
}

func TestWorkCancelInFlightCancelsHandler(t *testing.T) {
	t.Parallel()
	c, q, ctx := newClient(t), redistest.Queue(t), context.Background()
	enqueue(t, c, q, client.EnqueueRequest{ID: "j"})
	started := make(chan struct{})
	causes := make(chan error, 1)
	w := startWork(t, c, q, func(ctx context.Context, job client.Job) (any, error) {
		close(started)
		<-ctx.Done() // the work: it stops only when told to
		causes <- context.Cause(ctx)
		return nil, ctx.Err()
	}, fast...)
	<-started
	if _, requested, err := c.Cancel(ctx, q, "j", client.CancelRequest{Reason: "customer asked"}); err != nil || !requested {
		t.Fatalf("cancel: requested %v, %v", requested, err)
	}
	job := waitState(t, c, q, "j", client.StateCancelled)
	w.stop()
	var cancel *client.CancelRequestedError
	cause := <-causes
	if !errors.Is(cause, client.ErrCancelRequested) || !errors.As(cause, &cancel) || cancel.Reason != "customer asked" {
		t.Fatalf("the handler's context cause is %v, want a cancel request with its reason", cause)
	}
	if job.LastError != "cancelled: customer asked" {
		t.Fatalf("last_error %q, want \"cancelled: customer asked\"", job.LastError)
	}
}

func TestWorkLostJobIsNotReported(t *testing.T) {
	t.Parallel()
	sent := &requestLog{}
	c, q := newClient(t, client.WithHTTPClient(&http.Client{Transport: sent})), redistest.Queue(t)
	enqueue(t, c, q, client.EnqueueRequest{ID: "j"})
	started := make(chan struct{})
	causes := make(chan error, 1)
	w := startWork(t, c, q, func(ctx context.Context, job client.Job) (any, error) {
		close(started)
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return "finished anyway", nil
	}, fast...)
	<-started
	// An operator removes the job from under its worker.
	removeJob(t, serviceURL(t), q, "j")
	cause := <-causes
	if err := w.stop(); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(cause, client.ErrLeaseLost) || !errors.Is(cause, client.ErrGone) {
		t.Fatalf("the handler's context cause is %v, want ErrLeaseLost wrapping ErrGone", cause)
	}
	for _, path := range sent.paths() {
		if strings.HasSuffix(path, "/complete") || strings.HasSuffix(path, "/fail") {
			t.Fatalf("Work reported the lost job: %s", path)
		}
	}
}

func TestWorkExtendsLeaseWhileHandlerRuns(t *testing.T) {
	t.Parallel()
	c, q := newClient(t), redistest.Queue(t)
	enqueue(t, c, q, client.EnqueueRequest{ID: "slow"})
	// The handler runs for three leases; without extends the reaper (every
	// 200 ms) would take the job back and the complete would be stale.
	w := startWork(t, c, q, func(ctx context.Context, job client.Job) (any, error) {
		select {
		case <-time.After(2700 * time.Millisecond):
			return "done", nil
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}, fast...)
	job := waitState(t, c, q, "slow", client.StateCompleted)
	w.stop()
	if job.Attempts != 1 || job.Stalled != 0 {
		t.Fatalf("job %+v, want completed on its first attempt, never stalled", job)
	}
}

func TestWorkProgress(t *testing.T) {
	t.Parallel()
	c, q := newClient(t), redistest.Queue(t)
	enqueue(t, c, q, client.EnqueueRequest{ID: "j"})
	w := startWork(t, c, q, func(ctx context.Context, job client.Job) (any, error) {
		if err := client.Progress(ctx, map[string]int{"pct": 50}); err != nil {
			return nil, err
		}
		// Hold the job until the progress shows, so that the test sees it.
		for ctx.Err() == nil {
			if now, err := c.Job(ctx, q, job.ID); err == nil && string(now.Progress) == `{"pct":50}` {
				return "seen", nil
			}
			time.Sleep(20 * time.Millisecond)
		}
		return nil, ctx.Err()
	}, client.WithLease(time.Minute), client.WithWait(300*time.Millisecond))
	// With a minute's lease the first timed extend is 20 s away: only
	// Progress's own extend can store the progress in time.
	job := waitState(t, c, q, "j", client.StateCompleted)
	w.stop()
	if string(job.Result) != `"seen"` {
		t.Fatalf("result %s, want \"seen\"", job.Result)
	}
	if err := client.Progress(context.Background(), 1); err == nil {
		t.Fatal("Progress outside a handler succeeded, want an error")
	}
}

func TestWorkStopFinishesJobInHand(t *testing.T) {
	t.Parallel()
	c, q := newClient(t), redistest.Queue(t)
	enqueue(t, c, q, client.EnqueueRequest{ID: "first"})
	started, release := make(chan struct{}), make(chan struct{})
	handlerErr := make(chan error, 1)
	w := startWork(t, c, q, func(ctx context.Context, job client.Job) (any, error) {
		close(started)
		<-release
		handlerErr <- ctx.Err()
		return "finished", nil
	}, fast...)
	<-started
	enqueue(t, c, q, client.EnqueueRequest{ID: "second"})
	w.cancel() // the stop comes while the first job runs
	close(release)
	if err := w.wait(); err != nil {
		t.Fatalf("Work returned %v, want nil", err)
	}
	if err := <-handlerErr; err != nil {
		t.Fatalf("the handler's context ended with %v on stop, want it left to finish", err)
	}
	if job := getJob(t, c, q, "first"); job.State != client.StateCompleted {
		t.Fatalf("the job in hand is %s after the stop, want completed", job.State)
	}
	if job := getJob(t, c, q, "second"); job.State != client.StatePending {
		t.Fatalf("the job enqueued before the stop is %s, want pending: Work claimed after the stop", job.State)
	}
}

func TestWorkStopKeepsClaimInFlight(t *testing.T) {
	t.Parallel()
	claimSent := make(chan struct{}, 1)
	hc := &http.Client{Transport: &requestLog{onClaim: func() {
		select {
		case claimSent <- struct{}{}:
		default:
		}
	}}}
	c, q := newClient(t, client.WithHTTPClient(hc)), redistest.Queue(t)
	w := startWork(t, c, q, func(ctx context.Context, job client.Job) (any, error) {
		return "worked", nil
	}, client.WithLease(900*time.Millisecond), client.WithWait(3*time.Second))
	<-claimSent
	// The stop comes while the claim waits; the job comes after it. The
	// claim must not be cut short: the job it brings is worked, not
	// stranded as active until its lease lapses.
	w.cancel()
	enqueue(t, c, q, client.EnqueueRequest{ID: "late"})
	if err := w.wait(); err != nil {
		t.Fatal(err)
	}
	if job := getJob(t, c, q, "late"); job.State != client.StateCompleted || string(job.Result) != `"worked"` {
		t.Fatalf("the job the claim in flight brought is %s (%s), want completed", job.State, job.Result)
	}
}

func TestWorkReturnsClaimRefusal(t *testing.T) {
	t.Parallel()
	c := newClient(t)
	err := c.Work(context.Background(), "no spaces allowed", func(ctx context.Context, job client.Job) (any, error) {
		return nil, nil
	}, fast...)
	if !errors.Is(err, client.ErrInvalid) {
		t.Fatalf("Work on an invalid queue name returned %v, want ErrInvalid", err)
	}
}

// working is a call of Work running in the background.
type working struct {
	cancel context.CancelFunc
	done   chan error
}

// startWork runs Work in the background until the test stops it (or
// ends).
func startWork(tb testing.TB, c *client.Client, queue string, h client.Handler, opts ...client.WorkOption) *working {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := &working{cancel: cancel, done: make(chan error, 1)}
	go func() { w.done <- c.Work(ctx, queue, h, opts...) }()
	tb.Cleanup(func() { w.stop() })
	return w
}

// stop tells Work to stop and returns what it returned.
func (w *working) stop() error {
	w.cancel()
	return w.wait()
}

// wait returns what Work returned, or an error if it has not returned
// within 10 s. It may be called more than once.
func (w *working) wait() error {
	select {
	case err := <-w.done:
		w.done <- err // for the next wait
		return err
	case <-time.After(10 * time.Second):
		return errors.New("Work did not return within 10 s")
	}
}

// waitState polls the job until it is in state, and returns it. It fails
// the test after 10 s.
func waitState(tb testing.TB, c *client.Client, queue, id string, state client.State) client.Job {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		job, err := c.Job(context.Background(), queue, id)
		if err == nil && job.State == state {
			return job
		}
		if time.Now().After(deadline) {
			tb.Fatalf("job %s is %q (%v) after 10 s, want %s", id, job.State, err, state)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func getJob(tb testing.TB, c *client.Client, queue, id string) client.Job {
	tb.Helper()
	job, err := c.Job(context.Background(), queue, id)
	if err != nil {
		tb.Fatal(err)
	}
	return job
}

// removeJob deletes a job, even an active one, as an operator may: the
// client has no operator calls.
func removeJob(tb testing.TB, base, queue, id string) {
	tb.Helper()
	req, _ := http.NewRequest(http.MethodDelete, base+"/queues/"+queue+"/jobs/"+id+"?force=true", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		tb.Fatalf("remove %s: status %d", id, resp.StatusCode)
	}
}

// requestLog is a transport that records the paths it sends, and calls
// onClaim when it sends a claim.
type requestLog struct {
	mu      sync.Mutex
	sent    []string
	onClaim func()
}

func (l *requestLog) RoundTrip(req *http.Request) (*http.Response, error) {
	l.mu.Lock()
	l.sent = append(l.sent, req.URL.Path)
	l.mu.Unlock()
	if l.onClaim != nil && strings.HasSuffix(req.URL.Path, "/claim") {
		l.onClaim()
	}
	return http.DefaultTransport.RoundTrip(req)
}

func (l *requestLog) paths() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.sent...)
}
