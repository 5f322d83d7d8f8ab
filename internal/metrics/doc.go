// Package metrics is echo_mq's Prometheus instrumentation: the series behind
// GET /metrics, kept on the service's own prometheus.Registry (never the
// global default) together with the Go runtime and process collectors.
//
// The series are:
//
//	emq_http_requests_total{method,route,status}           counter
//	emq_http_request_duration_seconds{method,route}        histogram
//	emq_job_transitions_total{queue,kind}                  counter
//	emq_stale_refusals_total{queue}                        counter
//	emq_sweep_jobs_total{queue,outcome}                    counter; outcome is recovered, dead, cancelled, timed_out or expired
//	emq_claims_held_total{queue,reason}                    counter; reason is the flow control limit
//	emq_schedule_ticks_total{queue,outcome}                counter; outcome is fired, skipped or missed
//	emq_schedule_tick_lateness_seconds                     histogram
//	emq_push_deliveries_total{queue,outcome}               counter
//	emq_push_delivery_duration_seconds{queue}              histogram
//	emq_redis_errors_total                                 counter
//	emq_job_wait_seconds{queue}                            histogram; claimable to started, per claimed job
//	emq_job_run_seconds{queue}                             histogram; started to the holder's complete or fail
//	emq_queue_jobs{queue,state}                            gauge, gathered on scrape
//	emq_queue_paused{queue}                                gauge, 0 or 1, gathered on scrape
//	emq_queue_latency_seconds{queue}                       gauge, the oldest claimable job's wait, gathered on scrape
//	emq_queue_depth_up                                     gauge, 1 when the depth read succeeded
//	emq_queue_depth_truncated                              gauge, 1 when queues were left out
//
// # Cardinality
//
// Every label is drawn from a bounded set. route is a chi route pattern such
// as "/queues/{queue}/jobs/{id}", never a request path, and a request that
// matched no route is recorded as "unmatched"; method is one of the standard
// HTTP methods or "OTHER"; status is a status code. Queue names are validated
// upstream (1 to 100 of [A-Za-z0-9._-]) and kinds are a fixed set of words
// chosen by the caller, so the per-queue series grow with the number of
// queues and nothing else, and that is bounded too: each per-queue family
// names at most MaxQueues queues (DefaultMaxQueues; EMQ_METRICS_MAX_QUEUES).
// The series the service keeps (the counters and histograms above) are
// those of the queues updated last: a queue let in past the bound evicts
// the least recently updated of a sample of the others, whose series are
// deleted, and ForgetQueue deletes a queue's series (it was obliterated or
// forgotten). A queue evicted and updated again starts its series from
// zero, which Prometheus reads as a counter reset. Queue depth is read on
// each scrape for at most MaxQueues queues (cmd/api: the most recently
// active), under a timeout, so a scrape's cost on Redis is bounded too: one
// pipeline for the counts, and with WithLatency one stats script call per
// queue for the latency.
//
// # Job times
//
// The job histograms and the latency gauge are times the scripts wrote on
// the Redis server's clock, in whole milliseconds, never the service's.
// The histograms are fed by the worker plane (lease.Observe) of the replica
// that served the call, HTTP or push. A run is observed when the row tells
// its end: a completed, dead or cancelled job, or one retried at once or
// after a delay its holder gave; a job retried after its own backoff keeps
// no end of the attempt, and a lapsed lease has no report. A repeat of a
// complete or fail (after a lost answer) may be observed twice.
package metrics
