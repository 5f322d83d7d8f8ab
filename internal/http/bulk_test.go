package http_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/echo-mq/echo_mq/internal/auth"
	emqhttp "github.com/echo-mq/echo_mq/internal/http"
	"github.com/echo-mq/echo_mq/internal/redistest"
)

// bulkView is the answer of a bulk action: one of the counts, and more.
type bulkView struct {
	Retried  int  `json:"retried"`
	Removed  int  `json:"removed"`
	Promoted int  `json:"promoted"`
	More     bool `json:"more"`
}

// bulk sends a bulk action (retry, clean, promote) on q and wants 200.
func (h *harness) bulk(tb testing.TB, q, verb string, body any) bulkView {
	tb.Helper()
	return must[bulkView](tb, h.do(tb, "POST", "/queues/"+q+"/"+verb, body), http.StatusOK)
}

// bulkIDs are the ids prefix00000 ... of n jobs (batchOf's).
func bulkIDs(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%05d", prefix, i)
	}
	return out
}

// deadJobs makes n jobs of q dead (bulkIDs(prefix, n)), each enqueued
// with extra, failing them last id first, a ms or more apart, so that
// the first id is the last to die.
func (h *harness) deadJobs(tb testing.TB, q, prefix string, n int, extra string) []string {
	tb.Helper()
	h.enqueueBatch(tb, q, batchOf(prefix, 0, n, `,"max_attempts":1`+extra))
	tokens := map[string]int64{}
	for _, j := range h.claim(tb, q, map[string]any{"count": 100}) {
		tokens[j.ID] = j.Token
	}
	ids := bulkIDs(prefix, n)
	for _, id := range slices.Backward(ids) {
		if _, ok := tokens[id]; !ok {
			tb.Fatalf("job %s was not claimed: %v", id, tokens)
		}
		time.Sleep(2 * time.Millisecond) // finished in distinct ms
		must[jobView](tb, h.fail(tb, q, id, tokens[id], `,"error":"boom"`), http.StatusOK)
	}
	return ids
}

// wantOperatorEvents fails the test unless each of ids has exactly one
// event of kind, naming the anonymous admin.
func wantOperatorEvents(tb testing.TB, h *harness, q, kind string, ids []string) {
	tb.Helper()
	entries := h.streamEntries(tb, q)
	for _, id := range ids {
		wantActor(tb, onlyEntry(tb, entriesOf(entries, kind, id), kind+" "+id))
	}
}

// TestBulkRetry: a retry of dead jobs takes the oldest finished first, up
// to its limit, says whether more are left, and retries each as the
// single retry does; cancelled jobs are left alone.
func TestBulkRetry(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		dead := h.deadJobs(t, q, "d", 25, "")
		h.add(t, q, "k")
		must[jobView](t, h.cancel(t, q, "k", nil), http.StatusOK)

		got := h.bulk(t, q, "retry", `{"state":"dead","limit":10}`)
		if got != (bulkView{Retried: 10, More: true}) {
			t.Fatalf("first retry of 10 answered %+v, want 10 retried and more", got)
		}
		// The oldest finished are the last ids (deadJobs failed them first).
		for i, id := range dead {
			want := "dead"
			if i >= 15 {
				want = "pending"
			}
			h.wantState(t, q, id, want)
		}
		j := h.get(t, q, dead[24])
		if j.Attempts != 0 || j.Stalled != 0 || j.FinishedAt != "" || j.LastError != "boom" || j.Token != 0 {
			t.Errorf("a retried job is %+v, want attempts 0, no finish, last_error kept, no token", j)
		}
		for _, want := range []bulkView{{Retried: 10, More: true}, {Retried: 5}, {}} {
			if got := h.bulk(t, q, "retry", `{"state":"dead","limit":10}`); got != want {
				t.Fatalf("retry answered %+v, want %+v", got, want)
			}
		}
		h.wantState(t, q, "k", "cancelled")
		wantOperatorEvents(t, h, q, "retried", dead)

		// They are claimed in the order they were retried.
		want := slices.Clone(dead)
		slices.Reverse(want)
		if got := ids(h.claim(t, q, map[string]any{"count": 100})); !slices.Equal(got, want) {
			t.Errorf("claim after the retries got %v, want %v", got, want)
		}
	})
}

