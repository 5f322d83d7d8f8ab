package main

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/admin"
	"github.com/echo-mq/echo_mq/internal/auth"
	"github.com/echo-mq/echo_mq/internal/batch"
	"github.com/echo-mq/echo_mq/internal/events"
	"github.com/echo-mq/echo_mq/internal/history"
	emqhttp "github.com/echo-mq/echo_mq/internal/http"
	"github.com/echo-mq/echo_mq/internal/keyspace"
	"github.com/echo-mq/echo_mq/internal/lease"
	"github.com/echo-mq/echo_mq/internal/metrics"
	"github.com/echo-mq/echo_mq/internal/push"
	"github.com/echo-mq/echo_mq/internal/scheduler"
	"github.com/echo-mq/echo_mq/internal/stall"
	"github.com/echo-mq/echo_mq/internal/telemetry"
	"github.com/echo-mq/echo_mq/internal/wake"
)

// services are the parts run wires together.
type services struct {
	rdb     redis.UniversalClient
	admin   *admin.Service
	sweeper *stall.Service
	hub     *wake.Hub
	metrics *metrics.Metrics
	sched   *scheduler.Service
	pushes  *push.Store
	history *history.Reader
	tel     *telemetry.Telemetry // nil: tracing off
	queues  *keyspace.Registry   // the services' one registry of queues, under EMQ_MAX_QUEUES
	// activity is the index of the queues with traffic lately, which GET
	// /events merges and the metrics read the depth of.
	activity *keyspace.Activity
	master   *masterWatch // the Sentinel master in use; nil but under Sentinel
}

func newServices(cfg config, rdb redis.UniversalClient, tel *telemetry.Telemetry, log *slog.Logger) services {
	reg := keyspace.NewRegistry(rdb, cfg.Prefix, keyspace.RegistryMax(cfg.MaxQueues))
	adm := admin.NewService(rdb, cfg.Prefix, admin.Registry(reg))
	hist := history.NewReader(rdb, cfg.Prefix)
	act := keyspace.NewActivity(rdb, cfg.Prefix)
	m := metrics.New(depthOf(adm, act, hist), metrics.MaxQueues(cfg.MetricsMaxQueues))
	m.SetLogger(log)
	return services{rdb: rdb, admin: adm, sweeper: stall.NewService(rdb, cfg.Prefix, stall.Registry(reg), stall.KeepCompleted(cfg.KeepCompleted)),
		hub: wake.NewHub(rdb, cfg.Prefix, log), metrics: m, sched: scheduler.NewService(rdb, cfg.Prefix, scheduler.Registry(reg)),
		pushes: push.NewStore(rdb, cfg.Prefix, push.Registry(reg)), history: hist, tel: tel, queues: reg,
		activity: act}
}

// migrateQueues copies into the registry of queues the names that only
// the previous release's set holds (keyspace.Registry.Migrate), once at
// start-up; on an error the service starts anyway, and those queues are
// listed once an enqueue or a later start adds them.
func (s services) migrateQueues(ctx context.Context, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	n, err := s.queues.Migrate(ctx)
	switch {
	case err != nil:
		log.Warn("The registry of queues was not brought up to date", "added", n, "error", err)
	case n > 0:
		log.Info("Registry of queues brought up to date from the previous release's set", "added", n)
	}
}

// timer fires the schedules' ticks, feeding what it did to the metrics.
func (s services) timer(log *slog.Logger) *scheduler.Timer {
	return scheduler.NewTimer(s.sched, scheduler.TimerConfig{Logger: log,
		OnTicks: func(queue string, t scheduler.Ticks) {
			s.touch(queue)
			s.metrics.ScheduleTicks(queue, t.Fired, t.Skipped, t.Missed, t.Lateness)
			s.metrics.Transition(queue, "enqueued", t.Fired)
		},
	})
}

// dispatcher enqueues the callbacks of done batches, counting each as an
// enqueue of its queue.
func (s services) dispatcher(batches *batch.Service, log *slog.Logger) *batch.Dispatcher {
	return batches.NewDispatcher(batch.DispatcherConfig{Encode: emqhttp.BatchCallbackBody, Logger: log,
		OnCallback: func(queue string) {
			s.touch(queue)
			s.metrics.Transition(queue, "enqueued", 1)
		}})
}

// reaper is the background sweep, feeding its counts to the metrics.
func (s services) reaper(cfg config, log *slog.Logger) *stall.Reaper {
	return stall.NewReaper(s.sweeper, stall.ReaperConfig{
		Interval: cfg.SweepInterval, MaxStalled: cfg.MaxStalled, MaxAge: cfg.EventsMaxAge, Logger: log,
		OnSwept: func(queue string, sw stall.Swept) {
			s.touch(queue)
			s.metrics.Swept(queue, len(sw.Recovered), len(sw.Dead), len(sw.Cancelled))
			s.metrics.Reaped(queue, "timed_out", len(sw.Retried))
			s.metrics.Reaped(queue, "expired", len(sw.Expired))
		},
		OnPromoted: func(queue string, _ int) { s.touch(queue) },
		OnForgotten: func(queue string) {
			s.metrics.ForgetQueue(queue)
			if err := s.activity.Drop(context.Background(), queue); err != nil {
				s.metrics.RedisError()
			}
		},
	})
}

