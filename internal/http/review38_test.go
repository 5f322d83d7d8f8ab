package http_test

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/echo-mq/echo_mq/internal/keyspace"
	"github.com/echo-mq/echo_mq/internal/redistest"
	"github.com/echo-mq/echo_mq/lua"
)

// settleOnce runs the reaper's settle of q, events aged out at once: an
// empty queue is forgotten.
func (h *harness) settleOnce(tb testing.TB, q string) {
	tb.Helper()
	settle := lua.SettleArgs{MaxAgeMS: 0}.Call(keyspace.NewQueue(h.prefix, q))
	if _, err := lua.NewRunner(h.rdb).Reply(context.Background(), settle); err != nil {
		tb.Fatal(err)
	}
}

// TestForgottenQueueLeavesNoBatchIndex: a queue left with nothing but a
// stale entry in its batch listing's index (a batch whose keys expired and
// which a release before the index took out of batches alone, during an
// upgrade) is forgotten whole by the reaper: no batches_created is left.
func TestForgottenQueueLeavesNoBatchIndex(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.createBatch(t, q, "b1", false)
		h.finish(t, q, "b1-1") // b1 is done
		// b1's 7 days pass: its keys expire, and an earlier release's
		// create or settle takes it out of batches (it knows no index).
		ctx := context.Background()
		if err := h.rdb.Del(ctx, h.key(q, "batch:b1"), h.key(q, "batch_jobs:b1")).Err(); err != nil {
			t.Fatal(err)
		}
		if err := h.rdb.ZRem(ctx, h.key(q, "batches"), "b1").Err(); err != nil {
			t.Fatal(err)
		}
		must[map[string]int](t, h.do(t, "DELETE", jobPath(q, "b1-1"), nil), http.StatusOK)

		h.settleOnce(t, q)
		if keys := h.keysOf(t, q, ":*"); len(keys) != 0 {
			t.Errorf("keys left once the empty queue was forgotten: %v", keys)
		}
	})
}

// TestChangesKeepTheQueueWhole runs random sequences of the ways a job
// moves (enqueues with a group, a priority, a delay, a run_at or a
// dependency; claims with short leases and sweeps; completes, fails and
// cancels) mixed with an operator's changes (PATCH, bulk retry, promote
// and clean), under fifo group limits and without, and after every step
// checks what every script must keep true: each job is in the one set its
// row names; a pending job stands in its priority's band, a grouped one
// in its group's pending index at its priority and place, its group with
// a turn; a delayed job's run_at is its score, and the due index holds
// the queue no later than its first delayed job; each group's active and
// delayed counts are its jobs'.
func TestChangesKeepTheQueueWhole(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		for seed := uint64(1); seed <= 4; seed++ {
			q := fmt.Sprintf("%s-%d", redistest.Queue(t), seed)
			if seed%2 == 0 {
				h.putSettings(t, q, `{"group_concurrency":2,"group_order":"fifo"}`)
			}
			m := &mover{h: h, q: q, r: rand.New(rand.NewPCG(seed, 38)), held: map[string]int64{}}
			for step := range 150 {
				m.step(t)
				h.wantWhole(t, q, fmt.Sprintf("seed %d, step %d", seed, step))
				if t.Failed() {
					return
				}
			}
		}
	})
}

// mover makes random moves of q's jobs j001, j002, ...
type mover struct {
	h    *harness
	q    string
	r    *rand.Rand
	n    int              // jobs enqueued
	held map[string]int64 // claimed: token by id
}

// any is the id of a job enqueued before, at random.
func (m *mover) any() string { return fmt.Sprintf("j%03d", 1+m.r.IntN(max(m.n, 1))) }

// soon is an RFC 3339 time from before to after ms from now, at random.
func (m *mover) soon(before, after int) string {
	ms := m.r.IntN(before+after) - before
	return time.Now().Add(time.Duration(ms) * time.Millisecond).UTC().Format(time.RFC3339Nano)
}