// TestBulkRetryKeepsTheRules: grouped jobs go back to their groups, a
// dedupe key is taken again by the oldest job that had it while the
// others go without (as retrying them one by one would), and a retry of
// cancelled jobs takes those alone.
func TestBulkRetryKeepsTheRules(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.deadJobs(t, q, "ga", 2, `,"group":"g1"`)
		h.deadJobs(t, q, "gb", 1, `,"group":"g2"`)
		for _, id := range []string{"x1", "x2"} {
			h.enqueue(t, q, fmt.Sprintf(`{"id":%q,"payload":1,"max_attempts":1,"dedupe":{"key":"k","mode":"until_done"}}`, id))
			c := h.claimOne(t, q, id, 30_000)
			must[jobView](t, h.fail(t, q, id, c.Token, `,"error":"boom"`), http.StatusOK)
		}
		h.add(t, q, "c1")
		must[jobView](t, h.cancel(t, q, "c1", nil), http.StatusOK)

		if got := h.bulk(t, q, "retry", `{"state":"cancelled"}`); got != (bulkView{Retried: 1}) {
			t.Fatalf("retry of cancelled jobs answered %+v, want 1", got)
		}
		h.wantState(t, q, "c1", "pending")
		h.wantState(t, q, "x1", "dead")
		if got := h.bulk(t, q, "retry", `{"state":"dead"}`); got != (bulkView{Retried: 5}) {
			t.Fatalf("retry of dead jobs answered %+v, want 5", got)
		}
		groups := must[groupPage](t, h.do(t, "GET", "/queues/"+q+"/groups", nil), http.StatusOK).Groups
		pending := map[string]int64{}
		for _, g := range groups {
			pending[g.Name] = g.Counts["pending"]
		}
		if pending["g1"] != 2 || pending["g2"] != 1 {
			t.Errorf("groups after the retry %+v, want g1 with 2 pending, g2 with 1", groups)
		}
		if x1, x2 := h.get(t, q, "x1"), h.get(t, q, "x2"); x1.DedupeKey != "k" || x2.DedupeKey != "" {
			t.Errorf("dedupe keys after the retry: x1 %q, x2 %q; want x1 to hold k and x2 none", x1.DedupeKey, x2.DedupeKey)
		}
		if j := must[jobView](t, h.do(t, "POST", jobsPath(q), `{"id":"x3","payload":1,"dedupe":{"key":"k","mode":"until_done"}}`), http.StatusOK); j.ID != "x1" {
			t.Errorf("an enqueue with key k answered %s, want x1, which holds it", j.ID)
		}
		if got := ids(h.claim(t, q, map[string]any{"count": 100})); len(got) != 6 {
			t.Errorf("claim after the retries got %v, want the 6 retried jobs", got)
		}
	})
}

// finished makes job id of q end in state (completed, dead or cancelled)
// and answers it.
func (h *harness) finished(tb testing.TB, q, id, state string) jobView {
	tb.Helper()
	switch state {
	case "cancelled":
		h.add(tb, q, id)
		must[jobView](tb, h.cancel(tb, q, id, nil), http.StatusOK)
	case "dead":
		h.enqueue(tb, q, fmt.Sprintf(`{"id":%q,"payload":1,"max_attempts":1}`, id))
		c := h.claimOne(tb, q, id, 30_000)
		must[jobView](tb, h.fail(tb, q, id, c.Token, `,"error":"boom"`), http.StatusOK)
	default:
		h.add(tb, q, id)
		c := h.claimOne(tb, q, id, 30_000)
		must[jobView](tb, h.complete(tb, q, id, c.Token, ""), http.StatusOK)
	}
	return h.wantState(tb, q, id, state)
}

