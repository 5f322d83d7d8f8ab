package examples

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/echo-mq/echo_mq/internal/redistest"
	"github.com/echo-mq/echo_mq/internal/servicetest"
)

// checkWorker runs one worker process through a stream of jobs, each a case
// of the contract, behind a proxy that refuses its first two claims with
// 503 and injects the faults the cases need. The worker claims the jobs in
// the order they were enqueued, one at a time.
func checkWorker(t *testing.T, lang language, svc service) {
	q := redistest.Queue(t)
	short := producedIDs(t, lang.produce(t, []string{"EMQ_URL=" + svc.URL(), "EMQ_QUEUE=" + q},
		`{"ms": 200}`, `{"ms": 200}`, `{"ms": 200}`, `{"ms": 200}`), 4)
	if len(slices.Compact(slices.Sorted(slices.Values(short)))) != len(short) {
		t.Errorf("the producer gave two jobs the same id: %q", short)
	}
	failing := svc.enqueue(t, q, `{"payload": {"fail": "boom"}, "max_attempts": 1}`)
	cancelled := svc.enqueue(t, q, `{"payload": {"ms": 60000}}`)
	lost := svc.enqueue(t, q, `{"payload": {"ms": 60000}}`)
	// 10.5 s of work under a 9 s lease extended every 3 s: time for the
	// three extends the proxy scripts (503, pass, 502) and the one that
	// follows.
	extendFaults := svc.enqueue(t, q, `{"payload": {"ms": 10500}}`)
	// Short work: nothing extends the lease while the complete backs off
	// (0.5 s after the 502, 1 s after the 503), so those waits must end
	// well before the lease from the claim lapses.
	completeFaults := svc.enqueue(t, q, `{"payload": {"ms": 100}}`)
	refused := svc.enqueue(t, q, `{"payload": {"ms": 100}, "max_attempts": 1}`)
	// A snooze over a year, which the service refuses (400).
	snoozeRefused := svc.enqueue(t, q, fmt.Sprintf(`{"payload": {"not_before": %d}, "max_attempts": 1}`,
		time.Now().Add(400*24*time.Hour).UnixMilli()))
	ids := append([]string{failing, cancelled, lost, extendFaults, completeFaults, refused, snoozeRefused}, short...)

	proxy := newProxy(t, svc.URL())
	proxy.Answer("/claim", unavailable, unavailable)
	proxy.Answer("/jobs/"+extendFaults+"/lease", unavailableLong, pass, badGateway)
	proxy.Answer("/jobs/"+completeFaults+"/complete", badGateway, unavailable)
	proxy.Answer("/jobs/"+refused+"/complete", invalid)
	// A 9 s lease: the complete's and the snooze's faults ask for 1.5 s of
	// pauses within it, and on a busy machine a worker takes seconds of its
	// own around them (the shell worker starts a process for each curl, jq
	// and sleep: on two loaded cores, 3.6 s from the claim of a 100 ms job
	// to its complete, then 1-2 s per fault). It stays short of the 10 s
	// Retry-After the extends meet, so that a worker that waited it out
	// would lose the job.
	w := lang.startWorker(t, "EMQ_URL="+proxy.URL(), "EMQ_QUEUE="+q,
		"EMQ_LEASE_MS=9000", "EMQ_WAIT_MS=1000", "EMQ_WORKER=test-"+lang.name)
	w.through(proxy)
	t.Cleanup(func() {
		if t.Failed() {
			for _, id := range ids {
				t.Logf("job %s: %s", id, svc.rawJob(q, id))
			}
		}
	})

	checkCancel(t, svc, w, q, cancelled)
	checkLost(t, svc, w, q, lost)
	for _, id := range short {
		j := w.waitState(t, svc, q, id, "completed", 10*time.Second)
		checkResult(t, lang, j, 200)
		if !w.logged("completed " + id) {
			t.Errorf("the worker did not log %q", "completed "+id)
		}
	}
	j := w.waitState(t, svc, q, failing, "dead", 10*time.Second)
	if j.LastError != "boom" {
		t.Errorf("failing job: last_error %q, want %q", j.LastError, "boom")
	}
	if !w.logged("failed " + failing + ": boom") {
		t.Errorf("the worker did not log %q", "failed "+failing+": boom")
	}
	checkExtendFaults(t, lang, svc, w, proxy, q, extendFaults)
	checkCompleteFaults(t, lang, svc, w, proxy, q, completeFaults)
	checkRefused(t, svc, w, proxy, q, refused)
	checkSnoozeRefused(t, svc, w, q, snoozeRefused)
	checkBackoff(t, w, proxy)
	checkSnooze(t, lang, svc, w, proxy, q, func(id string) { ids = append(ids, id) })
	checkSIGTERM(t, lang, svc, w, q, func(id string) { ids = append(ids, id) })
	checkNoReport(t, svc, proxy, q, lost)
}

