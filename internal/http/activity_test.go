package http_test

// Many queues, few of them busy: GET /events and the metrics' depth follow
// the queues with traffic (the activity index), not the first of the
// registry, and the per-queue series are bounded and leave with their
// queue.

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"

	emqhttp "github.com/echo-mq/echo_mq/internal/http"
	"github.com/echo-mq/echo_mq/internal/keyspace"
	"github.com/echo-mq/echo_mq/internal/metrics"
	"github.com/echo-mq/echo_mq/internal/redistest"
)

// registerIdle adds n queue names to the registry, named "0000..." so that
// they sort before any other, without traffic.
func registerIdle(tb testing.TB, h *harness, n int) {
	tb.Helper()
	ctx := context.Background()
	reg := keyspace.NewRegistry(h.rdb, h.prefix)
	for i := range n {
		if err := reg.Remember(ctx, fmt.Sprintf("%04d", i), true); err != nil {
			tb.Fatal(err)
		}
	}
}

// TestManyQueuesTheBusyOneIsSeen: of 1,501 registered queues, 1,500 of
// them idle and sorting first, the one with traffic (zzz) is in GET
// /events and in the metrics' depth.
func TestManyQueuesTheBusyOneIsSeen(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		registerIdle(t, h, 1500)
		st := openAllEvents(t, h, "", nil)
		st.wantOpen(t)
		h.add(t, "zzz", "z1", "z2")
		evs := st.waitFor(t, "zzz's events", hasJobEvents("zzz", 2))
		wantJobEvents(t, evs, "zzz", "enqueued z1", "enqueued z2")
		depth := metricSeries(scrapeReplica(t, h.replicas[0]), "emq_queue_jobs")
		if got, ok := depth["queue=zzz,state=pending"]; !ok || got != 2 {
			t.Errorf("emq_queue_jobs{queue=zzz,state=pending} = %v (present: %v), want 2", got, ok)
		}
		if _, ok := depth["queue=0000,state=pending"]; ok {
			t.Error("an idle queue is in emq_queue_jobs")
		}
		h.stop()
		st.end(t)
	}, withMetrics())
}

// TestAllEventsQueueActiveLater: a queue whose first change came after the
// stream opened but before its activity was written (the stream looked at
// the index in between) is taken in with that change: nothing after the
// opening is missed.
func TestAllEventsQueueActiveLater(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		st := openAllEvents(t, h, "", nil)
		st.wantOpen(t)
		// A change written to the stream with no activity yet, as a
		// background change whose touch comes after it.
		err := h.rdb.XAdd(context.Background(), &redis.XAddArgs{Stream: keyspace.NewQueue(h.prefix, q).Events(),
			Values: []any{"kind", "enqueued", "job", "early", "state", "pending"}}).Err()
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(1200 * time.Millisecond) // the stream reads the index twice meanwhile
		h.add(t, q, "n1")
		evs := st.waitFor(t, "the queue's events", hasJobEvents(q, 2))
		wantJobEvents(t, evs, q, "enqueued early", "enqueued n1")
		h.stop()
		st.end(t)
	})
}

// TestAllEventsMergesTheMostRecentlyActive: with more queues active than
// one stream merges, the most recently active are merged, and the stream
// logs that once.
func TestAllEventsMergesTheMostRecentlyActive(t *testing.T) {
	t.Parallel()
	logs := &lockedBuffer{}
	logTo := withConfig(func(c *emqhttp.Config) {
		c.Logger = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	})
	forEachBackend(t, func(t *testing.T, h *harness) {
		ctx := context.Background()
		act := keyspace.NewActivity(h.rdb, h.prefix)
		now := act.Now(ctx)
		members := make([]redis.Z, 1001) // 10 s ago: active, less recently than what comes
		for i := range members {
			members[i] = redis.Z{Score: float64(now - 10_000), Member: fmt.Sprintf("c%04d", i)}
		}
		if err := h.rdb.ZAdd(ctx, keyspace.ActiveKey(h.prefix), members...).Err(); err != nil {
			t.Fatal(err)
		}
		st := openAllEvents(t, h, "", http.Header{"X-Request-Id": {h.prefix}})
		st.wantOpen(t)
		h.add(t, "recent", "r1")
		st.waitFor(t, "the most recently active queue's event", hasJobEvents("recent", 1))
		time.Sleep(1200 * time.Millisecond) // the stream reads the index twice more
		h.stop()
		st.end(t)
		warnings := 0
		for _, rec := range logs.records(t) {
			if rec["request_id"] == h.prefix && strings.Contains(fmt.Sprint(rec["msg"]), "More active queues") {
				warnings++
			}
		}
		if warnings != 1 {
			t.Errorf("the stream logged %d warnings that it merges only some queues, want one", warnings)
		}
	}, logTo)
}

