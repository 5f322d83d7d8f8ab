package http_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/redistest"
)

func TestH7Fuzz(t *testing.T) {
	ctx := context.Background()
	forEachBackend(t, func(t *testing.T, h *harness) {
		for seed := uint64(1); seed <= 30; seed++ {
			q := redistest.Queue(t) + fmt.Sprint(seed)
			r := rand.New(rand.NewPCG(seed, seed*7))
			if seed%2 == 0 {
				h.putSettings(t, q, `{"group_concurrency":2,"group_order":"fifo"}`)
			}
			held := map[string]int64{}
			n := 0
			for step := 0; step < 250; step++ {
				switch k := r.IntN(12); k {
				case 0, 1, 2:
					n++
					body := map[string]any{"id": fmt.Sprintf("j%03d", n), "payload": n, "priority": r.IntN(3), "max_attempts": 1 + r.IntN(2)}
					if r.IntN(2) == 0 {
						body["group"] = fmt.Sprintf("g%d", r.IntN(3))
					}
					switch r.IntN(4) {
					case 0:
						body["delay_ms"] = 1 + r.IntN(3000)
					case 1:
						body["run_at"] = time.Now().Add(time.Duration(r.IntN(4000)-1000) * time.Millisecond).UTC().Format(time.RFC3339Nano)
					}
					h.do(t, "POST", jobsPath(q), body)
				case 3, 4:
					id := fmt.Sprintf("j%03d", 1+r.IntN(max(n, 1)))
					var body map[string]any
					switch r.IntN(4) {
					case 0:
						body = map[string]any{"priority": r.IntN(4)}
					case 1:
						body = map[string]any{"delay_ms": r.IntN(2) * (1 + r.IntN(3000))}
					case 2:
						body = map[string]any{"priority": r.IntN(4), "delay_ms": r.IntN(3000)}
					default:
						body = map[string]any{"run_at": time.Now().Add(time.Duration(r.IntN(4000)-2000) * time.Millisecond).UTC().Format(time.RFC3339Nano)}
					}
					got := h.do(t, "PATCH", jobPath(q, id), body)
					if got.Status != 200 && got.Status != 409 && got.Status != 404 {
						t.Fatalf("patch %s: %s", id, got)
					}
				case 5, 6:
					for _, j := range h.claim(t, q, map[string]any{"count": 1 + r.IntN(3), "lease_ms": 60000}) {
						held[j.ID] = j.Token
					}
				case 7:
					for id, tok := range held {
						if r.IntN(2) == 0 {
							h.complete(t, q, id, tok, "")
						} else {
							h.fail(t, q, id, tok, `,"error":"x","retry_in_ms":`+fmt.Sprint(r.IntN(2)*1500))
						}
						delete(held, id)
						break
					}
				case 8:
					h.do(t, "POST", "/queues/"+q+"/retry", map[string]any{"state": "dead", "limit": 1 + r.IntN(3)})
				case 9:
					h.do(t, "POST", "/queues/"+q+"/promote", map[string]any{"limit": 1 + r.IntN(3)})
				case 10:
					st := []string{"completed", "dead", "cancelled"}[r.IntN(3)]
					h.do(t, "POST", "/queues/"+q+"/clean", map[string]any{"state": st, "older_than_ms": 0, "limit": 1 + r.IntN(3)})
				case 11:
					id := fmt.Sprintf("j%03d", 1+r.IntN(max(n, 1)))
					h.do(t, "POST", jobPath(q, id, "cancel"), nil)
				}
				checkInvariants(t, h, ctx, q, fmt.Sprintf("seed %d step %d", seed, step))
				if t.Failed() {
					return
				}
			}
		}
	})
}