// step makes one random move; what the service answers is its business,
// but never a 5xx.
func (m *mover) step(t *testing.T) {
	t.Helper()
	var got reply
	switch m.r.IntN(13) {
	case 0, 1, 2:
		m.n++
		body := map[string]any{"id": fmt.Sprintf("j%03d", m.n), "payload": m.n, "priority": m.r.IntN(3),
			"max_attempts": 1 + m.r.IntN(2)}
		switch m.r.IntN(5) {
		case 0:
			body["group"] = fmt.Sprintf("g%d", m.r.IntN(3))
		case 1:
			body["depends_on"] = []string{m.any()}
		}
		switch m.r.IntN(4) {
		case 0:
			body["delay_ms"] = 1 + m.r.IntN(3000)
		case 1:
			body["run_at"] = m.soon(1000, 3000)
		}
		got = m.h.do(t, "POST", jobsPath(m.q), body)
	case 3, 4:
		changes := []map[string]any{{"priority": m.r.IntN(4)}, {"delay_ms": m.r.IntN(2) * m.r.IntN(3000)},
			{"priority": m.r.IntN(4), "delay_ms": m.r.IntN(3000)}, {"run_at": m.soon(2000, 2000), "payload": m.n}}
		got = m.h.do(t, "PATCH", jobPath(m.q, m.any()), changes[m.r.IntN(len(changes))])
	case 5, 6:
		lease := []int{100, 60_000}[m.r.IntN(2)]
		for _, j := range m.h.claim(t, m.q, map[string]any{"count": 1 + m.r.IntN(3), "lease_ms": lease}) {
			m.held[j.ID] = j.Token
		}
	case 7:
		for id, token := range m.held {
			if m.r.IntN(2) == 0 {
				got = m.h.complete(t, m.q, id, token, "")
			} else {
				got = m.h.fail(t, m.q, id, token, fmt.Sprintf(`,"error":"x","retry_in_ms":%d`, m.r.IntN(2)*1500))
			}
			delete(m.held, id)
			break
		}
	case 8:
		got = m.h.do(t, "POST", "/queues/"+m.q+"/retry", map[string]any{"state": "dead", "limit": 1 + m.r.IntN(3)})
	case 9:
		got = m.h.do(t, "POST", "/queues/"+m.q+"/promote", map[string]any{"limit": 1 + m.r.IntN(3)})
	case 10:
		state := []string{"completed", "dead", "cancelled"}[m.r.IntN(3)]
		got = m.h.do(t, "POST", "/queues/"+m.q+"/clean", map[string]any{"state": state, "older_than_ms": 0, "limit": 1 + m.r.IntN(3)})
	case 11:
		got = m.h.do(t, "POST", jobPath(m.q, m.any(), "cancel"), nil)
	case 12:
		got = m.h.do(t, "POST", "/queues/"+m.q+"/sweep", nil)
	}
	if got.Status >= 500 {
		t.Fatalf("%s", got)
	}
}

// wantWhole fails the test unless q's sets, rows, group index and counts
// and due index agree (TestChangesKeepTheQueueWhole says how).
func (h *harness) wantWhole(tb testing.TB, q, when string) {
	tb.Helper()
	ctx := context.Background()
	in, score := map[string]string{}, map[string]float64{}
	for _, state := range []string{"pending", "active", "delayed", "waiting", "completed", "dead", "cancelled"} {
		for _, z := range h.rdb.ZRangeWithScores(ctx, h.key(q, state), 0, -1).Val() {
			id := z.Member.(string)
			if other, ok := in[id]; ok {
				tb.Errorf("%s: job %s in %s and in %s", when, id, other, state)
			}
			in[id], score[id] = state, z.Score
		}
	}
	members := map[string]bool{} // what gpending must hold
	active, delayed := map[string]int{}, map[string]int{}
	for id, state := range in {
		row := h.rdb.HGetAll(ctx, h.key(q, "job:"+id)).Val()
		if row["state"] != state {
			tb.Errorf("%s: job %s is in %s, its row says %q", when, id, state, row["state"])
		}
		priority, _ := strconv.Atoi(cmp.Or(row["priority"], "0"))
		g := row["group"]
		switch {
		case state == "pending" && g != "":
			gseq, _ := strconv.ParseInt(row["gseq"], 10, 64)
			members[fmt.Sprintf("%s|%d%016d|%s", g, priority, gseq, id)] = true
		case state == "pending":
			if band := math.Round(score[id] / 1e13); band != float64(priority) {
				tb.Errorf("%s: pending %s scores %v (band %v), its priority is %d", when, id, score[id], band, priority)
			}
		case state == "delayed":
			delayed[g]++
			if row["run_at"] != strconv.FormatInt(int64(score[id]), 10) {
				tb.Errorf("%s: delayed %s scores %v, its run_at is %s", when, id, score[id], row["run_at"])
			}
		case state == "active":
			active[g]++
		}
	}
	turns := map[string]bool{}
	for _, set := range []string{"rotation", "parked"} {
		for _, g := range h.rdb.ZRange(ctx, h.key(q, set), 0, -1).Val() {
			turns[g] = true
		}
	}
	index := h.rdb.ZRange(ctx, h.key(q, "gpending"), 0, -1).Val()
	for _, m := range index {
		if parts := strings.Split(m, "|"); in[parts[len(parts)-1]] == "pending" && !members[m] {
			tb.Errorf("%s: the group index holds %s, not its pending job's place", when, m)
		}
	}
	for m := range members {
		if !slices.Contains(index, m) {
			tb.Errorf("%s: the group index lacks %s", when, m)
		}
		if g, _, _ := strings.Cut(m, "|"); !turns[g] {
			tb.Errorf("%s: group %s has a pending job and no turn", when, g)
		}
	}
	flow := h.rdb.HGetAll(ctx, h.key(q, "flow")).Val()
	for g := range turns {
		if g == "" {
			continue
		}
		if a, _ := strconv.Atoi(cmp.Or(flow["a:"+g], "0")); a != active[g] {
			tb.Errorf("%s: group %s counts %d active, has %d", when, g, a, active[g])
		}
	}
	for field, value := range flow {
		if g, ok := strings.CutPrefix(field, "d:"); ok {
			if d, _ := strconv.Atoi(value); d != delayed[g] {
				tb.Errorf("%s: group %s counts %d delayed, has %d", when, g, d, delayed[g])
			}
		}
	}
	if first := h.rdb.ZRangeWithScores(ctx, h.key(q, "delayed"), 0, 0).Val(); len(first) == 1 {
		due, err := h.rdb.HGet(ctx, h.key(q, "meta"), "due").Float64()
		if err != nil || due > first[0].Score {
			tb.Errorf("%s: the due index holds the queue at %v (%v), its first delayed job at %v", when, due, err, first[0].Score)
		}
	}
}
