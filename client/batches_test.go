package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/echo-mq/echo_mq/client"
	"github.com/echo-mq/echo_mq/internal/redistest"
)

// A batch's jobs carry its id; once every one completed the batch is done,
// and its callback job comes on the callback's queue, where a worker
// claims it and decodes the batch and the callback's payload.
func TestBatchCallback(t *testing.T) {
	t.Parallel()
	c, q, cbq, ctx := newClient(t), redistest.Queue(t), redistest.Queue(t), context.Background()
	req := client.CreateBatchRequest{ID: "import-7",
		Jobs:     []client.EnqueueRequest{{ID: "a", Payload: 1}, {ID: "b", Payload: 2}},
		Callback: &client.BatchCallback{Queue: cbq, Payload: map[string]int{"user": 42}}}
	b, created, err := c.CreateBatch(ctx, q, req)
	if err != nil || !created {
		t.Fatalf("create: created %v, err %v; want a new batch", created, err)
	}
	if b.ID != "import-7" || b.Queue != q || b.State != client.BatchRunning || b.Total != 2 || b.Success ||
		b.Callback.Queue != cbq || b.Callback.When != client.CallbackComplete || b.CreatedAt.IsZero() ||
		!b.FinishedAt.IsZero() || b.CallbackJobID != "" || len(b.Jobs) != 2 {
		t.Fatalf("create answered %+v", b)
	}
	if raw, ok := b.Callback.Payload.(json.RawMessage); !ok || string(raw) != `{"user":42}` {
		t.Fatalf("create answered the callback payload %#v", b.Callback.Payload)
	}
	for i, j := range b.Jobs {
		if j.ID != req.Jobs[i].ID || j.BatchID != "import-7" || j.State != client.StatePending {
			t.Fatalf("create answered the job %+v", j)
		}
	}
	again, created, err := c.CreateBatch(ctx, q, req)
	if err != nil || created || again.Total != 2 || len(again.Jobs) != 0 {
		t.Fatalf("the same id again: %+v, created %v, %v; want the batch as it was, nothing added", again, created, err)
	}
	if got, err := c.Batch(ctx, q, "import-7"); err != nil || got.Counts != (client.BatchCounts{Pending: 2}) {
		t.Fatalf("Batch: %+v, %v; want 2 pending", got, err)
	}

	completeNext(t, c, q)
	if got, err := c.Batch(ctx, q, "import-7"); err != nil || got.State != client.BatchRunning ||
		got.Counts != (client.BatchCounts{Pending: 1, Completed: 1}) {
		t.Fatalf("Batch after one job: %+v, %v; want running, 1 pending and 1 completed", got, err)
	}
	completeNext(t, c, q)

	cb := claimCallback(t, c, cbq)
	if cb.ID != "batch:import-7" || cb.BatchID != "" {
		t.Fatalf("claimed %+v, want the callback job batch:import-7", cb)
	}
	p, err := client.DecodeBatchCallback(cb)
	if err != nil {
		t.Fatal(err)
	}
	if pb := p.Batch; pb.ID != "import-7" || pb.Queue != q || pb.State != client.BatchDone || !pb.Success || pb.Total != 2 ||
		pb.Counts != (client.BatchCounts{Completed: 2}) || pb.FinishedAt.IsZero() || pb.Jobs != nil || pb.Callback.Queue != cbq {
		t.Fatalf("the callback's batch %+v", pb)
	}
	if string(p.Payload) != `{"user":42}` {
		t.Fatalf("the callback's payload %s, want {\"user\":42}", p.Payload)
	}
	done, err := c.Batch(ctx, q, "import-7")
	if err != nil || done.State != client.BatchDone || !done.Success || done.CallbackJobID != "batch:import-7" ||
		!done.FinishedAt.Equal(p.Batch.FinishedAt) {
		t.Fatalf("the done batch: %+v, %v", done, err)
	}
}

