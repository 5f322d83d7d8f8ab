package goclient_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"testing"

	"github.com/echo-mq/echo_mq/api/goclient"
	"github.com/echo-mq/echo_mq/internal/redistest"
	"github.com/echo-mq/echo_mq/internal/servicetest"
)

var serviceBin string

func TestMain(m *testing.M) { os.Exit(servicetest.Main(m, &serviceBin)) }

func ptr[T any](v T) *T { return &v }

// TestGeneratedClientWorksAQueue drives a worker loop through the client
// oapi-codegen made from api/openapi.yaml, against the real service, open
// (no key, the spec's {} alternative) and with keys (a bearer key): enqueue
// 20, claim one, then extend with progress and complete with claim-next
// until nothing comes; every job ends completed with its result.
func TestGeneratedClientWorksAQueue(t *testing.T) {
	const key = "worker-key-0123456789abcdef"
	t.Run("open", func(t *testing.T) {
		svc := servicetest.Start(t, serviceBin, "EMQ_REDIS_URL=redis://"+redistest.Addr()+"/0", "EMQ_PREFIX=goclient-open")
		c, err := goclient.NewClientWithResponses(svc.URL())
		if err != nil {
			t.Fatal(err)
		}
		workAQueue(t, c)
	})
	t.Run("bearer key", func(t *testing.T) {
		svc := servicetest.Start(t, serviceBin, "EMQ_REDIS_URL=redis://"+redistest.Addr()+"/0", "EMQ_PREFIX=goclient-keys",
			"EMQ_API_KEYS=worker:"+key)
		bearer := goclient.WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
			req.Header.Set("Authorization", "Bearer "+key)
			return nil
		})
		c, err := goclient.NewClientWithResponses(svc.URL(), bearer)
		if err != nil {
			t.Fatal(err)
		}
		anonymous, err := goclient.NewClientWithResponses(svc.URL())
		if err != nil {
			t.Fatal(err)
		}
		if resp, err := anonymous.ClaimJobsWithResponse(context.Background(), "generated", nil, goclient.ClaimRequest{}); err != nil || resp.ApplicationproblemJSON401 == nil {
			t.Fatalf("a claim without the key: %v %s, want 401", err, resp.Body)
		}
		workAQueue(t, c)
	})
}

// workAQueue is the loop of TestGeneratedClientWorksAQueue through c.
func workAQueue(t *testing.T, c *goclient.ClientWithResponses) {
	t.Helper()
	ctx := context.Background()
	queue, n := redistest.Queue(t), 20 // a queue of its own: the job ids are fixed
	for i := range n {
		resp, err := c.EnqueueJobWithResponse(ctx, queue, nil, goclient.EnqueueRequest{
			Id: ptr(fmt.Sprintf("job-%d", i)), Payload: map[string]int{"n": i}})
		if err != nil || resp.JSON201 == nil {
			t.Fatalf("enqueue %d: %v %s", i, err, resp.Body)
		}
	}
	claimed, err := c.ClaimJobsWithResponse(ctx, queue, nil, goclient.ClaimRequest{Count: ptr(1), LeaseMs: ptr(int64(30000))})
	if err != nil || claimed.JSON200 == nil || len(claimed.JSON200.Jobs) != 1 {
		t.Fatalf("claim: %v %s", err, claimed.Body)
	}
	job := claimed.JSON200.Jobs[0]
	done := map[string]bool{}
	for {
		if job.Token == nil {
			t.Fatalf("claimed job %s has no token", job.Id)
		}
		ext, err := c.ExtendLeaseWithResponse(ctx, queue, job.Id, nil, goclient.ExtendRequest{
			Token: *job.Token, LeaseMs: ptr(int64(30000)), Progress: map[string]string{"step": "halfway"}})
		if err != nil || ext.JSON200 == nil || ext.JSON200.CancelRequested {
			t.Fatalf("extend %s: %v %s", job.Id, err, ext.Body)
		}
		fin, err := c.CompleteJobWithResponse(ctx, queue, job.Id, nil, goclient.CompleteRequest{
			Token: *job.Token, Result: map[string]bool{"ok": true},
			Claim: &goclient.ClaimNext{Count: ptr(1), LeaseMs: ptr(int64(30000))}})
		if err != nil || fin.JSON200 == nil || fin.JSON200.State != goclient.JobStateCompleted {
			t.Fatalf("complete %s: %v %s", job.Id, err, fin.Body)
		}
		done[job.Id] = true
		if fin.JSON200.Next == nil || len(*fin.JSON200.Next) == 0 {
			break
		}
		job = (*fin.JSON200.Next)[0]
	}
	if len(done) != n {
		t.Fatalf("completed %d jobs, want %d", len(done), n)
	}
	for i := range n {
		got, err := c.GetJobWithResponse(ctx, queue, fmt.Sprintf("job-%d", i), nil)
		if err != nil || got.StatusCode() != http.StatusOK || got.JSON200.State != goclient.JobStateCompleted ||
			fmt.Sprint(got.JSON200.Result) != "map[ok:true]" || fmt.Sprint(got.JSON200.Progress) != "map[step:halfway]" {
			t.Fatalf("job-%d: %v %s", i, err, got.Body)
		}
	}
}
