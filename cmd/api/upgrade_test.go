package main

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/echo-mq/echo_mq/internal/redistest"
)

// TestUpgradeLosesNothing: upgrades lose nothing. The previous release
// (previousRelease, built from git) fills a redis-server of the test's own
// through its HTTP API: jobs in every state on five queues, live leases,
// a cancel request, a stale token, a dedupe key, a dependency, an open
// batch, groups under flow control, schedules, events. It is stopped with
// SIGTERM and this tree's binary started on the same Redis. Everything the
// old one answered reads back the same (jobs, listings, counts, settings,
// groups, schedules, batch, events; the history is logged, see below),
// and the new one serves it:
// the old tokens extend and complete, a stale one is 409 EMQSTALE, the
// holder sees the cancel request, pending jobs come in the same order
// (also through complete+claim-next), the dependant is released, the
// limits still count the old leases, the batch finishes, the delayed job
// comes due, the event stream resumes after the old one's last event.
// Then the previous release runs again on what this tree wrote: how well
// it reads it is logged, not asserted.
func TestUpgradeLosesNothing(t *testing.T) {
	t.Parallel()
	prevBin, curBin := buildReleases(t)
	server := redistest.StartServer(t)

	prev := startRelease(t, "the previous release", prevBin, server.Addr)
	w := seed(t, prev)
	before, err := takeSnapshot(prev.base, "imports/bt")
	if err != nil {
		t.Fatal(err)
	}
	oldEvents := readEvents(t, prev.base, "orders", "0", "", isResume)
	if err := prev.proc.terminate(); err != nil {
		t.Fatalf("the previous release did not stop cleanly: %v\n%s", err, prev.proc.logText())
	}

	cur := startRelease(t, "this tree", curBin, server.Addr)
	after, err := takeSnapshot(cur.base, "imports/bt")
	if err != nil {
		t.Fatal(err)
	}
	state, history := splitHistory(withoutQueue(before, "timers"))
	for _, d := range lost(state, after) {
		t.Errorf("after the upgrade: %s", d)
	}
	// Known: a history count waits up to a second in the memory of the
	// Functions library that counted it (lua/history.lua, STATS_WRITE_MS).
	// A release whose scripts differ loads a library of another name, which
	// neither sees nor writes the old one's, so the old release's last
	// second of counts per queue is lost to the new one. Logged, not
	// asserted, until the old release writes them out when it stops.
	for _, d := range lost(history, after) {
		t.Logf("history not carried over the upgrade: %s", d)
	}
	wantPayloads(t, after)
	wantCountsOf(t, cur, "orders", map[string]int64{"pending": 7, "active": 4, "delayed": 1, "waiting": 1,
		"completed": 1, "dead": 1, "cancelled": 1})
	if replay := readEvents(t, cur.base, "orders", "0", "", isResume); !slices.Equal(replay, oldEvents) {
		t.Errorf("the events replayed after the upgrade:\n%v\nwant as before it:\n%v", replay, oldEvents)
	}
	checkOrders(t, cur, w, oldEvents)
	checkTenants(t, cur, w)
	checkTimers(t, cur, w, before)
	checkImports(t, cur)
	checkReports(t, cur)
	checkTotals(t, cur, after)
	downgrade(t, prevBin, server.Addr, cur, w)
}

// seeded is what the previous release handed out: the tokens of the
// leases it granted, by job id, and a token made stale by a retry.
type seeded struct {
	tokens map[string]int64
	stale  int64
}

// hold records the tokens of jobs, and returns their ids.
func (w *seeded) hold(jobs []map[string]any) []string {
	var ids []string
	for _, j := range jobs {
		id := j["id"].(string)
		n, _ := j["token"].(json.Number).Int64()
		w.tokens[id] = n
		ids = append(ids, id)
	}
	return ids
}

// payloadOf is job id's payload: digits and characters that must come back
// as they were sent.
func payloadOf(id string) string {
	return fmt.Sprintf(`{"job":%q,"amount":1.50,"big":123456789012345678901234567890,"note":"caf\u00e9 \u2603","list":[0,-0.0,1e3]}`, id)
}

func resultOf(id string) string { return fmt.Sprintf(`{"ok":true,"of":%q,"total":2.50}`, id) }

// seed makes, through the previous release, the jobs the test upgrades.
func seed(t *testing.T, r release) *seeded {
	t.Helper()
	w := &seeded{tokens: map[string]int64{}}
	seedOrders(t, r, w)
	seedTenants(t, r, w)
	seedImports(t, r)
	seedReports(r)
	r.enqueue("timers", "soon", `,"delay_ms":1500`, "delayed") // last: it comes due across the upgrade
	return w
}

