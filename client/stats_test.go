package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/echo-mq/echo_mq/client"
	"github.com/echo-mq/echo_mq/internal/redistest"
)

// A queue's stats count the jobs the test enqueued, ran and ended, with
// their mean wait and run, and its latency while a job is pending.
func TestStats(t *testing.T) {
	t.Parallel()
	c, q, ctx := newClient(t), redistest.Queue(t), context.Background()
	for _, r := range []client.EnqueueRequest{{ID: "done"}, {ID: "retried"}, {ID: "dead"},
		{ID: "cancelled", Priority: 1}, {ID: "waiting", Priority: 1}} {
		if _, _, err := c.Enqueue(ctx, q, r); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(20 * time.Millisecond) // a wait to measure
	jobs, err := c.Claim(ctx, q, client.ClaimRequest{Count: 3})
	if err != nil || len(jobs) != 3 {
		t.Fatalf("Claim: %d jobs, %v; want 3", len(jobs), err)
	}
	time.Sleep(20 * time.Millisecond) // a run to measure
	token := map[string]int64{}
	for _, j := range jobs {
		token[j.ID] = j.Token
	}
	if _, err := c.Complete(ctx, q, "done", client.CompleteRequest{Token: token["done"]}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Fail(ctx, q, "retried", client.FailRequest{Token: token["retried"], Error: "later", RetryIn: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Fail(ctx, q, "dead", client.FailRequest{Token: token["dead"], Error: "never", Fatal: true}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Cancel(ctx, q, "cancelled", client.CancelRequest{}); err != nil {
		t.Fatal(err)
	}

	// Two minutes, in case the current one turned over during the test.
	st, err := c.Stats(ctx, q, 2)
	if err != nil {
		t.Fatal(err)
	}
	if st.Queue != q || len(st.Minutes) != 2 {
		t.Fatalf("Stats answered queue %q and %d minutes, want %q and 2", st.Queue, len(st.Minutes), q)
	}
	last := st.Minutes[1]
	if d := time.Since(last.At); d < 0 || d > 2*time.Minute || !st.Minutes[0].At.Add(time.Minute).Equal(last.At) {
		t.Fatalf("minutes at %v and %v, want the last two, a minute apart", st.Minutes[0].At, last.At)
	}
	var got client.StatsMinute
	for _, m := range st.Minutes {
		got.Enqueued += m.Enqueued
		got.Started += m.Started
		got.Completed += m.Completed
		got.Failed += m.Failed
		got.Dead += m.Dead
		got.Cancelled += m.Cancelled
		if m.Started > 0 && m.WaitMean < 10*time.Millisecond || m.Completed > 0 && m.RunMean < 10*time.Millisecond {
			t.Errorf("minute %v: wait mean %v, run mean %v; want 20 ms or so", m.At, m.WaitMean, m.RunMean)
		}
	}
	want := client.StatsMinute{Enqueued: 5, Started: 3, Completed: 1, Failed: 1, Dead: 1, Cancelled: 1}
	if got != want {
		t.Errorf("counts %+v, want %+v", got, want)
	}
	if st.OldestPendingAge <= 0 || st.OldestPendingAge > time.Minute {
		t.Errorf("oldest pending age %v with a job pending for 40 ms, want more than 0", st.OldestPendingAge)
	}

	if st, err := c.Stats(ctx, q, 0); err != nil || len(st.Minutes) != 60 {
		t.Errorf("Stats with minutes 0: %d minutes, %v; want the default, 60", len(st.Minutes), err)
	}
}

func TestStatsRefusesMinutesOutOfRange(t *testing.T) {
	t.Parallel()
	c, q := newClient(t), redistest.Queue(t)
	for _, minutes := range []int{-1, 1441} {
		_, err := c.Stats(context.Background(), q, minutes)
		var e *client.Error
		if !errors.Is(err, client.ErrInvalid) || !errors.As(err, &e) || len(e.Fields) != 1 || e.Fields[0].Field != "minutes" {
			t.Errorf("Stats with minutes %d: %v, want ErrInvalid on the field minutes", minutes, err)
		}
	}
}