// checkCancel cancels a job once the worker holds it, and checks that the
// worker stopped it and reported the cancel itself: last_error carries the
// reason and the job never stalled (a sweep that cancels a lapsed job
// writes neither).
func checkCancel(t *testing.T, svc service, w *worker, q, id string) {
	t.Helper()
	w.waitLogged(t, "claimed "+id, 30*time.Second)
	const reason = "cancelled by the test"
	svc.mustCall(t, "POST", "/queues/"+q+"/jobs/"+id+"/cancel", `{"reason": "`+reason+`"}`, 202, nil)
	j := w.waitState(t, svc, q, id, "cancelled", 20*time.Second)
	if j.LastError != "cancelled: "+reason || j.Stalled != 0 {
		t.Errorf("cancelled job: last_error %q, stalled %d; want %q, 0: the worker did not report the cancel",
			j.LastError, j.Stalled, "cancelled: "+reason)
	}
	w.waitLogged(t, "cancelled "+id+": "+reason, 5*time.Second)
}

// checkLost removes a job by force while the worker works it: the worker's
// next extend is answered 404, and the worker logs the job as lost and goes
// on with the next one (checkNoReport checks it reported nothing).
func checkLost(t *testing.T, svc service, w *worker, q, id string) {
	t.Helper()
	w.waitLogged(t, "claimed "+id, 10*time.Second)
	svc.mustCall(t, "DELETE", "/queues/"+q+"/jobs/"+id+"?force=true", "", 200, nil)
	w.until(t, 10*time.Second, fmt.Sprintf("the worker logs %q", "lost "+id), func() bool {
		w.checkRunning(t)
		return slices.ContainsFunc(w.lines(), func(l string) bool { return l == "lost "+id || strings.HasPrefix(l, "lost "+id+": ") })
	})
}

// checkNoReport checks, once the worker has exited, that it sent no
// complete and no fail for the job it lost, and that the job is still gone.
func checkNoReport(t *testing.T, svc service, proxy *servicetest.FlakyProxy, q, id string) {
	t.Helper()
	if n := len(proxy.Requests("/jobs/"+id+"/complete")) + len(proxy.Requests("/jobs/"+id+"/fail")); n > 0 {
		t.Errorf("the worker reported %d times on the job it lost, want none", n)
	}
	svc.mustCall(t, "GET", "/queues/"+q+"/jobs/"+id, "", 404, nil)
}

// checkExtendFaults checks that a job whose extends met a 503 with a long
// Retry-After and a 502 with an HTTP-date one still completed, and never
// stalled: the worker waited at most a third of the lease before it sent
// the extend again.
func checkExtendFaults(t *testing.T, lang language, svc service, w *worker, proxy *servicetest.FlakyProxy, q, id string) {
	t.Helper()
	j := w.waitState(t, svc, q, id, "completed", 20*time.Second)
	checkResult(t, lang, j, 10500)
	// The proxy answers the first three extends: a 503, a pass, a 502.
	if n := len(proxy.Requests("/jobs/" + id + "/lease")); n < 3 {
		t.Errorf("the worker sent %d extends, too few to meet the 503 and the 502 (want at least 3)", n)
	}
	if j.Stalled != 0 {
		t.Errorf("the job stalled %d times: its lease lapsed while the extends backed off", j.Stalled)
	}
	w.waitLogged(t, "completed "+id, 5*time.Second) // the log line follows the answer
}