// pendingOrder is the order the pending jobs of orders are enqueued in,
// with their priorities; claimOrder the order they must be claimed in.
var (
	pendingOrder = []struct {
		id       string
		priority int
	}{{"p5a", 5}, {"p0a", 0}, {"p9a", 9}, {"p0b", 0}, {"p5b", 5}, {"p0c", 0}}
	claimOrder = []string{"p0a", "p0b", "p0c", "p5a", "p5b", "p9a", "dedup"}
)

// seedOrders makes a job in each state on orders: four active (run1 with
// progress, run2, cancelme with a cancel requested, flaky under a second
// token), completed done1, dead dead1, cancelled gone1, delayed later,
// waiting child (on run1), seven pending of three priorities, dedup with
// a dedupe key; then pauses and resumes the queue, the events' marker.
func seedOrders(t *testing.T, r release, w *seeded) {
	t.Helper()
	q := "/queues/orders"
	for _, id := range []string{"run1", "run2", "cancelme", "done1", "dead1", "flaky"} {
		extra := ""
		if id == "dead1" {
			extra = `,"max_attempts":1`
		}
		r.enqueue("orders", id, extra, "pending")
	}
	if jobs, _ := r.claim("orders", 6); len(w.hold(jobs)) != 6 {
		t.Fatalf("the previous release claimed %v, want 6 jobs", jobs)
	}
	r.complete("orders", "done1", w.tokens["done1"])
	wantState(t, r.do("POST", q+"/jobs/dead1/fail", fmt.Sprintf(`{"token":%d,"error":"smtp: refused"}`, w.tokens["dead1"]), 200), "dead")
	wantState(t, r.do("POST", q+"/jobs/flaky/fail", fmt.Sprintf(`{"token":%d,"error":"flaky","retry_in_ms":0}`, w.tokens["flaky"]), 200), "pending")
	w.stale = w.tokens["flaky"]
	if jobs, _ := r.claim("orders", 1); !slices.Equal(w.hold(jobs), []string{"flaky"}) {
		t.Fatalf("the previous release claimed %v, want flaky again", jobs)
	}
	r.do("POST", q+"/jobs/cancelme/cancel", `{"reason":"customer withdrew"}`, 202)
	r.do("POST", q+"/jobs/run1/lease", fmt.Sprintf(`{"token":%d,"lease_ms":600000,"progress":{"pct":10}}`, w.tokens["run1"]), 200)
	r.enqueue("orders", "child", `,"depends_on":["run1"]`, "waiting")
	r.enqueue("orders", "gone1", "", "pending")
	wantState(t, r.do("POST", q+"/jobs/gone1/cancel", `{"reason":"duplicate"}`, 200), "cancelled")
	r.enqueue("orders", "later", `,"delay_ms":3600000`, "delayed")
	for _, p := range pendingOrder {
		r.enqueue("orders", p.id, fmt.Sprintf(`,"priority":%d`, p.priority), "pending")
	}
	r.enqueue("orders", "dedup", `,"priority":9,"dedupe":{"key":"digest-7","mode":"until_done"}`, "pending")
	r.do("POST", q+"/pause", "", 200)
	r.do("POST", q+"/resume", "", 200)
}

// seedTenants puts tenants under a concurrency of 2 and a group
// concurrency of 1, with two jobs in each of groups t1 and t2: the claim
// takes g1a and g2a, and the limits hold g1b and g2b.
func seedTenants(t *testing.T, r release, w *seeded) {
	t.Helper()
	r.do("PUT", "/queues/tenants/settings", `{"concurrency":2,"group_concurrency":1}`, 200)
	for _, id := range []string{"g1a", "g1b", "g2a", "g2b"} {
		r.enqueue("tenants", id, fmt.Sprintf(`,"group":"t%c"`, id[1]), "pending")
	}
	jobs, held := r.claim("tenants", 4)
	if ids := w.hold(jobs); !slices.Equal(sorted(ids), []string{"g1a", "g2a"}) || held == "" {
		t.Fatalf("the previous release claimed %v (held by %q), want g1a and g2a, the rest held", ids, held)
	}
}

