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
//	emq_sweep_jobs_total{queue,outcome}                    counter; outcome is recovered, dead or cancelled
//	emq_redis_errors_total                                 counter
//	emq_queue_jobs{queue,state}                            gauge, gathered on scrape
//	emq_queue_paused{queue}                                gauge, 0 or 1, gathered on scrape
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
// queues and nothing else. Queue depth is read on each scrape for at most
// MaxDepthQueues queues, under a timeout, so a scrape's cost on Redis is
// bounded too.
//
// Counters of a queue that is deleted stay until the process restarts, as
// counters do.
package metrics
