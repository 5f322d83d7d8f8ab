package client_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/echo-mq/echo_mq/client"
	"github.com/echo-mq/echo_mq/internal/redistest"
)

// lineTexts are the page's lines without their times.
func lineTexts(p client.LogPage) []string {
	out := make([]string, len(p.Lines))
	for i, l := range p.Lines {
		out[i] = l.Line
	}
	return out
}

// AppendLog and Logs: lines come back in order, a cursor at the end
// answers the lines appended since, and the fence holds.
func TestAppendLogAndLogs(t *testing.T) {
	t.Parallel()
	c, q, ctx := newClient(t), redistest.Queue(t), context.Background()
	enqueue(t, c, q, client.EnqueueRequest{ID: "j", Payload: 1})
	job := claimOne(t, c, q)
	logged, err := c.AppendLog(ctx, q, job.ID, job.Token, "one", "two")
	if err != nil || logged != (client.Logged{Appended: 2, Total: 2}) {
		t.Fatalf("AppendLog: %+v, %v; want 2 appended, 2 in all", logged, err)
	}
	page, err := c.Logs(ctx, q, job.ID, client.LogsRequest{})
	if err != nil || !slices.Equal(lineTexts(page), []string{"one", "two"}) || page.Lines[0].At.IsZero() || page.NextCursor == "" {
		t.Fatalf("Logs: %+v, %v; want the two lines, their times and a cursor", page, err)
	}
	if _, err := c.AppendLog(ctx, q, job.ID, job.Token, "three"); err != nil {
		t.Fatal(err)
	}
	tail, err := c.Logs(ctx, q, job.ID, client.LogsRequest{Cursor: page.NextCursor, Limit: 10})
	if err != nil || !slices.Equal(lineTexts(tail), []string{"three"}) {
		t.Fatalf("Logs from the end: %+v, %v; want the line appended since", tail, err)
	}
	if got := getJob(t, c, q, job.ID); got.LogLines != 3 {
		t.Errorf("the job's LogLines = %d, want 3", got.LogLines)
	}
	if _, err := c.AppendLog(ctx, q, job.ID, job.Token+1, "late"); !errors.Is(err, client.ErrStale) {
		t.Errorf("AppendLog with another token: %v, want ErrStale", err)
	}
	if _, err := c.AppendLog(ctx, q, job.ID, job.Token); !errors.Is(err, client.ErrInvalid) {
		t.Errorf("AppendLog of no lines: %v, want ErrInvalid", err)
	}
	if _, err := c.Logs(ctx, q, "nope", client.LogsRequest{}); !errors.Is(err, client.ErrGone) {
		t.Errorf("Logs of no such job: %v, want ErrGone", err)
	}
}

// Log: a Work handler logs to the job it runs; outside a handler it is
// an error.
func TestWorkHandlerLogs(t *testing.T) {
	t.Parallel()
	c, q := newClient(t), redistest.Queue(t)
	enqueue(t, c, q, client.EnqueueRequest{ID: "j", Payload: 1})
	w := startWork(t, c, q, func(ctx context.Context, job client.Job) (any, error) {
		if err := client.Log(ctx, "started", "working"); err != nil {
			return nil, err
		}
		return nil, client.Log(ctx, "done")
	}, fast...)
	waitState(t, c, q, "j", client.StateCompleted)
	if err := w.stop(); err != nil {
		t.Fatal(err)
	}
	page, err := c.Logs(context.Background(), q, "j", client.LogsRequest{})
	if err != nil || !slices.Equal(lineTexts(page), []string{"started", "working", "done"}) {
		t.Fatalf("the handler's log: %+v, %v; want its three lines", lineTexts(page), err)
	}
	if err := client.Log(context.Background(), "nowhere"); err == nil {
		t.Error("Log outside a handler: nil, want an error")
	}
}
