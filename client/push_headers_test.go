package client_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/echo-mq/echo_mq/client"
	"github.com/echo-mq/echo_mq/internal/redistest"
	"github.com/echo-mq/echo_mq/internal/servicetest"
)

// A target's Headers go with each delivery; the service answers their
// names only, and refuses one it sets itself as ErrInvalid.
func TestPushHeaders(t *testing.T) {
	t.Parallel()
	svc := servicetest.Start(t, serviceBin, serviceEnv("EMQ_PUSH_ALLOW=127.0.0.1")...)
	c, q, ctx := mustNew(t, svc.URL()), redistest.Queue(t), context.Background()
	got := make(chan string, 10)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get("Authorization")
	}))
	t.Cleanup(receiver.Close)

	headers := map[string]string{"authorization": "Bearer gw-token", "X-Tenant": "42"}
	put, err := c.PutPush(ctx, q, client.PushTarget{URL: receiver.URL, Headers: headers})
	if err != nil {
		t.Fatal(err)
	}
	read, err := c.Push(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	for _, target := range []client.PushTarget{put, read} {
		if !slices.Equal(target.HeaderNames, []string{"Authorization", "X-Tenant"}) || target.Headers != nil {
			t.Fatalf("answered headers %v, names %v; want the names only", target.Headers, target.HeaderNames)
		}
	}
	if _, _, err := c.Enqueue(ctx, q, client.EnqueueRequest{Payload: 1}); err != nil {
		t.Fatal(err)
	}
	select {
	case auth := <-got:
		if auth != "Bearer gw-token" {
			t.Fatalf("the delivery carried Authorization %q", auth)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no delivery within 10 s")
	}
	_, err = c.PutPush(ctx, q, client.PushTarget{URL: receiver.URL, Headers: map[string]string{"Host": "x"}})
	if !errors.Is(err, client.ErrInvalid) {
		t.Fatalf("a Host header: %v, want ErrInvalid", err)
	}
}
