package client_test

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/echo-mq/echo_mq/client"
	"github.com/echo-mq/echo_mq/internal/redistest"
)

// A queue's settings are put whole and read back, job defaults and
// retention included; the defaults fill in what an enqueue does not name.
func TestQueueSettings(t *testing.T) {
	t.Parallel()
	c, q, ctx := newClient(t), redistest.Queue(t), context.Background()
	if s, err := c.Settings(ctx, q); err != nil || !reflect.DeepEqual(s, client.QueueSettings{}) {
		t.Fatalf("a queue without settings: %+v, %v", s, err)
	}
	four := 4
	want := client.QueueSettings{Concurrency: 10, RateLimit: &client.RateLimit{Limit: 5, Window: time.Second}, GroupFIFO: true,
		JobDefaults: &client.JobDefaults{MaxAttempts: 6, Backoff: &client.Backoff{Fixed: true, Delay: time.Second, MaxDelay: time.Hour},
			Priority: &four, Timeout: time.Minute, ExpiresIn: time.Hour},
		Retention: &client.Retention{Completed: &client.Keep{Count: 100}, Dead: &client.Keep{MaxAge: 24 * time.Hour}, Cancelled: &client.Keep{}}}
	put, err := c.SetSettings(ctx, q, want)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Settings(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []client.QueueSettings{put, got} {
		if !reflect.DeepEqual(s, want) {
			t.Fatalf("settings answered %+v, want %+v", s, want)
		}
	}
	j, _, err := c.Enqueue(ctx, q, client.EnqueueRequest{Payload: 1})
	if err != nil {
		t.Fatal(err)
	}
	if j.Priority != 4 || j.MaxAttempts != 6 || j.ExpiresAt.IsZero() {
		t.Errorf("a job naming nothing: %+v, want the queue's defaults", j)
	}
	if _, err := c.SetSettings(ctx, q, client.QueueSettings{JobDefaults: &client.JobDefaults{MaxAttempts: 1001}}); !errors.Is(err, client.ErrInvalid) {
		t.Errorf("max_attempts 1001: %v, want ErrInvalid", err)
	}
}