// deliverer pushes the jobs of the queues with a push target, feeding
// its outcomes to the metrics; nil when EMQ_PUSH_ALLOW permits no host,
// and then queues that have (or had) a target are logged: nothing here
// delivers their jobs.
func (s services) deliverer(ctx context.Context, cfg config, leases *lease.Service, log *slog.Logger) *push.Deliverer {
	if !cfg.PushAllow.On() {
		if queues, err := s.pushes.Queues(ctx); err == nil && len(queues) > 0 {
			log.Warn("Queues have (or had) a push target, but EMQ_PUSH_ALLOW is unset: this replica delivers nothing",
				"queues", len(queues))
		}
		return nil
	}
	return push.NewDeliverer(push.Config{Store: s.pushes, Leases: leases, Waiters: s.hub, Allow: cfg.PushAllow,
		Encode: emqhttp.PushBody, MaxResultBytes: cfg.MaxValueBytes, Drain: cfg.ShutdownTimeout, Logger: log,
		OnDelivery: func(queue, outcome string, took time.Duration) {
			s.touch(queue)
			s.metrics.PushDelivery(queue, outcome, took)
		}, Telemetry: s.tel})
}

// touch records that the background work changed queue (the activity
// index), so that GET /events and the metrics' depth follow it; a touch
// that fails is counted as a Redis error.
func (s services) touch(queue string) {
	if err := s.activity.Touch(context.Background(), queue); err != nil {
		s.metrics.RedisError()
	}
}

// leases is the worker plane's service, feeding its jobs' waits and runs
// to the metrics.
func (s services) leases(cfg config, log *slog.Logger) *lease.Service {
	return lease.NewService(s.rdb, cfg.Prefix, lease.KeepCompleted(cfg.KeepCompleted),
		lease.ScriptsVia(workerClient(cfg, s.rdb, log)), lease.Observe(s.metrics), lease.Registry(s.queues))
}

// handler is the HTTP API over the services.
func (s services) handler(cfg config, leases *lease.Service, batches *batch.Service, stopping <-chan struct{}, log *slog.Logger) http.Handler {
	hc := emqhttp.Config{
		Leases:    leases,
		Batches:   batches,
		Admin:     s.admin,
		Schedules: s.sched,
		Pushes:    s.pushes, PushAllow: cfg.PushAllow,
		History: s.history,
		Sweeper: s.sweeper, Waiters: s.hub, Stopping: stopping,
		Events:      events.NewLog(s.rdb, cfg.Prefix),
		Ready:       func(ctx context.Context) error { return s.rdb.Ping(ctx).Err() },
		RedisMaster: s.master.addrFunc(),
		Metrics:     s.metrics,
		Activity:    s.activity,
		Telemetry:   s.tel,
		Keys:        cfg.Keys,
		Replays:     auth.NewRedisReplays(s.rdb),
		CORSOrigins: cfg.CORSOrigins,
		MaxStalled:  cfg.MaxStalled, MaxValueBytes: cfg.MaxValueBytes, MaxBodyBytes: cfg.MaxBodyBytes,
		MaxWaitersPerKey: cfg.MaxWaitersPerKey, MaxStreams: cfg.MaxStreams,
		MaxWaiters: cfg.MaxWaiters,
		Logger:     log,
	}
	if cfg.Metrics != "off" {
		hc.MetricsHandler = s.metrics.Handler()
		hc.MetricsRole = auth.Reader
		if cfg.Metrics == "open" {
			hc.MetricsRole = auth.Open
		}
	}
	return emqhttp.NewHandler(hc)
}

// depthOf reads queue depths for a metrics scrape: the limit most recently
// active queues (the activity index, within keyspace.ActiveWindow), and
// one entry more when there were more (the collector then says the list
// was cut), and the latency of each, one stats script call per queue.
func depthOf(adm *admin.Service, act *keyspace.Activity, hist *history.Reader) metrics.DepthFunc {
	return metrics.WithLatency(func(ctx context.Context, limit int) ([]metrics.QueueDepth, error) {
		names, more, err := act.Recent(ctx, limit)
		if err != nil {
			return nil, err
		}
		infos, err := adm.QueuesNamed(ctx, names)
		out := make([]metrics.QueueDepth, len(infos), len(infos)+1)
		for i, info := range infos {
			out[i] = metrics.QueueDepth{Queue: info.Name, Paused: info.Paused, Counts: info.Counts}
		}
		if more {
			out = append(out, metrics.QueueDepth{}) // one more says the list was cut
		}
		return out, err
	}, hist.Latency)
}

// workerClient is the client the worker plane's scripts run through. With
// EMQ_REDIS_AUTOPIPELINE on (the default) it is go-redis's automatic
// pipeliner: the script calls of concurrent requests share round trips,
// one write and one read for many, where each would otherwise cost Redis
// and the service a read and a write of their own (on a small machine,
// most of a call's cost). An idle service sends each call at once. Only
// the worker plane goes through it: the operator plane is not hot, and
// pub/sub never could. The pipeliner inherits the client's settings
// (MaxRetries -1: a lost answer is never resent) and closes with it.
func workerClient(cfg config, rdb redis.UniversalClient, log *slog.Logger) redis.UniversalClient {
	pipelined, ok := rdb.(interface {
		AutoPipeline() (*redis.AutoPipeliner, error)
	})
	if !cfg.AutoPipeline || !ok {
		return rdb
	}
	pipe, err := pipelined.AutoPipeline()
	if err != nil {
		log.Warn("Redis autopipelining is unavailable; sending each call on its own", "error", err)
		return rdb
	}
	return pipe
}
