package client_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/echo-mq/echo_mq/client"
	"github.com/echo-mq/echo_mq/internal/redistest"
	"github.com/echo-mq/echo_mq/internal/servicetest"
)

// A signing client is let in without sending its key, and never has a
// request refused as a replay: identical claims sent at once, in the same
// second, are each answered, and a Work loop completes jobs.
func TestSigningKey(t *testing.T) {
	t.Parallel()
	const workerKey = "worker-key-for-signing-0123456789"
	base := servicetest.Start(t, serviceBin, serviceEnv("EMQ_API_KEYS=worker:"+workerKey)...).URL()
	c := mustNew(t, base, client.WithSigningKey(workerKey))
	q, ctx := redistest.Queue(t), context.Background()

	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() { _, errs[i] = c.Claim(ctx, q, client.ClaimRequest{Count: 1}) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("identical claim %d of 4 sent at once, signed: %v", i, err)
		}
	}

	for _, id := range []string{"s1", "s2"} {
		if _, _, err := c.Enqueue(ctx, q, client.EnqueueRequest{ID: id, Payload: id}); err != nil {
			t.Fatalf("signed enqueue: %v", err)
		}
	}
	workCtx, stop := context.WithTimeout(ctx, time.Minute)
	defer stop()
	var mu sync.Mutex
	done := map[string]bool{}
	err := c.Work(workCtx, q, func(ctx context.Context, job client.Job) (any, error) {
		mu.Lock()
		defer mu.Unlock()
		if done[job.ID] = true; len(done) == 2 {
			stop()
		}
		return "ok", nil
	}, client.WithWait(200*time.Millisecond))
	if err != nil || len(done) != 2 {
		t.Fatalf("Work, signed: %v, handled %v", err, done)
	}
	for _, id := range []string{"s1", "s2"} {
		j, err := c.Job(ctx, q, id)
		if err != nil || j.State != client.StateCompleted {
			t.Errorf("job %s after Work: %+v, %v; want completed", id, j, err)
		}
	}

	if _, _, err := mustNew(t, base, client.WithSigningKey("not-the-key")).Enqueue(ctx, q,
		client.EnqueueRequest{Payload: 1}); !errors.Is(err, client.ErrUnauthorized) {
		t.Fatalf("enqueue signed with a key the service does not know: %v, want ErrUnauthorized", err)
	}
}
