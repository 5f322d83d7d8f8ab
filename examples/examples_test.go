package examples

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"syscall"
	"testing"
	"time"

	"github.com/echo-mq/echo_mq/internal/redistest"
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "examples-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	serviceBin, err = buildService(dir)
	code := 1
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
	} else {
		code = redistest.Run(m)
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// TestWorkers runs, for each language, its producer and then one worker
// process through every case of the contract, in order: the worker starts
// behind a proxy that answers its first two claims with 503, works short
// jobs, fails one, stops one that is cancelled while it runs, and on
// SIGTERM finishes the job in hand and exits 0.
func TestWorkers(t *testing.T) {
	for _, lang := range languages {
		t.Run(lang.name, func(t *testing.T) {
			t.Parallel()
			lang.requireTools(t)
			runExample(t, lang)
		})
	}
}

// runExample is one language's case of TestWorkers.
func runExample(t *testing.T, lang language) {
	svc := startService(t)
	q := redistest.Queue(t)
	short := producedIDs(t, lang.produce(t, []string{"EMQ_URL=" + svc.base, "EMQ_QUEUE=" + q},
		`{"ms": 200}`, `{"ms": 200}`, `{"ms": 200}`, `{"ms": 200}`), 4)
	checkDefaultPayload(t, lang, svc)
	failing := svc.enqueue(t, q, `{"payload": {"fail": "boom"}, "max_attempts": 1}`)
	long := svc.enqueue(t, q, `{"payload": {"ms": 60000}}`)

	proxy := newFlakyProxy(t, svc.base, 2)
	w := lang.startWorker(t, "EMQ_URL="+proxy.url, "EMQ_QUEUE="+q,
		"EMQ_LEASE_MS=1500", "EMQ_WAIT_MS=1000", "EMQ_WORKER=test-"+lang.name)
	ids := append([]string{failing, long}, short...)
	t.Cleanup(func() {
		if t.Failed() {
			for _, id := range ids {
				t.Logf("job %s: %s", id, svc.rawJob(q, id))
			}
			t.Logf("service log:\n%s", readFile(svc.log))
		}
	})

	checkCancel(t, svc, w, q, long)
	for _, id := range short {
		j := svc.waitState(t, q, id, "completed", 10*time.Second)
		checkResult(t, lang, j, 200)
		if !w.logged("completed " + id) {
			t.Errorf("the worker did not log %q", "completed "+id)
		}
	}
	j := svc.waitState(t, q, failing, "dead", 10*time.Second)
	if j.LastError != "boom" {
		t.Errorf("failing job: last_error %q, want %q", j.LastError, "boom")
	}
	if !w.logged("failed " + failing + ": boom") {
		t.Errorf("the worker did not log %q", "failed "+failing+": boom")
	}
	checkBackoff(t, w, proxy)
	checkSIGTERM(t, lang, svc, w, q, func(id string) { ids = append(ids, id) })
}

// TestShellWorkerKilledStopsExtending SIGKILLs the shell worker, whose
// lease extender is a background subshell, while it holds a job: the
// extender must notice and end, so that the lease lapses and the sweep
// gives the job back, instead of a job nobody works staying active.
func TestShellWorkerKilledStopsExtending(t *testing.T) {
	t.Parallel()
	shell.requireTools(t)
	svc := startService(t)
	q := redistest.Queue(t)
	id := svc.enqueue(t, q, `{"payload": {"ms": 60000}}`)
	w := shell.startWorker(t, "EMQ_URL="+svc.base, "EMQ_QUEUE="+q, "EMQ_LEASE_MS=1500", "EMQ_WAIT_MS=1000")
	w.waitLogged(t, "claimed "+id, 20*time.Second)
	if err := w.cmd.Process.Kill(); err != nil { // the shell alone, not its children
		t.Fatal(err)
	}
	<-w.done
	eventually(t, 10*time.Second, "the extender ends after the worker was killed", func() bool {
		return len(leftovers(w.cmd.Process.Pid)) == 0
	})
	var j job
	eventually(t, 20*time.Second, "the sweep recovers the job once its lease lapsed", func() bool {
		j = svc.job(t, q, id)
		return j.Stalled > 0
	})
	if j.State != "pending" {
		t.Errorf("job after one stall: %s, want pending\n%s", j.State, svc.rawJob(q, id))
	}
}

// checkDefaultPayload runs the producer with no argument, on a queue no
// worker works, and checks it enqueued one job {"ms": 1000}.
func checkDefaultPayload(t *testing.T, lang language, svc *service) {
	t.Helper()
	q := redistest.Queue(t)
	id := producedIDs(t, lang.produce(t, []string{"EMQ_URL=" + svc.base, "EMQ_QUEUE=" + q}), 1)[0]
	if j := svc.job(t, q, id); !sameJSON(j.Payload, `{"ms": 1000}`) {
		t.Errorf("the producer with no argument enqueued %s, want {\"ms\": 1000}", j.Payload)
	}
}

// checkCancel cancels the long job once the worker holds it, and checks
// that the worker stopped it and reported the cancel itself: last_error
// carries the reason and the job never stalled (a sweep that cancels a
// lapsed job writes neither).
func checkCancel(t *testing.T, svc *service, w *worker, q, id string) {
	t.Helper()
	w.waitLogged(t, "claimed "+id, 30*time.Second)
	const reason = "cancelled by the test"
	svc.mustCall(t, "POST", "/queues/"+q+"/jobs/"+id+"/cancel", `{"reason": "`+reason+`"}`, 202, nil)
	j := svc.waitState(t, q, id, "cancelled", 20*time.Second)
	if j.LastError != "cancelled: "+reason || j.Stalled != 0 {
		t.Errorf("cancelled job: last_error %q, stalled %d; want %q, 0: the worker did not report the cancel",
			j.LastError, j.Stalled, "cancelled: "+reason)
	}
	w.waitLogged(t, "cancelled "+id+": "+reason, 5*time.Second)
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
// Retry-After second (not its own 0.5 s) after each 503.
func checkBackoff(t *testing.T, w *worker, proxy *flakyProxy) {
	t.Helper()
	if !w.loggedPrefix("backing off ") {
		t.Errorf("the worker did not log \"backing off\" after a 503")
	}
	claims := proxy.claims()
	if len(claims) <= proxy.refusals {
		t.Fatalf("the worker sent %d claims, want more than the %d refused", len(claims), proxy.refusals)
	}
	for i := range proxy.refusals {
		// 0.9 s: a timer may fire a hair early; 0.5 s would be the worker's own back-off.
		if gap := claims[i+1].Sub(claims[i]); gap < 900*time.Millisecond {
			t.Errorf("claim %d came %s after a 503 with Retry-After: 1, want at least 1 s", i+2, gap)
		}
	}
}

// checkSIGTERM sends SIGTERM while the worker works a 1.5 s job, enqueues
// one more job, and checks that the worker finished the first, did not
// claim the second, exited 0, and left no process or temporary file
// behind. It passes each job's id to track, for the diagnostics.
func checkSIGTERM(t *testing.T, lang language, svc *service, w *worker, q string, track func(id string)) {
	t.Helper()
	id := svc.enqueue(t, q, `{"payload": {"ms": 1500}}`)
	track(id)
	w.waitLogged(t, "claimed "+id, 10*time.Second)
	if err := w.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM: %v", err)
	}
	later := svc.enqueue(t, q, `{"payload": {"ms": 100}}`)
	track(later)
	// Generous: this is not a measure of speed, only that it ends.
	select {
	case <-w.done:
	case <-time.After(20 * time.Second):
		t.Fatalf("the worker did not exit within 20 s of SIGTERM")
	}
	if code := w.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("the worker exited %d after SIGTERM, want 0", code)
	}
	if left := leftovers(w.cmd.Process.Pid); len(left) > 0 {
		t.Errorf("the worker left processes running: %q", left)
	}
	if files, _ := os.ReadDir(w.tmpDir); len(files) > 0 {
		t.Errorf("the worker left %d files in its TMPDIR, e.g. %s", len(files), files[0].Name())
	}
	if j := svc.job(t, q, id); j.State != "completed" {
		t.Errorf("the job in hand at SIGTERM is %s, want completed", j.State)
	} else {
		checkResult(t, lang, j, 1500)
	}
	if j := svc.job(t, q, later); j.State != "pending" {
		t.Errorf("a job enqueued after SIGTERM is %s, want pending: the worker claimed after SIGTERM", j.State)
	}
	for _, line := range []string{"completed " + id, "stopping", "stopped"} {
		if !w.logged(line) {
			t.Errorf("the worker did not log %q", line)
		}
	}
}

// sameJSON reports whether raw and want are the same JSON value.
func sameJSON(raw json.RawMessage, want string) bool {
	var got, exp any
	return json.Unmarshal(raw, &got) == nil && json.Unmarshal([]byte(want), &exp) == nil && reflect.DeepEqual(got, exp)
}