// serverMs is Redis's clock, in ms: the clock finish times are on.
func (h *harness) serverMs(tb testing.TB) int64 {
	tb.Helper()
	now, err := h.rdb.Time(context.Background()).Result()
	if err != nil {
		tb.Fatal(err)
	}
	return now.UnixMilli()
}

// TestBulkCleanByAge: a clean of each finished state deletes the jobs
// that finished more than older_than_ms ago on the server's clock, rows
// and logs, and keeps the younger ones; older_than_ms 0 deletes all.
func TestBulkCleanByAge(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		finishedStates := []string{"completed", "dead", "cancelled"}
		old := map[string]jobView{}
		for _, s := range finishedStates {
			old[s] = h.finished(t, q, "old-"+s, s)
			// A log of the job's (a key of its own), which goes with it.
			if err := h.rdb.RPush(context.Background(), h.key(q, "logs:old-"+s), "a line").Err(); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(time.Second)
		young := map[string]jobView{}
		for _, s := range finishedStates {
			young[s] = h.finished(t, q, "new-"+s, s)
		}
		for _, s := range finishedStates {
			// An age between the two finishes, counted from the server's now.
			oldAt, youngAt := parseStamp(t, old[s].FinishedAt).UnixMilli(), parseStamp(t, young[s].FinishedAt).UnixMilli()
			before := h.serverMs(t)
			age := before - (oldAt+youngAt)/2
			got := h.bulk(t, q, "clean", map[string]any{"state": s, "older_than_ms": age})
			took := h.serverMs(t) - before
			wantProblem(t, h.do(t, "GET", jobPath(q, "old-"+s), nil), http.StatusNotFound, "EMQGONE")
			if keys := h.keysOf(t, q, ":logs:old-"+s); len(keys) != 0 {
				t.Errorf("clean of %s left the job's log: %v", s, keys)
			}
			if took >= (youngAt-oldAt)/2 {
				t.Logf("the clean of %s took %d ms: whether it kept the younger job is not known", s, took)
				continue
			}
			if got != (bulkView{Removed: 1}) {
				t.Errorf("clean of %s older than %d ms answered %+v, want 1 removed and no more", s, age, got)
			}
			h.wantState(t, q, "new-"+s, s)
		}
		for _, s := range finishedStates {
			if got := h.bulk(t, q, "clean", map[string]any{"state": s, "older_than_ms": 0}); got.Removed > 1 || got.More {
				t.Errorf("clean of every %s job answered %+v, want at most the younger one", s, got)
			}
			wantProblem(t, h.do(t, "GET", jobPath(q, "new-"+s), nil), http.StatusNotFound, "EMQGONE")
		}
		if c := h.queueOf(t, q).Counts; c["completed"]+c["dead"]+c["cancelled"] != 0 {
			t.Errorf("counts after the cleans %v, want no finished job", c)
		}
		wantOperatorEvents(t, h, q, "removed", []string{"old-completed", "old-dead", "old-cancelled",
			"new-completed", "new-dead", "new-cancelled"})
	})
}

// TestBulkCleanLimit: a clean takes up to its limit, oldest first, and
// says whether more are left; jobs of other states stay.
func TestBulkCleanLimit(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		dead := h.deadJobs(t, q, "d", 25, "")
		h.finished(t, q, "done", "completed")
		got := h.bulk(t, q, "clean", `{"state":"dead","older_than_ms":0,"limit":10}`)
		if got != (bulkView{Removed: 10, More: true}) {
			t.Fatalf("first clean of 10 answered %+v, want 10 and more", got)
		}
		for i, id := range dead {
			if gone := h.do(t, "GET", jobPath(q, id), nil).Status == http.StatusNotFound; gone != (i >= 15) {
				t.Errorf("job %s gone = %v after the first clean, want the 10 oldest gone", id, gone)
			}
		}
		for _, want := range []bulkView{{Removed: 10, More: true}, {Removed: 5}, {}} {
			if got := h.bulk(t, q, "clean", `{"state":"dead","older_than_ms":0,"limit":10}`); got != want {
				t.Fatalf("clean answered %+v, want %+v", got, want)
			}
		}
		h.wantState(t, q, "done", "completed")
		if keys := h.keysOf(t, q, ":job:d0*"); len(keys) != 0 {
			t.Errorf("rows left after the cleans: %v", keys)
		}
	})
}

