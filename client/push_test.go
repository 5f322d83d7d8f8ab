package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/echo-mq/echo_mq/client"
	"github.com/echo-mq/echo_mq/internal/redistest"
	"github.com/echo-mq/echo_mq/internal/servicetest"
)

const pushSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSwNDE0NjM3MDk1NzI="

// A push target is put, read and deleted through the client, and the
// service delivers a job to it, signed.
func TestPushTarget(t *testing.T) {
	t.Parallel()
	svc := servicetest.Start(t, serviceBin, serviceEnv("EMQ_PUSH_ALLOW=127.0.0.1")...)
	c, q, ctx := mustNew(t, svc.URL()), redistest.Queue(t), context.Background()
	wh, err := standardwebhooks.NewWebhook(pushSecret)
	if err != nil {
		t.Fatal(err)
	}
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := wh.Verify(body, r.Header); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		var j client.Job
		if err := json.Unmarshal(body, &j); err != nil || j.Token == 0 {
			http.Error(w, "not a claimed job", http.StatusBadRequest)
			return
		}
		json.NewEncoder(w).Encode(map[string]string{"got": j.ID})
	}))
	t.Cleanup(receiver.Close)

	put, err := c.PutPush(ctx, q, client.PushTarget{URL: receiver.URL, Timeout: 5 * time.Second, Concurrency: 2, Secret: pushSecret})
	if err != nil {
		t.Fatal(err)
	}
	if put.URL != receiver.URL || put.Timeout != 5*time.Second || put.Concurrency != 2 || put.Lease != 35*time.Second ||
		!put.SecretSet || put.Secret != "" || put.UpdatedAt.IsZero() || len(put.RecentErrors) != 0 {
		t.Fatalf("put answered %+v", put)
	}
	j, _, err := c.Enqueue(ctx, q, client.EnqueueRequest{ID: "hello", Payload: map[string]int{"n": 1}})
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); j.State != "completed"; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not delivered within 10 s: %+v", j)
		}
		if j, err = c.Job(ctx, q, "hello"); err != nil {
			t.Fatal(err)
		}
	}
	if raw := j.Result; string(raw) != `{"got":"hello"}` || j.Worker == "" {
		t.Fatalf("delivered job %+v (result %s)", j, raw)
	}
	if got, err := c.Push(ctx, q); err != nil || got.URL != put.URL || !got.UpdatedAt.Equal(put.UpdatedAt) {
		t.Fatalf("Push: %+v, %v", got, err)
	}
	if err := c.DeletePush(ctx, q); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Push(ctx, q); !errors.Is(err, client.ErrGone) {
		t.Fatalf("Push after DeletePush: %v, want ErrGone", err)
	}
	if err := c.DeletePush(ctx, q); !errors.Is(err, client.ErrGone) {
		t.Fatalf("a second DeletePush: %v, want ErrGone", err)
	}

	// A service without EMQ_PUSH_ALLOW refuses every target.
	var e *client.Error
	if _, err := newClient(t).PutPush(ctx, q, client.PushTarget{URL: receiver.URL}); !errors.As(err, &e) || e.Code != "EMQSTATE" {
		t.Fatalf("a target without EMQ_PUSH_ALLOW: %v, want EMQSTATE", err)
	}
}