func checkInvariants(t *testing.T, h *harness, ctx context.Context, q, when string) {
	t.Helper()
	states := []string{"pending", "active", "delayed", "waiting", "completed", "dead", "cancelled"}
	where := map[string]string{}
	scores := map[string]float64{}
	for _, s := range states {
		for _, z := range h.rdb.ZRangeWithScores(ctx, h.key(q, s), 0, -1).Val() {
			id := z.Member.(string)
			if w, ok := where[id]; ok {
				t.Errorf("%s: %s in %s and %s", when, id, w, s)
			}
			where[id] = s
			scores[id] = z.Score
		}
	}
	dcount, acount := map[string]int{}, map[string]int{}
	gmembers := map[string]bool{}
	for id, s := range where {
		row := h.rdb.HGetAll(ctx, h.key(q, "job:"+id)).Val()
		if row["state"] != s {
			t.Errorf("%s: %s row state %q, in set %s", when, id, row["state"], s)
		}
		g := row["group"]
		p := row["priority"]
		if p == "" {
			p = "0"
		}
		switch s {
		case "pending":
			if g != "" {
				var gseq int64
				fmt.Sscan(row["gseq"], &gseq)
				gmembers[fmt.Sprintf("%s|%s%016d|%s", g, p, gseq, id)] = true
			} else {
				var pi float64
				fmt.Sscan(p, &pi)
				if band := math.Round(scores[id] / 1e13); band != pi {
					t.Errorf("%s: pending %s score %v band %v, priority %s", when, id, scores[id], band, p)
				}
			}
		case "delayed":
			if g != "" {
				dcount[g]++
			}
			if row["run_at"] != fmt.Sprintf("%d", int64(scores[id])) {
				t.Errorf("%s: delayed %s run_at %s score %v", when, id, row["run_at"], scores[id])
			}
		case "active":
			if g != "" {
				acount[g]++
			}
		}
	}
	got := h.rdb.ZRange(ctx, h.key(q, "gpending"), 0, -1).Val()
	have := map[string]bool{}
	for _, m := range got {
		have[m] = true
	}
	for _, m := range got {
		parts := strings.Split(m, "|")
		if where[parts[len(parts)-1]] == "pending" && !gmembers[m] {
			t.Errorf("%s: gpending has stale %s", when, m)
		}
	}
	for m := range gmembers {
		if !have[m] {
			t.Errorf("%s: gpending lacks %s (has %v)", when, m, got)
		}
	}
	inTurn := map[string]bool{}
	for _, g := range h.rdb.ZRange(ctx, h.key(q, "rotation"), 0, -1).Val() {
		inTurn[g] = true
	}
	for _, g := range h.rdb.ZRange(ctx, h.key(q, "parked"), 0, -1).Val() {
		inTurn[g] = true
	}
	for m := range gmembers {
		if g := strings.Split(m, "|")[0]; !inTurn[g] {
			t.Errorf("%s: group %s has pending %s but no turn", when, g, m)
		}
	}
	flow := h.rdb.HGetAll(ctx, h.key(q, "flow")).Val()
	for k, v := range flow {
		var n int
		fmt.Sscan(v, &n)
		switch {
		case strings.HasPrefix(k, "d:"):
			if dcount[k[2:]] != n {
				t.Errorf("%s: flow %s = %d, delayed jobs of group %d", when, k, n, dcount[k[2:]])
			}
		case strings.HasPrefix(k, "a:"):
			if acount[k[2:]] != n {
				t.Errorf("%s: flow %s = %d, active jobs of group %d", when, k, n, acount[k[2:]])
			}
		}
	}
	for g, n := range dcount {
		if _, ok := flow["d:"+g]; !ok && n > 0 {
			t.Errorf("%s: group %s has %d delayed, no d count", when, g, n)
		}
	}
	// due index at or before the first delayed job
	first := h.rdb.ZRangeWithScores(ctx, h.key(q, "delayed"), 0, 0).Val()
	if len(first) == 1 {
		due, err := h.rdb.HGet(ctx, h.key(q, "meta"), "due").Int64()
		if err == redis.Nil || (err == nil && float64(due) > first[0].Score) {
			t.Errorf("%s: meta due %d after first delayed %v", when, due, first[0].Score)
		}
	}
	_ = http.StatusOK
}
