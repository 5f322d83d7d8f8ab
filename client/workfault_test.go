package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/echo-mq/echo_mq/client"
	"github.com/echo-mq/echo_mq/internal/redistest"
	"github.com/echo-mq/echo_mq/internal/servicetest"
)

// Work when the service misbehaves: it hangs, refuses reports for longer
// than a lease, or is asked for a wait it would refuse.

func TestWorkRetriesAHungExtendBeforeTheLeaseLapses(t *testing.T) {
	t.Parallel()
	q, direct := redistest.Queue(t), newClient(t)
	enqueue(t, direct, q, client.EnqueueRequest{ID: "j"})
	proxy := servicetest.NewFlakyProxy(t, serviceURL(t))
	proxy.Answer("/lease", servicetest.Answer{Hang: true})
	// A 1.5 s lease: extends every 0.5 s. The first hangs; given up after
	// 0.5 s, it is sent again at once, 0.5 s before the lease lapses. An
	// extend that hung for the 30 s of a complete would let the lease
	// lapse and the sweep (every 200 ms) take the job back.
	w := startWork(t, mustNew(t, proxy.URL()), q, func(ctx context.Context, job client.Job) (any, error) {
		select {
		case <-time.After(3 * time.Second): // two leases
			return "done", nil
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}, client.WithLease(1500*time.Millisecond), client.WithWait(300*time.Millisecond))
	job := waitState(t, direct, q, "j", client.StateCompleted)
	if err := w.stop(); err != nil {
		t.Fatal(err)
	}
	if job.Attempts != 1 || job.Stalled != 0 {
		t.Fatalf("job %+v, want completed on its first attempt, never stalled", job)
	}
	extends := proxy.Requests("/lease")
	if len(extends) < 2 || !extends[0].Answered || extends[0].Done.IsZero() || extends[1].Answered {
		t.Fatalf("extends %+v; want the first hung and given up, the next ones passed on", extends)
	}
}

func TestWorkGivesUpAReportOnceTheLeaseLapsed(t *testing.T) {
	t.Parallel()
	q, direct := redistest.Queue(t), newClient(t)
	enqueue(t, direct, q, client.EnqueueRequest{ID: "j"})
	proxy := servicetest.NewFlakyProxy(t, serviceURL(t))
	for range 100 {
		proxy.Answer("/complete", restarting) // the service is down for good
	}
	logger, logs := captureLogs(slog.LevelInfo)
	handled := make(chan struct{})
	w := startWork(t, mustNew(t, proxy.URL()), q, func(ctx context.Context, job client.Job) (any, error) {
		close(handled)
		return "lost result", nil
	}, append(fast, client.WithLogger(logger))...)
	<-handled
	w.cancel() // a stop while the report cannot get through
	if err := w.wait(); err != nil {
		t.Fatalf("Work after a stop with the service refusing reports: %v; want it to give up and return nil", err)
	}
	// The job's lease (900 ms) lapsed without a report: the sweep takes it
	// back, to be run again.
	job := waitState(t, direct, q, "j", client.StatePending)
	if job.Stalled != 1 || job.Result != nil {
		t.Fatalf("job %+v, want pending again after one stall, with no result", job)
	}
	claims, completes := proxy.Requests("/claim"), proxy.Requests("/complete")
	if len(completes) < 2 || len(proxy.Requests("/fail")) != 0 {
		t.Fatalf("%d completes and %d fails were sent; want the complete retried, no fail after giving up",
			len(completes), len(proxy.Requests("/fail")))
	}
	// Not given up early: the last complete went once the lease had lapsed
	// (it began after the claim came in).
	if last := completes[len(completes)-1].At; last.Before(claims[0].At.Add(900 * time.Millisecond)) {
		t.Errorf("the last complete went %v after the claim came in, before the 900 ms lease lapsed",
			last.Sub(claims[0].At))
	}
	if text := logs.String(); !strings.Contains(text, `msg="Gave up reporting job"`) || !strings.Contains(text, "job_id=j") {
		t.Fatalf("Work did not log that it gave up the report:\n%s", text)
	}
}

// TestWorkWarnsToTheDefaultLogger is not parallel: it replaces
// slog.Default, which Work logs to without WithLogger.
func TestWorkWarnsToTheDefaultLogger(t *testing.T) {
	logger, logs := captureLogs(slog.LevelDebug)
	defer slog.SetDefault(slog.Default())
	slog.SetDefault(logger)

	q, direct := redistest.Queue(t), newClient(t)
	enqueue(t, direct, q, client.EnqueueRequest{ID: "j"})
	proxy := servicetest.NewFlakyProxy(t, serviceURL(t))
	proxy.Answer("/claim", servicetest.Unavailable(1))
	w := startWork(t, mustNew(t, proxy.URL()), q, func(ctx context.Context, job client.Job) (any, error) {
		return "ok", nil
	}, fast...)
	waitState(t, direct, q, "j", client.StateCompleted)
	if err := w.stop(); err != nil {
		t.Fatal(err)
	}
	text := logs.String()
	if !strings.Contains(text, `level=WARN msg="Backing off" queue=`+q) {
		t.Errorf("Work did not warn slog.Default that it backs off:\n%s", text)
	}
	if strings.Contains(text, "Claimed job") || strings.Contains(text, "Completed job") {
		t.Errorf("Work logged a line per job to slog.Default unasked:\n%s", text)
	}
}

func TestWorkClampsAWaitOverTheMaximum(t *testing.T) {
	t.Parallel()
	claims := make(chan claimBody, 10)
	hc := &http.Client{Transport: &bodyLog{claims: claims}}
	c, q := newClient(t, client.WithHTTPClient(hc)), redistest.Queue(t)
	w := startWork(t, c, q, func(ctx context.Context, job client.Job) (any, error) {
		return "worked", nil
	}, client.WithLease(900*time.Millisecond), client.WithWait(45*time.Second))
	first := <-claims
	if first.WaitMs != client.MaxWait.Milliseconds() {
		t.Fatalf("a claim of Work with WithWait(45 s) asked to wait %d ms, want %d", first.WaitMs, client.MaxWait.Milliseconds())
	}
	// The service took the wait: the claim waits, and brings the job that
	// comes (a wait it refused would have ended Work with ErrInvalid).
	w.cancel()
	enqueue(t, c, q, client.EnqueueRequest{ID: "late"})
	if err := w.wait(); err != nil {
		t.Fatal(err)
	}
	if job := getJob(t, c, q, "late"); job.State != client.StateCompleted {
		t.Fatalf("the job the long claim brought is %s, want completed", job.State)
	}
}

type claimBody struct {
	WaitMs int64 `json:"wait_ms"`
}

// bodyLog is a transport that sends each claim's body, decoded, to claims.
type bodyLog struct {
	claims chan<- claimBody
}

func (l *bodyLog) RoundTrip(req *http.Request) (*http.Response, error) {
	if strings.HasSuffix(req.URL.Path, "/claim") && req.Body != nil {
		raw, err := io.ReadAll(req.Body)
		if err != nil {
			return nil, err
		}
		var body claimBody
		json.Unmarshal(raw, &body)
		select {
		case l.claims <- body:
		default:
		}
		req.Body = io.NopCloser(bytes.NewReader(raw))
	}
	return http.DefaultTransport.RoundTrip(req)
}

// captureLogs returns a logger that keeps the lines of level and above,
// and what it has kept.
func captureLogs(level slog.Level) (*slog.Logger, *lockedBuffer) {
	buf := &lockedBuffer{}
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: level})), buf
}

// lockedBuffer is a bytes.Buffer safe for concurrent use.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