// queuesNamed is the queues each family of per-queue series names.
func queuesNamed(fams map[string]*dto.MetricFamily) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for name, fam := range fams {
		for _, m := range fam.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "queue" {
					if out[name] == nil {
						out[name] = map[string]bool{}
					}
					out[name][l.GetValue()] = true
				}
			}
		}
	}
	return out
}

// busy gives q traffic that every per-queue family the HTTP layer feeds
// records: enqueues, a claim, a complete, a stale refusal.
func busy(tb testing.TB, h *harness, q string) {
	tb.Helper()
	h.add(tb, q, "a", "b")
	j := h.claimOne(tb, q, "a", 30_000)
	must[jobView](tb, h.complete(tb, q, j.ID, j.Token, ""), http.StatusOK)
	wantProblem(tb, h.complete(tb, q, j.ID, j.Token+1, ""), http.StatusConflict, "EMQSTALE")
}

// TestMetricsForgetObliteratedQueues: after its queues are obliterated, a
// replica's /metrics names none of them, in any family, and a queue made
// again under the name starts its series anew. Through one replica: the
// series are each replica's own.
func TestMetricsForgetObliteratedQueues(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, all *harness) {
		h := all.only(0)
		gone, stays := []string{"gone-1", "gone-2", "gone-3"}, "stays"
		for _, q := range append(gone, stays) {
			busy(t, h, q)
		}
		before := queuesNamed(scrapeReplica(t, h.replicas[0]))
		if !before["emq_job_transitions_total"]["gone-1"] || !before["emq_queue_jobs"]["gone-1"] {
			t.Fatalf("gone-1 has no series before it is obliterated: %v", before)
		}
		for _, q := range gone {
			must[map[string]any](t, h.do(t, "DELETE", "/queues/"+q+"?force=true", nil), http.StatusOK)
		}
		for name, queues := range queuesNamed(scrapeReplica(t, h.replicas[0])) {
			for _, q := range gone {
				if queues[q] {
					t.Errorf("%s names %s after it was obliterated", name, q)
				}
			}
		}
		if after := queuesNamed(scrapeReplica(t, h.replicas[0])); !after["emq_job_transitions_total"][stays] {
			t.Errorf("the queue left alone lost its series: %v", after)
		}
		h.add(t, "gone-1", "again")
		transitions := metricSeries(scrapeReplica(t, h.replicas[0]), "emq_job_transitions_total")
		if got := transitions["kind=enqueued,queue=gone-1"]; got != 1 {
			t.Errorf("gone-1 made again: enqueued = %v, want 1 (its series anew)", got)
		}
	}, withMetrics())
}

// TestMetricsSeriesBounded: with EMQ_METRICS_MAX_QUEUES of 3, no family of
// per-queue series names more than 3 queues, however many have traffic,
// and emq_queue_depth_truncated says queues were left out.
func TestMetricsSeriesBounded(t *testing.T) {
	t.Parallel()
	const bound = 3
	forEachBackend(t, func(t *testing.T, h *harness) {
		for i := range 2 * bound {
			busy(t, h, fmt.Sprintf("q%d", i))
		}
		for i, replica := range h.replicas {
			fams := scrapeReplica(t, replica)
			named := queuesNamed(fams)
			if n := len(named["emq_job_transitions_total"]); n != bound {
				t.Errorf("replica %d: emq_job_transitions_total names %d queues, want %d", i, n, bound)
			}
			if n := len(named["emq_queue_jobs"]); n != bound {
				t.Errorf("replica %d: emq_queue_jobs names %d queues, want %d", i, n, bound)
			}
			for name, queues := range named {
				if len(queues) > bound {
					t.Errorf("replica %d: %s names %d queues, more than %d", i, name, len(queues), bound)
				}
			}
			if got := metricSeries(fams, "emq_queue_depth_truncated")[""]; got != 1 {
				t.Errorf("replica %d: emq_queue_depth_truncated = %v, want 1", i, got)
			}
			if !named["emq_queue_jobs"][fmt.Sprintf("q%d", 2*bound-1)] {
				t.Errorf("replica %d: the most recently active queue is not in emq_queue_jobs: %v", i, named["emq_queue_jobs"])
			}
		}
	}, withMetrics(metrics.MaxQueues(bound)))
}