// checkCompleteFaults checks that a job whose complete met a 502 and then
// a 503 still completed: the worker backed off and sent the same complete
// again each time.
func checkCompleteFaults(t *testing.T, lang language, svc service, w *worker, proxy *servicetest.FlakyProxy, q, id string) {
	t.Helper()
	j := w.waitState(t, svc, q, id, "completed", 20*time.Second)
	checkResult(t, lang, j, 100)
	if n := len(proxy.Requests("/jobs/" + id + "/complete")); n != 3 {
		t.Errorf("the worker sent %d completes, want 3: after a 502 and a 503, the one that passed", n)
	}
	if j.Stalled != 0 {
		t.Errorf("the job stalled %d times: its lease lapsed while the complete backed off", j.Stalled)
	}
	w.waitLogged(t, "completed "+id, 5*time.Second) // the log line follows the answer
}

// checkRefused checks that a job whose complete was refused (400, as for
// a result that is not valid) did not stay active: the worker failed it
// with the refusal, so that with one attempt it is dead.
func checkRefused(t *testing.T, svc service, w *worker, proxy *servicetest.FlakyProxy, q, id string) {
	t.Helper()
	j := w.waitState(t, svc, q, id, "dead", 10*time.Second)
	if !strings.Contains(j.LastError, "refused") || !strings.Contains(j.LastError, "400") ||
		!strings.Contains(j.LastError, invalidDetail) {
		t.Errorf("job with a refused result: last_error %q, want the refusal: \"result refused: 400 EMQINVALID: %s\"",
			j.LastError, invalidDetail)
	}
	if len(proxy.Requests("/jobs/"+id+"/fail")) == 0 {
		t.Errorf("the worker sent no fail after its complete was refused")
	}
}

// snoozeAhead is how far ahead of its enqueue checkSnooze's job is due: far
// enough that a worker claims it early even on two loaded cores, where the
// shell worker has taken over a second from the claim to the jq that
// reads the payload.
const snoozeAhead = 5 * time.Second

// checkSnooze enqueues a job {"not_before": now + snoozeAhead} while the
// worker waits for one: the worker claims it at once, too early, and snoozes it
// until then instead of failing it; the job comes back when it is due and
// completes, its attempt not spent by the snooze. The first snooze reaches
// the service but its answer is lost (502), the second meets a 503: the
// worker sends the same snooze again each time, and the service answers the
// repeat as the first. It passes the job's id to track, for the diagnostics.
func checkSnooze(t *testing.T, lang language, svc service, w *worker, proxy *servicetest.FlakyProxy, q string, track func(id string)) {
	t.Helper()
	const id = "snoozed" // known before the enqueue: the worker snoozes it at once
	track(id)
	proxy.Answer("/jobs/"+id+"/snooze", answerLost, unavailable)
	notBefore := time.Now().Add(snoozeAhead).UnixMilli()
	svc.enqueue(t, q, fmt.Sprintf(`{"id": %q, "payload": {"not_before": %d}}`, id, notBefore))
	j := w.waitState(t, svc, q, id, "completed", snoozeAhead+20*time.Second)
	checkResult(t, lang, j, 100)
	if j.Attempts != 1 || j.Stalled != 0 || j.LastError != "" {
		t.Errorf("snoozed job: attempts %d, stalled %d, last_error %q; want 1, 0 and none: the snooze spent the "+
			"attempt, or the job was failed", j.Attempts, j.Stalled, j.LastError)
	}
	if j.StartedAt.UnixMilli() < notBefore {
		t.Errorf("the attempt that completed the snoozed job started %d ms before its not_before",
			notBefore-j.StartedAt.UnixMilli())
	}
	if n := len(proxy.Requests("/jobs/" + id + "/snooze")); n != 3 {
		t.Errorf("the worker sent %d snoozes, want 3: after a lost answer and a 503, the one that passed", n)
	}
	if n := len(proxy.Requests("/jobs/" + id + "/fail")); n != 0 {
		t.Errorf("the worker sent %d fails for the job it snoozed, want none", n)
	}
	w.waitLogged(t, "completed "+id, 5*time.Second) // the log line follows the answer
	lines := w.lines()
	if n := count(lines, func(l string) bool { return l == "claimed "+id }); n != 2 {
		t.Errorf("the worker logged %q %d times, want 2: claimed, snoozed, claimed again", "claimed "+id, n)
	}
	snoozed := slices.DeleteFunc(lines, func(l string) bool { return !strings.HasPrefix(l, "snoozed "+id+": ") })
	var ms int
	if len(snoozed) != 1 {
		t.Errorf("the worker logged %q, want one line \"snoozed %s: <delay_ms> ms\"", snoozed, id)
	} else if _, err := fmt.Sscanf(snoozed[0], "snoozed "+id+": %d ms", &ms); err != nil || ms <= 0 || ms > int(snoozeAhead.Milliseconds()) {
		t.Errorf("the worker logged %q, want \"snoozed %s: <delay_ms> ms\" with 0 < delay_ms <= %d",
			snoozed[0], id, snoozeAhead.Milliseconds())
	}
}

