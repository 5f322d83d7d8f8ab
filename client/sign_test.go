package client_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
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

// Identical signed requests, one after another and from two Clients with
// the same key, are stamped with seconds of their own, the latest first,
// none after the time they were sent: the client borrows earlier seconds
// rather than waiting for new ones.
func TestSigningBorrowsEarlierSeconds(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var stamps []int64
	peer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ts, err := strconv.ParseInt(r.Header.Get("X-EMQ-Timestamp"), 10, 64)
		if err != nil || r.Header.Get("Authorization") != "" {
			http.Error(w, "want a signed request with no key", http.StatusBadRequest)
			return
		}
		mu.Lock()
		stamps = append(stamps, ts)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"jobs":[]}`))
	}))
	defer peer.Close()
	key := "borrow-key-" + strconv.FormatInt(time.Now().UnixNano(), 10) // no other test's signatures
	a := mustNew(t, peer.URL, client.WithSigningKey(key))
	b := mustNew(t, peer.URL, client.WithSigningKey(key))
	ctx := context.Background()
	for i := range 12 {
		c := a
		if i%2 == 1 {
			c = b
		}
		if _, err := c.Claim(ctx, "q", client.ClaimRequest{Count: 1}); err != nil {
			t.Fatal(err)
		}
	}
	after := time.Now().Unix()
	seen := map[int64]bool{}
	for _, ts := range stamps {
		if seen[ts] {
			t.Errorf("two identical requests stamped %d: the service refuses the second as a replay (stamps %v)", ts, stamps)
		}
		seen[ts] = true
		if ts > after || ts < after-31 {
			t.Errorf("stamp %d is outside [%d, %d]: the client waited, or borrowed too far back (stamps %v)", ts, after-31, after, stamps)
		}
	}
	if len(stamps) != 12 {
		t.Fatalf("the peer saw %d signed requests, want 12", len(stamps))
	}
	if slices.Min(stamps) >= stamps[0] {
		t.Errorf("no request was stamped before the first (stamps %v): the client waited for new seconds", stamps)
	}
}
