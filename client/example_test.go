package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"strings"
	"time"

	"github.com/echo-mq/echo_mq/client"
)

// Enqueue a job with an id of your own: enqueueing the same id again adds
// nothing, so a producer may safely retry.
func ExampleClient_Enqueue() {
	ctx := context.Background()
	c, err := client.New(exampleURL()) // the service, such as "http://127.0.0.1:8080"
	if err != nil {
		log.Fatal(err)
	}

	job, created, err := c.Enqueue(ctx, "emails", client.EnqueueRequest{
		ID:      "welcome-42",
		Payload: map[string]string{"to": "ada@example.com"},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(job.ID, job.State, created, string(job.Payload))

	again, created, err := c.Enqueue(ctx, "emails", client.EnqueueRequest{ID: "welcome-42"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(again.ID, again.State, created)
	// Output:
	// welcome-42 pending true {"to":"ada@example.com"}
	// welcome-42 pending false
}

// Work runs a handler on each job of a queue. Here the handler stops the
// worker after one job; a real worker stops on SIGTERM instead:
//
//	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
//
// Either way, the job in hand is finished and reported before Work returns.
func ExampleClient_Work() {
	c, err := client.New(exampleURL())
	if err != nil {
		log.Fatal(err)
	}
	job, _, err := c.Enqueue(context.Background(), "emails", client.EnqueueRequest{
		Payload: map[string]string{"to": "ada@example.com"},
	})
	if err != nil {
		log.Fatal(err)
	}

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	send := func(ctx context.Context, job client.Job) (any, error) {
		defer stop() // one job is enough for this example
		fmt.Println("sending", string(job.Payload))
		return map[string]bool{"sent": true}, nil
	}
	if err := c.Work(ctx, "emails", send, client.WithWait(time.Second)); err != nil {
		log.Fatal(err)
	}

	done, err := c.Job(context.Background(), "emails", job.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(done.State, string(done.Result))
	// Output:
	// sending {"to":"ada@example.com"}
	// completed {"sent":true}
}

// A handler learns that its job was cancelled from its context, at the
// next extend (every third of the lease); the job ends cancelled when the
// handler then returns an error.
func ExampleCancelRequestedError() {
	c, err := client.New(exampleURL())
	if err != nil {
		log.Fatal(err)
	}
	job, _, err := c.Enqueue(context.Background(), "reports", client.EnqueueRequest{Payload: "year 2026"})
	if err != nil {
		log.Fatal(err)
	}

	// Someone cancels the job once it runs.
	started := make(chan struct{})
	go func() {
		<-started
		c.Cancel(context.Background(), "reports", job.ID, client.CancelRequest{Reason: "customer asked"})
	}()

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	report := func(ctx context.Context, job client.Job) (any, error) {
		defer stop() // one job is enough for this example
		close(started)
		select {
		case <-time.After(time.Minute): // the long work
			return "the report", nil
		case <-ctx.Done():
			var cancel *client.CancelRequestedError
			if errors.As(context.Cause(ctx), &cancel) {
				fmt.Println("stopping:", cancel.Reason)
			}
			return nil, context.Cause(ctx)
		}
	}
	if err := c.Work(ctx, "reports", report, client.WithLease(time.Second), client.WithWait(time.Second)); err != nil {
		log.Fatal(err)
	}

	done, err := c.Job(context.Background(), "reports", job.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(done.State, "-", done.LastError)
	// Output:
	// stopping: customer asked
	// cancelled - cancelled: customer asked
}

// A handler whose job cannot go ahead yet (a rate limit upstream, a file
// not there yet) snoozes it: the job comes back after the delay, and the
// attempt is not spent, so the job keeps its whole budget however often it
// is snoozed.
func ExampleSnoozeFor() {
	c, err := client.New(exampleURL())
	if err != nil {
		log.Fatal(err)
	}
	job, _, err := c.Enqueue(context.Background(), "exports", client.EnqueueRequest{Payload: "invoices", MaxAttempts: 1})
	if err != nil {
		log.Fatal(err)
	}

	ready := false // the upstream the export needs; it is busy at first
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	export := func(ctx context.Context, job client.Job) (any, error) {
		if !ready {
			ready = true // by the time the job comes back
			fmt.Println("upstream busy: snoozing, attempt", job.Attempts)
			return nil, client.SnoozeFor(100 * time.Millisecond)
		}
		defer stop() // one job is enough for this example
		fmt.Println("exporting, attempt", job.Attempts)
		return "exported", nil
	}
	if err := c.Work(ctx, "exports", export, client.WithWait(time.Second)); err != nil {
		log.Fatal(err)
	}

	done, err := c.Job(context.Background(), "exports", job.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(done.State, "after", done.Attempts, "attempt")
	// Output:
	// upstream busy: snoozing, attempt 1
	// exporting, attempt 1
	// completed after 1 attempt
}

// A schedule enqueues a job at each tick of its cadence, a cron line or a
// fixed interval, with the id "<name>:<tick in ms>". Putting a schedule
// takes an admin key (client.WithAPIKey).
func ExampleClient_PutSchedule() {
	ctx := context.Background()
	c, err := client.New(exampleURL())
	if err != nil {
		log.Fatal(err)
	}

	s, created, err := c.PutSchedule(ctx, "reports", "weekly-report", client.ScheduleRequest{
		Cron: "0 9 * * 1", // Mondays at 09:00
		TZ:   "Europe/Berlin",
		Job:  client.ScheduleJob{Payload: map[string]string{"report": "weekly"}},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(s.Name, created, s.Cron, s.TZ, "next on", s.NextRunAt.Weekday())

	// Run it now, outside its cadence.
	job, err := c.RunSchedule(ctx, "reports", "weekly-report")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(strings.HasPrefix(job.ID, "weekly-report:run:"), job.State, string(job.Payload))
	// Output:
	// weekly-report true 0 9 * * 1 Europe/Berlin next on Monday
	// true pending {"report":"weekly"}
}

// A batch enqueues jobs together and, once every one of them has ended,
// one callback job "batch:<id>", whose worker reads how the batch ended
// with DecodeBatchCallback. A job of the batch may wait for another
// (DependsOn): load-7 is waiting until extract-7 has completed.
func ExampleClient_CreateBatch() {
	ctx := context.Background()
	c, err := client.New(exampleURL())
	if err != nil {
		log.Fatal(err)
	}

	b, created, err := c.CreateBatch(ctx, "imports", client.CreateBatchRequest{
		ID: "import-7",
		Jobs: []client.EnqueueRequest{
			{ID: "extract-7", Payload: "orders.csv"},
			{ID: "load-7", Payload: "orders.csv", DependsOn: []string{"extract-7"}},
		},
		Callback: &client.BatchCallback{Queue: "reports", Payload: map[string]int{"user": 42}},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(b.ID, created, b.State, b.Total, b.Jobs[0].State, b.Jobs[1].State)

	// The importer: extract-7 first, then load-7, then it stops.
	imports, stopImports := context.WithCancel(ctx)
	defer stopImports()
	ran := 0
	importer := func(ctx context.Context, job client.Job) (any, error) {
		if ran++; ran == 2 {
			defer stopImports() // both jobs are enough for this example
		}
		fmt.Println("running", job.ID, "of", job.BatchID)
		return nil, nil
	}
	if err := c.Work(imports, "imports", importer, client.WithWait(time.Second)); err != nil {
		log.Fatal(err)
	}

	// The worker of the callback's queue.
	reports, stopReports := context.WithCancel(ctx)
	defer stopReports()
	report := func(ctx context.Context, job client.Job) (any, error) {
		defer stopReports() // one callback is enough for this example
		cb, err := client.DecodeBatchCallback(job)
		if err != nil {
			return nil, client.Fatal(err)
		}
		fmt.Println(job.ID, cb.Batch.State, "success:", cb.Batch.Success, "completed:", cb.Batch.Counts.Completed, string(cb.Payload))
		return nil, nil
	}
	if err := c.Work(reports, "reports", report, client.WithWait(time.Second)); err != nil {
		log.Fatal(err)
	}
	// Output:
	// import-7 true running 2 pending waiting
	// running extract-7 of import-7
	// running load-7 of import-7
	// batch:import-7 done success: true completed: 2 {"user":42}
}