// seedImports opens batch bt on imports with b1 and b2, and completes b1.
func seedImports(t *testing.T, r release) {
	t.Helper()
	b := r.do("POST", "/queues/imports/batches", `{"id":"bt","open":true,"jobs":[{"id":"b1","payload":`+payloadOf("b1")+
		`},{"id":"b2","payload":`+payloadOf("b2")+`}],"callback":{"payload":{"notify":"ops"}}}`, 201)
	if b["state"] != "open" {
		t.Fatalf("the new batch is %v, want open", b)
	}
	jobs, _ := r.claim("imports", 1)
	if len(jobs) != 1 || jobs[0]["id"] != "b1" {
		t.Fatalf("the previous release claimed %v, want b1", jobs)
	}
	n, _ := jobs[0]["token"].(json.Number).Int64()
	r.complete("imports", "b1", n)
}

// seedReports sets a cron schedule and a paused interval one on reports.
// The cron's hour is ten hours or more away in Berlin: it does not fire
// during the test.
func seedReports(r release) {
	hour := (time.Now().UTC().Hour() + 12) % 24
	r.do("PUT", "/queues/reports/schedules/daily", fmt.Sprintf(
		`{"cron":"0 %d * * *","tz":"Europe/Berlin","job":{"payload":{"report":"daily"},"max_attempts":5}}`, hour), 201)
	r.do("PUT", "/queues/reports/schedules/hourly", `{"every_ms":3600000,"paused":true,"job":{"payload":{"report":"hourly"}}}`, 201)
}

// checkOrders: the old leases' tokens extend and complete, a stale token
// is refused, the event stream resumes after the old release's last
// event, the cancel request reaches its holder, the pending jobs come in
// their order (the first through complete+claim-next), the dedupe key
// still holds, and completing run1 releases child.
func checkOrders(t *testing.T, r release, w *seeded, oldEvents []sseEvent) {
	t.Helper()
	q := "/queues/orders"
	lease := func(token int64, extra string) string {
		return fmt.Sprintf(`{"token":%d,"lease_ms":600000%s}`, token, extra)
	}
	if ext := r.do("POST", q+"/jobs/run1/lease", lease(w.tokens["run1"], `,"progress":{"pct":40}`), 200); ext["cancel_requested"] != false {
		t.Errorf("extend of run1 under its old token: %v, want no cancel", ext)
	}
	r.refused("POST", q+"/jobs/flaky/lease", lease(w.stale, ""), 409, "EMQSTALE")
	r.refused("GET", fmt.Sprintf("%s/jobs/flaky/cancellation?token=%d", q, w.stale), "", 409, "EMQSTALE")
	r.refused("POST", q+"/jobs/run2/lease", lease(w.tokens["run1"], ""), 409, "EMQSTALE")
	wantJSON(t, "run2's result", r.complete("orders", "run2", w.tokens["run2"])["result"], resultOf("run2"))
	checkResume(t, r, oldEvents)

	ext := r.do("POST", q+"/jobs/cancelme/lease", lease(w.tokens["cancelme"], ""), 200)
	seen := r.do("GET", fmt.Sprintf("%s/jobs/cancelme/cancellation?token=%d", q, w.tokens["cancelme"]), "", 200)
	if ext["cancel_requested"] != true || ext["cancel_reason"] != "customer withdrew" || seen["cancel_requested"] != true {
		t.Errorf("the holder of cancelme sees %v and %v, want the cancel requested before the upgrade", ext, seen)
	}
	wantState(t, r.do("POST", q+"/jobs/cancelme/fail", fmt.Sprintf(`{"token":%d,"error":"stopped"}`, w.tokens["cancelme"]), 200), "cancelled")

	done := r.do("POST", q+"/jobs/flaky/complete", fmt.Sprintf(`{"token":%d,"claim":{"count":1,"lease_ms":600000}}`, w.tokens["flaky"]), 200)
	wantState(t, done, "completed")
	got := w.hold(jobsOf(t, done["next"]))
	for {
		jobs, _ := r.claim("orders", 1)
		if len(jobs) == 0 {
			break
		}
		got = append(got, w.hold(jobs)...)
	}
	if !slices.Equal(got, claimOrder) {
		t.Fatalf("after the upgrade the pending jobs were claimed %v, want %v", got, claimOrder)
	}
	again := r.do("POST", q+"/jobs", `{"payload":1,"dedupe":{"key":"digest-7","mode":"until_done"}}`, 200)
	if again["id"] != "dedup" {
		t.Errorf("an enqueue with dedup's key answered %v, want dedup", again)
	}
	for _, id := range got {
		r.complete("orders", id, w.tokens[id])
	}
	checkDependant(t, r, w)
	if fresh := r.do("POST", q+"/jobs", `{"payload":2,"dedupe":{"key":"digest-7","mode":"until_done"}}`, 201); fresh["id"] == "dedup" {
		t.Errorf("the enqueue after dedup completed answered %v, want a new job", fresh)
	}
}