// A closed batch needs a job. An open batch committed with no jobs is done
// at once; a callback of {} is on the batch's own queue, with a null
// payload.
func TestEmptyBatchCallsBackAtOnce(t *testing.T) {
	t.Parallel()
	c, q, ctx := newClient(t), redistest.Queue(t), context.Background()
	if _, _, err := c.CreateBatch(ctx, q, client.CreateBatchRequest{}); !errors.Is(err, client.ErrInvalid) {
		t.Fatalf("create with no jobs: %v, want EMQINVALID", err)
	}
	b, created, err := c.CreateBatch(ctx, q, client.CreateBatchRequest{Open: true, Callback: &client.BatchCallback{}})
	if err != nil || !created || b.ID == "" || b.State != client.BatchOpen {
		t.Fatalf("create: %+v, created %v, %v; want a new open batch", b, created, err)
	}
	if b, err = c.CommitBatch(ctx, q, b.ID); err != nil || b.State != client.BatchDone || !b.Success || b.Total != 0 ||
		b.Callback.Queue != q || b.Callback.Payload != nil {
		t.Fatalf("commit: %+v, %v; want done", b, err)
	}
	cb := claimCallback(t, c, q)
	p, err := client.DecodeBatchCallback(cb)
	if err != nil || cb.ID != client.BatchCallbackPrefix+b.ID || p.Batch.ID != b.ID || string(p.Payload) != "null" {
		t.Fatalf("callback %+v decoded to %+v, %v; want the batch and a null payload", cb, p, err)
	}
}

// An open batch takes more jobs until it is committed, and is not done
// before, even when every job it has has ended.
func TestOpenBatchAddCommit(t *testing.T) {
	t.Parallel()
	c, q, ctx := newClient(t), redistest.Queue(t), context.Background()
	b, _, err := c.CreateBatch(ctx, q, client.CreateBatchRequest{Open: true, Jobs: []client.EnqueueRequest{{ID: "first"}},
		Callback: &client.BatchCallback{}})
	if err != nil || b.State != client.BatchOpen || b.Total != 1 {
		t.Fatalf("create: %+v, %v; want an open batch of 1", b, err)
	}
	completeNext(t, c, q)
	if got, err := c.Batch(ctx, q, b.ID); err != nil || got.State != client.BatchOpen || got.Counts.Completed != 1 {
		t.Fatalf("Batch with its one job completed: %+v, %v; want it open still", got, err)
	}
	added, err := c.AddBatchJobs(ctx, q, b.ID, []client.EnqueueRequest{{ID: "second"}, {ID: "third", DependsOn: []string{"second"}}})
	if err != nil || added.State != client.BatchOpen || added.Total != 3 || len(added.Jobs) != 2 ||
		added.Jobs[0].ID != "second" || added.Jobs[0].State != client.StatePending || added.Jobs[0].BatchID != b.ID ||
		added.Jobs[1].State != client.StateWaiting || !slices.Equal(added.Jobs[1].DependsOn, []string{"second"}) {
		t.Fatalf("add: %+v, %v", added, err)
	}
	committed, err := c.CommitBatch(ctx, q, b.ID)
	if err != nil || committed.State != client.BatchRunning || committed.Total != 3 || committed.Jobs != nil ||
		committed.Counts.Completed != 1 {
		t.Fatalf("commit: %+v, %v; want running, 1 of 3 completed", committed, err)
	}
	if got, err := c.Batch(ctx, q, b.ID); err != nil || got.Counts != (client.BatchCounts{Pending: 1, Waiting: 1, Completed: 1}) {
		t.Fatalf("Batch once committed: %+v, %v; want 1 pending, 1 waiting, 1 completed", got, err)
	}
	_, err = c.AddBatchJobs(ctx, q, b.ID, []client.EnqueueRequest{{ID: "late"}})
	var e *client.Error
	if !errors.Is(err, client.ErrState) || !errors.As(err, &e) || e.Status != http.StatusConflict {
		t.Fatalf("add to a committed batch: %v, want a 409 ErrState", err)
	}
	if _, err := c.Job(ctx, q, "late"); !errors.Is(err, client.ErrGone) {
		t.Fatalf("the refused job: %v, want ErrGone", err)
	}
	completeNext(t, c, q)
	completeNext(t, c, q)
	done, err := c.CommitBatch(ctx, q, b.ID)
	if err != nil || done.State != client.BatchDone || !done.Success || done.Total != 3 {
		t.Fatalf("a second commit, once every job completed: %+v, %v; want the batch, done", done, err)
	}
	if p, err := client.DecodeBatchCallback(claimCallback(t, c, q)); err != nil || p.Batch.ID != b.ID {
		t.Fatalf("callback: %+v, %v", p, err)
	}
}