// TestBulkPromote: a promote makes delayed jobs pending, earliest run-at
// first, up to its limit, grouped ones into their groups; more says
// whether delayed jobs are left.
func TestBulkPromote(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		var order []string
		for i, g := range []string{"", "g1", "g2", "", "g1", "g1"} {
			id := fmt.Sprintf("j%d", i)
			job := map[string]any{"id": id, "payload": i, "delay_ms": 3_600_000 + i*1000}
			if g != "" {
				job["group"] = g
			}
			h.enqueue(t, q, job)
			order = append(order, id)
		}
		groupCounts := func() map[string]map[string]int64 {
			out := map[string]map[string]int64{}
			for _, g := range must[groupPage](t, h.do(t, "GET", "/queues/"+q+"/groups", nil), http.StatusOK).Groups {
				out[g.Name] = g.Counts
			}
			return out
		}
		if got := h.bulk(t, q, "promote", `{"limit":4}`); got != (bulkView{Promoted: 4, More: true}) {
			t.Fatalf("promote of 4 answered %+v, want 4 and more", got)
		}
		for i, id := range order {
			if j := h.wantState(t, q, id, map[bool]string{true: "pending", false: "delayed"}[i < 4]); i < 4 && j.RunAt != "" {
				t.Errorf("promoted job %s keeps run_at %s", id, j.RunAt)
			}
		}
		if c := groupCounts(); c["g1"]["pending"] != 1 || c["g1"]["delayed"] != 2 || c["g2"]["pending"] != 1 || c["g2"]["delayed"] != 0 {
			t.Errorf("group counts after promoting 4: %v, want g1 1 pending 2 delayed, g2 1 pending", c)
		}
		for _, want := range []bulkView{{Promoted: 2}, {}} {
			if got := h.bulk(t, q, "promote", nil); got != want {
				t.Fatalf("promote answered %+v, want %+v", got, want)
			}
		}
		if c := groupCounts(); c["g1"]["pending"] != 3 || c["g1"]["delayed"] != 0 || c["g2"]["pending"] != 1 {
			t.Errorf("group counts after promoting all: %v, want g1 3 pending, none delayed", c)
		}
		wantOperatorEvents(t, h, q, "promoted", order)
		if got := h.claim(t, q, map[string]any{"count": 100}); len(got) != len(order) {
			t.Errorf("claim after the promotes got %v, want all %d", ids(got), len(order))
		}
	})
}

// TestBulkRefusals: a bad state, age or limit, or an unknown field, is 400
// EMQINVALID naming the field, and writes nothing.
func TestBulkRefusals(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.fillQueue(t, q)
		before := h.snapshot(t)
		for _, tc := range []struct{ verb, body, field string }{
			{"retry", `{}`, "state"},
			{"retry", `{"state":"completed"}`, "state"},
			{"retry", `{"state":"dead","limit":0}`, "limit"},
			{"retry", `{"state":"dead","limit":1001}`, "limit"},
			{"retry", `{"state":"dead","force":true}`, "force"},
			{"clean", `{"state":"dead"}`, "older_than_ms"},
			{"clean", `{"state":"dead","older_than_ms":-1}`, "older_than_ms"},
			{"clean", `{"state":"pending","older_than_ms":0}`, "state"},
			{"clean", `{"state":"dead","older_than_ms":0,"limit":0}`, "limit"},
			{"clean", `{"state":"dead","older_than_ms":0,"limit":1001}`, "limit"},
			{"promote", `{"limit":0}`, "limit"},
			{"promote", `{"limit":1001}`, "limit"},
			{"promote", `{"state":"delayed"}`, "state"},
		} {
			p := wantProblem(t, h.do(t, "POST", "/queues/"+q+"/"+tc.verb, tc.body), http.StatusBadRequest, "EMQINVALID")
			wantField(t, p, tc.field)
		}
		h.unchanged(t, before, "refused bulk actions")
	})
}