// checkResume reads orders' events after the old release's last one:
// the new release's, ending with run2's completion.
func checkResume(t *testing.T, r release, oldEvents []sseEvent) {
	t.Helper()
	last := oldEvents[len(oldEvents)-1]
	resumed := readEvents(t, r.base, "orders", "", last.ID, func(e sseEvent) bool {
		return e.Kind == "completed" && e.JobID == "run2"
	})
	for _, e := range resumed {
		if slices.ContainsFunc(oldEvents, func(o sseEvent) bool { return o.ID == e.ID }) {
			t.Errorf("the stream resumed after %s gave the old event %v again", last.ID, e)
		}
	}
	if len(resumed) > 1 {
		t.Logf("resumed after the old release's last event: %v", resumed)
	}
}

// checkDependant: child waits for run1 until run1 completes under its old
// token, and is claimed then.
func checkDependant(t *testing.T, r release, w *seeded) {
	t.Helper()
	wantState(t, r.do("GET", "/queues/orders/jobs/child", "", 200), "waiting")
	r.complete("orders", "run1", w.tokens["run1"])
	wantState(t, r.do("GET", "/queues/orders/jobs/child", "", 200), "pending")
	jobs, _ := r.claim("orders", 2)
	if ids := w.hold(jobs); !slices.Equal(ids, []string{"child"}) {
		t.Fatalf("claimed %v after run1 completed, want child", ids)
	}
	r.complete("orders", "child", w.tokens["child"])
}

// checkTenants: the limits count the leases the old release granted.
func checkTenants(t *testing.T, r release, w *seeded) {
	t.Helper()
	step := func(what string, want ...string) {
		t.Helper()
		jobs, held := r.claim("tenants", 1)
		if ids := w.hold(jobs); !slices.Equal(ids, want) || (len(want) == 0 && held == "") {
			t.Fatalf("%s: claimed %v (held by %q), want %v", what, ids, held, want)
		}
	}
	step("g1a and g2a active under concurrency 2")
	r.complete("tenants", "g2a", w.tokens["g2a"])
	step("g1a active under group concurrency 1, t2 free", "g2b")
	step("g1a and g2b active under concurrency 2")
	r.complete("tenants", "g1a", w.tokens["g1a"])
	step("t1 free", "g1b")
	r.complete("tenants", "g1b", w.tokens["g1b"])
	r.complete("tenants", "g2b", w.tokens["g2b"])
}

// checkTimers: soon, delayed 1.5 s before the upgrade, reads back and is
// claimed once due. Then it leaves fresh active for the downgrade.
func checkTimers(t *testing.T, r release, w *seeded, before snapshot) {
	t.Helper()
	soon := r.do("GET", "/queues/timers/jobs/soon", "", 200)
	old := before["/queues/timers/jobs/soon"].(map[string]any)
	for _, k := range []string{"payload", "attempts", "created_at", "max_attempts"} {
		if d := differences(nil, "soon ."+k, old[k], soon[k]); d != nil {
			t.Errorf("after the upgrade: %v", d)
		}
	}
	t.Logf("soon, delayed 1.5 s before the upgrade, was %s before it and is %s after", old["state"], soon["state"])
	var jobs []map[string]any
	eventually(t, 20*time.Second, "soon claimable once due", func() bool {
		jobs, _ = r.claim("timers", 1)
		return len(jobs) > 0
	})
	if ids := w.hold(jobs); !slices.Equal(ids, []string{"soon"}) {
		t.Fatalf("claimed %v on timers, want soon", ids)
	}
	r.complete("timers", "soon", w.tokens["soon"])
	r.enqueue("timers", "fresh", "", "pending")
	w.hold(mustClaim(t, r, "timers", "fresh"))
}