// A job with dependencies is waiting, and claimed by nobody, until each
// of them has completed; when one dies it is cancelled, or with
// DependencyFailureRun it runs anyway.
func TestDependentJobWaits(t *testing.T) {
	t.Parallel()
	c, q, ctx := newClient(t), redistest.Queue(t), context.Background()
	enqueue(t, c, q, client.EnqueueRequest{ID: "extract"})
	load := enqueue(t, c, q, client.EnqueueRequest{ID: "load", DependsOn: []string{"extract"}})
	if load.State != client.StateWaiting || !slices.Equal(load.DependsOn, []string{"extract"}) ||
		load.OnDependencyFailure != client.DependencyFailureCancel {
		t.Fatalf("enqueued %+v, want it waiting for extract, cancelled if extract fails", load)
	}
	jobs, err := c.Claim(ctx, q, client.ClaimRequest{Count: 10, Lease: 5 * time.Second})
	if err != nil || len(jobs) != 1 || jobs[0].ID != "extract" {
		t.Fatalf("claim: %v, %v; want extract only", jobs, err)
	}
	if _, err := c.Complete(ctx, q, "extract", client.CompleteRequest{Token: jobs[0].Token}); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Job(ctx, q, "load"); err != nil || got.State != client.StatePending {
		t.Fatalf("load once extract completed: %+v, %v; want pending", got, err)
	}
	if next := claimOne(t, c, q); next.ID != "load" {
		t.Fatalf("claimed %s, want load", next.ID)
	}

	jobs, err = c.EnqueueBatch(ctx, q, []client.EnqueueRequest{{ID: "flaky", MaxAttempts: 1},
		{ID: "strict", DependsOn: []string{"flaky"}},
		{ID: "lenient", DependsOn: []string{"flaky"}, OnDependencyFailure: client.DependencyFailureRun}})
	if err != nil || jobs[1].State != client.StateWaiting || jobs[2].OnDependencyFailure != client.DependencyFailureRun {
		t.Fatalf("enqueue batch: %+v, %v", jobs, err)
	}
	flaky := claimOne(t, c, q)
	if _, err := c.Fail(ctx, q, flaky.ID, client.FailRequest{Token: flaky.Token, Error: "boom"}); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Job(ctx, q, "strict"); err != nil || got.State != client.StateCancelled || got.CancelReason != "dependency flaky dead" {
		t.Fatalf("strict once flaky died: %+v, %v; want cancelled by its dependency", got, err)
	}
	if got, err := c.Job(ctx, q, "lenient"); err != nil || got.State != client.StatePending {
		t.Fatalf("lenient once flaky died: %+v, %v; want pending", got, err)
	}
}

// The batch calls' refusals are the package's errors.
func TestBatchErrors(t *testing.T) {
	t.Parallel()
	c, q, ctx := newClient(t), redistest.Queue(t), context.Background()
	calls := map[string]func() error{
		"Batch":        func() error { _, err := c.Batch(ctx, q, "nobody"); return err },
		"CommitBatch":  func() error { _, err := c.CommitBatch(ctx, q, "nobody"); return err },
		"AddBatchJobs": func() error { _, err := c.AddBatchJobs(ctx, q, "nobody", []client.EnqueueRequest{{}}); return err },
	}
	for name, call := range calls {
		err := call()
		var e *client.Error
		if !errors.Is(err, client.ErrGone) || !errors.As(err, &e) || e.Status != http.StatusNotFound {
			t.Errorf("%s of a batch that does not exist: %v, want a 404 ErrGone", name, err)
		}
	}

	for _, tc := range []struct {
		name  string
		call  func() error
		field string
	}{
		{"a batch id of dots", func() error { _, err := c.Batch(ctx, q, ".."); return err }, "id"},
		{"a created id too long", func() error {
			_, _, err := c.CreateBatch(ctx, q, client.CreateBatchRequest{ID: strings.Repeat("a", 123)})
			return err
		}, "id"},
		{"no jobs to add", func() error {
			_, err := c.AddBatchJobs(ctx, q, "nobody", nil)
			return err
		}, "jobs"},
		{"a callback's unknown when", func() error {
			_, _, err := c.CreateBatch(ctx, q, client.CreateBatchRequest{Callback: &client.BatchCallback{When: "sometimes"}})
			return err
		}, "callback.when"},
		{"a dependency and a group", func() error {
			_, _, err := c.Enqueue(ctx, q, client.EnqueueRequest{DependsOn: []string{"x"}, Group: "g"})
			return err
		}, "depends_on"},
		{"on_dependency_failure alone", func() error {
			_, _, err := c.Enqueue(ctx, q, client.EnqueueRequest{OnDependencyFailure: client.DependencyFailureRun})
			return err
		}, "on_dependency_failure"},
		{"a cycle in a batch", func() error {
			_, _, err := c.CreateBatch(ctx, q, client.CreateBatchRequest{Jobs: []client.EnqueueRequest{
				{ID: "x", DependsOn: []string{"y"}}, {ID: "y", DependsOn: []string{"x"}}}})
			return err
		}, "jobs[0].depends_on"},
		{"an unknown dependency", func() error {
			_, _, err := c.Enqueue(ctx, q, client.EnqueueRequest{DependsOn: []string{"nobody"}})
			return err
		}, ""},
	} {
		err := tc.call()
		var e *client.Error
		if !errors.Is(err, client.ErrInvalid) || !errors.As(err, &e) || e.Status != http.StatusBadRequest {
			t.Errorf("%s: %v, want a 400 ErrInvalid", tc.name, err)
			continue
		}
		if tc.field != "" && !slices.ContainsFunc(e.Fields, func(f client.FieldError) bool { return f.Field == tc.field }) {
			t.Errorf("%s: field errors %+v, want one on %s", tc.name, e.Fields, tc.field)
		}
	}
}

