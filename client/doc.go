// Package client is a Go client of echo_mq's HTTP API: typed calls for the
// worker plane (enqueue, claim, extend, complete, fail, cancel), Work, a
// ready worker loop that does what every echo_mq worker should, and the
// management of a queue's schedules (put, read, list, pause, resume, run
// now, delete) and of its push target (put, read, delete); batches of jobs
// with a callback job once every one has ended (create, add, commit,
// read); and Stats, a queue's last minutes, minute by minute, and its
// latency.
//
// A producer enqueues jobs:
//
//	c, err := client.New(os.Getenv("EMQ_URL"), client.WithAPIKey(os.Getenv("EMQ_API_KEY")))
//	if err != nil {
//		log.Fatal(err) // not an http:// or https:// URL
//	}
//	job, created, err := c.Enqueue(ctx, "emails", client.EnqueueRequest{
//		ID:      "welcome-42", // optional: an idempotency key
//		Payload: map[string]string{"to": "ada@example.com"},
//	})
//
// EnqueueRequest also sets a job's priority, delay (or the time it runs
// at, RunAt), attempts, backoff and group; a dedupe key (Dedupe: DedupeUntilDone, DedupeThrottle or
// DedupeDebounce), for which Enqueue answers the keyed job with created
// false; a deadline to start by (ExpiresIn); a bound on each attempt
// (Timeout); and the jobs it waits for (DependsOn): it is StateWaiting
// until each of them has completed, and is cancelled, or runs anyway
// (OnDependencyFailure), when one ends dead or cancelled. Until a job
// starts, an admin key may change its payload, priority and run time
// (UpdateJob).
//
// A worker runs a handler on each job until its context is done:
//
//	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
//	defer stop()
//	err := c.Work(ctx, "emails", func(ctx context.Context, job client.Job) (any, error) {
//		var p struct{ To string }
//		if err := json.Unmarshal(job.Payload, &p); err != nil {
//			return nil, client.Fatal(err) // no point retrying
//		}
//		if err := send(ctx, p.To); err != nil {
//			return nil, err // the job is failed, and retried with backoff
//		}
//		return map[string]bool{"sent": true}, nil // the job is completed
//	}, client.WithConcurrency(4))
//
// Work long-polls for jobs, extends each job's lease while its handler
// runs, completes it with the handler's result or fails it with its error
// (the service retries it with backoff), and cancels the handler's context
// when someone cancels the job or the job is lost. It backs off on 503s,
// 429s and connection errors, logging a warning to slog.Default() (or
// WithLogger's logger), and on SIGTERM it stops claiming, finishes the jobs
// in hand and returns nil. See Client.Work for the details.
//
// A handler writes lines to its job's log with Log(ctx, lines...)
// (BullMQ's job.log); Client.Logs reads a job's log a page at a time, and
// reading again from the last page's NextCursor gives the lines since.
//
// A schedule enqueues a job at each tick of its cadence, a cron line or a
// fixed interval, with the id "<name>:<tick in ms since the epoch>" (it
// takes an admin key):
//
//	s, created, err := c.PutSchedule(ctx, "reports", "weekly-report", client.ScheduleRequest{
//		Cron: "0 9 * * 1", // or Every: time.Hour
//		TZ:   "Europe/Berlin",
//		Job:  client.ScheduleJob{Payload: map[string]string{"report": "weekly"}},
//	})
//
// A push target has the service POST the queue's jobs to a URL instead
// (docs/push.md; the service must allow its host in EMQ_PUSH_ALLOW):
//
//	t, err := c.PutPush(ctx, "receipts", client.PushTarget{
//		URL:     "https://hooks.example.com/receipts",
//		Secret:  os.Getenv("RECEIPTS_SECRET"), // "whsec_...": deliveries are signed
//		// Sent with every delivery, never answered back (HeaderNames is):
//		Headers: map[string]string{"Authorization": "Bearer " + os.Getenv("GATEWAY_TOKEN")},
//	})
//
// A batch enqueues jobs in one atomic step and, once every one of them has
// ended, enqueues one callback job, "batch:<batch id>", on the queue its
// callback names; the callback's worker reads how the batch ended with
// DecodeBatchCallback. A batch created Open takes more jobs
// (AddBatchJobs) until CommitBatch (docs/batches.md):
//
//	b, created, err := c.CreateBatch(ctx, "imports", client.CreateBatchRequest{
//		ID: "import-7", // optional: an idempotency key
//		Jobs: []client.EnqueueRequest{
//			{ID: "extract-7", Payload: "orders.csv"},
//			{ID: "load-7", Payload: "orders.csv", DependsOn: []string{"extract-7"}},
//		},
//		Callback: &client.BatchCallback{Queue: "reports", Payload: map[string]int{"user": 42}},
//	})
//
// ListBatches pages a queue's batches, newest first.
//
// Bulk actions take many of a queue's jobs at once, up to a limit per call
// (it takes an admin key): RetryJobs sends dead or cancelled jobs back to
// pending, CleanJobs deletes finished jobs older than an age, PromoteJobs
// makes delayed jobs pending now. Each answers a Bulk; call again while
// its More is true.
//
// # Tracing
//
// A producer sends the W3C traceparent header of its span with an enqueue
// by putting it in the call's context with ContextWithTraceparent; the
// service keeps it with the job and hands it back as Job.Traceparent, on
// the claim and in a push delivery, so that the worker's span continues
// the producer's trace. The client depends on no tracing library: with
// OpenTelemetry (go.opentelemetry.io/otel/propagation), a producer writes
//
//	carrier := propagation.MapCarrier{}
//	propagation.TraceContext{}.Inject(ctx, carrier) // ctx holds the producer's span
//	job, _, err := c.Enqueue(client.ContextWithTraceparent(ctx, carrier["traceparent"]), "emails", req)
//
// and a worker's handler starts its span as a child of the producer's:
//
//	func(ctx context.Context, job client.Job) (any, error) {
//		carrier := propagation.MapCarrier{"traceparent": job.Traceparent}
//		ctx = propagation.TraceContext{}.Extract(ctx, carrier) // unchanged when job.Traceparent is ""
//		ctx, span := tracer.Start(ctx, "emails process", trace.WithSpanKind(trace.SpanKindConsumer))
//		defer span.End()
//		...
//	}
//
// To link the producer's span instead of parenting it, so that each job's
// run makes a trace of its own, extract into a context of its own,
// producer := propagation.TraceContext{}.Extract(context.Background(),
// carrier), and start the span from ctx with
// trace.WithLinks(trace.LinkFromContext(producer)).
//
// # Values
//
// A payload, a result or a progress is any value that encoding/json
// encodes, sent as JSON; nil sends none (a payload: null). A
// json.RawMessage is sent as it is, so JSON you hold as bytes goes as
// json.RawMessage(b). A plain []byte goes as encoding/json writes it: a
// base64 string. Job.Payload, Result and Progress come back as raw JSON:
// decode them with json.Unmarshal.
//
// # Errors
//
// A refusal of the service is an *Error with the HTTP status and the
// problem's code, detail and field errors. The common ones match a
// sentinel with errors.Is: ErrStale (the token no longer holds the job),
// ErrGone (no such job, schedule or batch), ErrState, ErrInvalid,
// ErrUnauthorized, ErrForbidden and ErrUnavailable (any 503;
// Error.RetryAfter says how long to wait).
// Retryable tells the errors worth sending again: 502, 503, 504 and 429, and
// transport failures that may pass (a refused or reset connection, a
// timeout), not a TLS certificate that is not trusted. Error texts start
// with "client:".
//
// # Tokens
//
// A claim hands each job a Token, which fences every later call on it
// (Extend, Complete, Fail, Cancellation). A worker whose lease lapsed and
// whose job was taken back gets ErrStale and must drop the job. Repeating
// a Complete or Fail that succeeded is answered as the first time, so they
// are safe to retry.
package client