// checkImports: the open batch takes another job, commits, finishes and
// calls back once.
func checkImports(t *testing.T, r release) {
	t.Helper()
	q := "/queues/imports"
	r.do("POST", q+"/batches/bt/jobs", `{"jobs":[{"id":"b3","payload":`+payloadOf("b3")+`}]}`, 200)
	if b := r.do("POST", q+"/batches/bt/commit", "", 200); b["state"] != "running" {
		t.Errorf("the committed batch is %v, want running", b)
	}
	jobs, _ := r.claim("imports", 2)
	if len(jobs) != 2 || jobs[0]["id"] != "b2" || jobs[1]["id"] != "b3" {
		t.Fatalf("claimed %v on imports, want b2 and b3", jobs)
	}
	for _, j := range jobs {
		n, _ := j["token"].(json.Number).Int64()
		r.complete("imports", j["id"].(string), n)
	}
	var b map[string]any
	eventually(t, 20*time.Second, "batch bt done with its callback enqueued", func() bool {
		b = r.do("GET", q+"/batches/bt", "", 200)
		return b["callback_job_id"] != nil
	})
	counts, _ := b["counts"].(map[string]any)
	if b["state"] != "done" || b["success"] != true || b["total"] != json.Number("3") || counts["completed"] != json.Number("3") ||
		b["callback_job_id"] != "batch:bt" {
		t.Errorf("the batch at its end: %v, want done, 3 of 3 completed, callback batch:bt", b)
	}
	cb := r.do("GET", q+"/jobs/batch:bt", "", 200)
	payload, _ := cb["payload"].(map[string]any)
	wantJSON(t, "the callback's payload", payload["payload"], `{"notify":"ops"}`)
}

// checkReports: a schedule made by the old release runs on demand.
func checkReports(t *testing.T, r release) {
	t.Helper()
	j := r.do("POST", "/queues/reports/schedules/daily/run", "", 201)
	id, _ := j["id"].(string)
	if !strings.HasPrefix(id, "daily:run:") || j["max_attempts"] != json.Number("5") {
		t.Errorf("the run of daily enqueued %v, want daily:run:<ms> with 5 attempts", j)
	}
	wantJSON(t, "the run's payload", j["payload"], `{"report":"daily"}`)
	if s := r.do("GET", "/queues/reports/schedules/daily", "", 200); s["last_job_id"] != id {
		t.Errorf("daily after its run: %v, want last_job_id %s", s, id)
	}
}

// checkTotals: every queue's counts after the work above, and orders'
// history counted the new release's work on top of what it read at the
// upgrade.
func checkTotals(t *testing.T, r release, upgraded snapshot) {
	t.Helper()
	wantCountsOf(t, r, "orders", map[string]int64{"pending": 1, "active": 0, "delayed": 1, "waiting": 0,
		"completed": 12, "dead": 1, "cancelled": 2})
	wantCountsOf(t, r, "tenants", map[string]int64{"pending": 0, "active": 0, "completed": 4})
	wantCountsOf(t, r, "imports", map[string]int64{"pending": 1, "active": 0, "completed": 3})
	wantCountsOf(t, r, "timers", map[string]int64{"pending": 0, "active": 1, "delayed": 0, "completed": 1})
	wantCountsOf(t, r, "reports", map[string]int64{"pending": 1})
	old := upgraded["/queues/orders/stats"].(map[string]any)
	now, err := historyTotals(r.base, "/queues/orders")
	if err != nil {
		t.Fatal(err)
	}
	if now["completed"].(int64)-old["completed"].(int64) != 11 || now["enqueued"].(int64)-old["enqueued"].(int64) != 1 {
		t.Errorf("orders' history %v after the upgrade's work, %v at the upgrade: want 11 more completed, 1 more enqueued", now, old)
	}
}