// DecodeBatchCallback refuses a job that is not a batch's callback.
func TestDecodeBatchCallbackRefusesOtherJobs(t *testing.T) {
	for _, job := range []client.Job{
		{ID: "report", Payload: json.RawMessage(`{"batch":{"id":"report"},"payload":null}`)},
		{ID: "batch:b1", Payload: json.RawMessage(`{"batch":{"id":"b2"},"payload":null}`)},
		{ID: "batch:b1", Payload: json.RawMessage(`"b1"`)},
		{ID: "batch:b1", Payload: json.RawMessage(`{}`)},
	} {
		if p, err := client.DecodeBatchCallback(job); err == nil {
			t.Errorf("decoded %s %s to %+v, want an error", job.ID, job.Payload, p)
		}
	}
}

// completeNext claims the next job of queue and completes it, failing the
// test if it cannot.
func completeNext(tb testing.TB, c *client.Client, queue string) client.Job {
	tb.Helper()
	job := claimOne(tb, c, queue)
	done, err := c.Complete(context.Background(), queue, job.ID, client.CompleteRequest{Token: job.Token})
	if err != nil {
		tb.Fatal(err)
	}
	return done
}

// claimCallback claims the next job of queue, waiting up to 5 s for it
// (a batch's callback comes within about 250 ms of its end), and
// completes it.
func claimCallback(tb testing.TB, c *client.Client, queue string) client.Job {
	tb.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		jobs, err := c.Claim(ctx, queue, client.ClaimRequest{Lease: 5 * time.Second, Wait: time.Second})
		if err != nil {
			tb.Fatal(err)
		}
		if len(jobs) == 1 {
			if _, err := c.Complete(ctx, queue, jobs[0].ID, client.CompleteRequest{Token: jobs[0].Token}); err != nil {
				tb.Fatal(err)
			}
			return jobs[0]
		}
	}
	tb.Fatalf("no callback job came on %s within 5 s", queue)
	return client.Job{}
}

// A batch made without a callback answers none, and once done enqueues no
// job that a worker of its queue would be handed.
func TestBatchWithoutCallback(t *testing.T) {
	t.Parallel()
	c, q, ctx := newClient(t), redistest.Queue(t), context.Background()
	b, _, err := c.CreateBatch(ctx, q, client.CreateBatchRequest{ID: "plain", Jobs: []client.EnqueueRequest{{ID: "a", Payload: 1}}})
	if err != nil || b.Callback != nil {
		t.Fatalf("create: %+v, %v; want a batch with no callback", b, err)
	}
	completeNext(t, c, q)
	if got, err := c.Batch(ctx, q, "plain"); err != nil || got.State != client.BatchDone || got.Callback != nil {
		t.Fatalf("Batch: %+v, %v; want done, with no callback", got, err)
	}
	time.Sleep(100 * time.Millisecond) // several dispatcher rounds
	if jobs, err := c.Claim(ctx, q, client.ClaimRequest{Count: 10}); err != nil || len(jobs) != 0 {
		t.Fatalf("claim after the batch is done: %+v, %v; want nothing", jobs, err)
	}
}
