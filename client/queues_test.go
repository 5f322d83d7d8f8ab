package client_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/echo-mq/echo_mq/client"
	"github.com/echo-mq/echo_mq/internal/servicetest"
)

// TestListQueuesAndQuota: ListQueues pages by name and by a prefix, and a
// queue past EMQ_MAX_QUEUES is ErrQuota, naming the limit.
func TestListQueuesAndQuota(t *testing.T) {
	t.Parallel()
	svc := servicetest.Start(t, serviceBin, serviceEnv("EMQ_MAX_QUEUES=5")...)
	c, ctx := mustNew(t, svc.URL()), context.Background()
	names := []string{"mail-2", "mail-1", "pay-1", "mailer", "pay-2"}
	for _, q := range names {
		if _, _, err := c.Enqueue(ctx, q, client.EnqueueRequest{Payload: 1}); err != nil {
			t.Fatal(err)
		}
	}
	_, _, err := c.Enqueue(ctx, "one-more", client.EnqueueRequest{Payload: 1})
	var e *client.Error
	if !errors.Is(err, client.ErrQuota) || !errors.As(err, &e) || e.Status != 409 || !strings.Contains(e.Detail, "5") {
		t.Errorf("enqueue past the limit: got %v, want ErrQuota naming 5", err)
	}
	for prefix, want := range map[string][]string{
		"": {"mail-1", "mail-2", "mailer", "pay-1", "pay-2"}, "mail": {"mail-1", "mail-2", "mailer"},
		"mail-": {"mail-1", "mail-2"}, "x": nil,
	} {
		var got []string
		list := client.QueueList{Prefix: prefix, Limit: 2}
		for pages := 0; pages < 10; pages++ {
			page, next, err := c.ListQueues(ctx, list)
			if err != nil {
				t.Fatal(err)
			}
			for _, q := range page {
				got = append(got, q.Name)
				if q.Counts["pending"] != 1 {
					t.Errorf("queue %s counts %v, want 1 pending", q.Name, q.Counts)
				}
			}
			if list.Cursor = next; next == "" {
				break
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("prefix %q: listed %v, want %v", prefix, got, want)
		}
	}
	if _, _, err := c.ListQueues(ctx, client.QueueList{Prefix: "a:b"}); !errors.Is(err, client.ErrInvalid) {
		t.Errorf("a bad prefix: got %v, want ErrInvalid", err)
	}
}