// downgrade stops this tree's service and runs the previous release on
// what it wrote, and logs what reads back differently and whether the
// leases this tree granted hold. Nothing here is asserted: a release
// promises to read its predecessor's data, not its successor's.
func downgrade(t *testing.T, prevBin, redisAddr string, cur release, w *seeded) {
	t.Helper()
	final, err := takeSnapshot(cur.base, "imports/bt")
	if err != nil {
		t.Fatal(err)
	}
	if err := cur.proc.terminate(); err != nil {
		t.Errorf("this tree's service did not stop cleanly: %v", err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", loopbackPort(t))
	base := "http://" + addr
	p, err := launchBinary(t, prevBin, releaseEnv(addr, redisAddr), base)
	if err != nil {
		t.Logf("downgrade: the previous release does not start on what this tree wrote: %v", err)
		return
	}
	defer p.kill()
	back, err := takeSnapshot(base, "imports/bt")
	if err != nil {
		t.Logf("downgrade: the previous release cannot read what this tree wrote: %v", err)
		return
	}
	diffs := lost(final, back)
	t.Logf("downgrade: the previous release reads %d answers of this tree's, with %d differences", len(final), len(diffs))
	for _, d := range diffs[:min(len(diffs), 20)] {
		t.Logf("downgrade:   %s", d)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	fresh := base + "/queues/timers/jobs/fresh/"
	a, err := call(ctx, "POST", fresh+"lease", fmt.Sprintf(`{"token":%d,"lease_ms":600000}`, w.tokens["fresh"]))
	t.Logf("downgrade: extend of fresh under the token this tree gave: %v %v", a, err)
	a, err = call(ctx, "POST", fresh+"complete", fmt.Sprintf(`{"token":%d}`, w.tokens["fresh"]))
	t.Logf("downgrade: complete of fresh under that token: %v %v", a, err)
	a, err = call(ctx, "POST", base+"/queues/orders/claim", `{"count":5}`)
	t.Logf("downgrade: a claim of orders (the job this tree enqueued with dedup's key): %v %v", a, err)
}

// isResume is the marker of seedOrders's events: the resume that ends them.
func isResume(e sseEvent) bool { return e.Kind == "resumed" }

// withoutQueue is s without the answers about queue, whose jobs change by
// themselves.
func withoutQueue(s snapshot, queue string) snapshot {
	out := snapshot{}
	for p, v := range s {
		if !strings.HasPrefix(p, "/queues/"+queue+"/") && p != "/queues/"+queue {
			out[p] = v
		}
	}
	return out
}

// splitHistory splits s into the answers about states and the queues'
// history totals.
func splitHistory(s snapshot) (state, history snapshot) {
	state, history = snapshot{}, snapshot{}
	for p, v := range s {
		if strings.HasSuffix(p, "/stats") {
			history[p] = v
		} else {
			state[p] = v
		}
	}
	return state, history
}

// mustClaim claims queue's next job, which must be id.
func mustClaim(t *testing.T, r release, queue, id string) []map[string]any {
	t.Helper()
	jobs, _ := r.claim(queue, 1)
	if len(jobs) != 1 || jobs[0]["id"] != id {
		t.Fatalf("claimed %v on %s, want %s", jobs, queue, id)
	}
	return jobs
}

// wantCountsOf checks the counts of GET /queues/{queue}, and that they add
// up to the jobs its listings show.
func wantCountsOf(t *testing.T, r release, queue string, want map[string]int64) {
	t.Helper()
	var got queueCounts
	mustCall(t, "GET", r.base+"/queues/"+queue, "", 200, &got)
	listed := int64(0)
	for _, state := range jobStates {
		var page heldJobs
		mustCall(t, "GET", r.base+"/queues/"+queue+"/jobs?state="+state+"&limit=500", "", 200, &page)
		if int64(len(page.Jobs)) != got.Counts[state] {
			t.Errorf("%s: %s counts %d, lists %d", queue, state, got.Counts[state], len(page.Jobs))
		}
		listed += int64(len(page.Jobs))
	}
	for state, n := range want {
		if got.Counts[state] != n {
			t.Errorf("%s: counts %v (%d jobs listed), want %s %d", queue, got.Counts, listed, state, n)
		}
	}
}

// wantPayloads checks that every job of s that seed made has the payload
// it was sent with.
func wantPayloads(t *testing.T, s snapshot) {
	t.Helper()
	n := 0
	for path, v := range s {
		q, id, ok := strings.Cut(strings.TrimPrefix(path, "/queues/"), "/jobs/")
		if !ok || q == "reports" {
			continue
		}
		wantJSON(t, path+" .payload", v.(map[string]any)["payload"], payloadOf(id))
		n++
	}
	if n != 23 {
		t.Errorf("%d jobs read back after the upgrade, want the 23 seed made", n)
	}
}

func wantState(t *testing.T, j map[string]any, state string) {
	t.Helper()
	if j["state"] != state {
		t.Fatalf("job %v, want %s", j, state)
	}
}

// wantJSON checks that got, decoded with json.Number, is the JSON value
// want, digit for digit.
func wantJSON(t *testing.T, what string, got any, want string) {
	t.Helper()
	var w any
	if err := decodeJSON([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, w) {
		t.Errorf("%s: %v, want %s", what, got, want)
	}
}

// jobsOf is a decoded list of jobs.
func jobsOf(t *testing.T, v any) []map[string]any {
	t.Helper()
	list, ok := v.([]any)
	if !ok && v != nil {
		t.Fatalf("%v is no list of jobs", v)
	}
	jobs := make([]map[string]any, len(list))
	for i, j := range list {
		jobs[i] = j.(map[string]any)
	}
	return jobs
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