// TestBulkNeedsAnAdminKey: a worker or reader key is refused 403, and
// nothing changes; an admin key acts.
func TestBulkNeedsAnAdminKey(t *testing.T) {
	t.Parallel()
	keys, err := auth.ParseKeys("reader:reader-key-0123456789,worker:worker-key-0123456789,admin:admin-key-01234567890")
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, redistest.Client(t), withConfig(func(c *emqhttp.Config) { c.Keys = keys }))
	q := redistest.Queue(t)
	as := func(key, verb, body string) reply {
		req := httptest.NewRequest("POST", "/queues/"+q+"/"+verb, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+key)
		return h.serve(t, req, []byte(body))
	}
	admin := "admin-key-01234567890"
	for _, body := range []string{`{"id":"d","payload":1,"max_attempts":1}`, `{"id":"l","payload":1,"delay_ms":60000}`} {
		req := httptest.NewRequest("POST", jobsPath(q), strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+admin)
		must[jobView](t, h.serve(t, req, []byte(body)), http.StatusCreated)
	}
	before := h.snapshot(t)
	actions := map[string]string{"retry": `{"state":"dead"}`, "clean": `{"state":"dead","older_than_ms":0}`, "promote": `{}`}
	for verb, body := range actions {
		for _, key := range []string{"worker-key-0123456789", "reader-key-0123456789"} {
			wantProblem(t, as(key, verb, body), http.StatusForbidden, "EMQFORBIDDEN")
		}
	}
	h.unchanged(t, before, "bulk actions by worker and reader keys")
	if got := must[bulkView](t, as(admin, "promote", `{}`), http.StatusOK); got.Promoted != 1 {
		t.Errorf("promote by an admin key answered %+v, want 1", got)
	}
}

// TestBulkAudit: each bulk action is logged once with who asked and how
// many jobs it took; its events name the key too.
func TestBulkAudit(t *testing.T) {
	t.Parallel()
	var logs lockedBuffer
	h := newHarness(t, redistest.Client(t), withConfig(func(c *emqhttp.Config) {
		c.Logger = slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}))
	q := redistest.Queue(t)
	h.deadJobs(t, q, "d", 3, "")
	h.enqueue(t, q, `{"id":"l","payload":1,"delay_ms":60000}`)
	h.bulk(t, q, "retry", `{"state":"dead","limit":2}`)
	h.bulk(t, q, "promote", nil)
	h.bulk(t, q, "clean", `{"state":"dead","older_than_ms":0}`)
	wantProblem(t, h.do(t, "POST", "/queues/"+q+"/clean", `{"state":"dead"}`), http.StatusBadRequest, "EMQINVALID")

	want := map[string]map[string]any{
		"retry_all":   {"state": "dead", "retried": 2.0, "more": true},
		"promote_all": {"promoted": 1.0, "more": false},
		"clean":       {"state": "dead", "older_than_ms": 0.0, "removed": 1.0, "more": false},
	}
	var actions []string
	for _, rec := range logs.records(t) {
		if rec["msg"] != "Operator action" {
			continue
		}
		action := fmt.Sprint(rec["action"])
		actions = append(actions, action)
		if rec["actor"] != "anonymous" || rec["role"] != "admin" || rec["queue"] != q {
			t.Errorf("audit record %v, want actor anonymous, role admin, queue %s", rec, q)
		}
		for k, v := range want[action] {
			if rec[k] != v {
				t.Errorf("audit record %v, want %s = %v", rec, k, v)
			}
		}
	}
	if w := []string{"retry_all", "promote_all", "clean"}; !slices.Equal(actions, w) {
		t.Errorf("audited actions %v, want %v (a refused one is not an action)", actions, w)
	}
}