// checkSnoozeRefused checks that a job whose snooze the service refused
// (400: a delay over a year) did not stay active: the worker failed it with
// the refusal, so that with one attempt it is dead.
func checkSnoozeRefused(t *testing.T, svc service, w *worker, q, id string) {
	t.Helper()
	j := w.waitState(t, svc, q, id, "dead", 10*time.Second)
	const want = "snooze refused: 400 EMQINVALID: "
	if !strings.HasPrefix(j.LastError, want) {
		t.Errorf("job whose snooze was refused: last_error %q, want %q and the detail", j.LastError, want)
	}
	w.waitLogged(t, "failed "+id+": "+j.LastError, 5*time.Second)
}

// count returns how many of lines match.
func count(lines []string, match func(string) bool) int {
	n := 0
	for _, l := range lines {
		if match(l) {
			n++
		}
	}
	return n
}

// checkResult checks that j was worked ms by lang's worker.
func checkResult(t *testing.T, lang language, j job, ms int) {
	t.Helper()
	want := fmt.Sprintf(`{"worked_ms": %d, "by": %q}`, ms, lang.name)
	if !sameJSON(j.Result, want) {
		t.Errorf("job %s: result %s, want %s", j.ID, j.Result, want)
	}
	if j.Worker != "test-"+lang.name {
		t.Errorf("job %s: worker %q, want %q (EMQ_WORKER)", j.ID, j.Worker, "test-"+lang.name)
	}
}

// checkBackoff checks that the worker logged its back-off and waited the
// Retry-After second (not its own 0.5 s) after each of the two 503s its
// first claims met.
func checkBackoff(t *testing.T, w *worker, proxy *servicetest.FlakyProxy) {
	t.Helper()
	if !w.loggedPrefix("backing off ") {
		t.Errorf("the worker did not log \"backing off\" after a 503")
	}
	claims := proxy.Requests("/claim")
	if len(claims) < 3 {
		t.Fatalf("the worker sent %d claims, want more than the 2 refused", len(claims))
	}
	for i := range 2 {
		// 0.9 s: a timer may fire a hair early; 0.5 s would be the worker's own back-off.
		if gap := claims[i+1].At.Sub(claims[i].At); gap < 900*time.Millisecond {
			t.Errorf("claim %d came %s after a 503 with Retry-After: 1, want at least 1 s", i+2, gap)
		}
	}
}

// sameJSON reports whether raw and want are the same JSON value.
func sameJSON(raw json.RawMessage, want string) bool {
	var got, exp any
	return json.Unmarshal(raw, &got) == nil && json.Unmarshal([]byte(want), &exp) == nil && reflect.DeepEqual(got, exp)
}
