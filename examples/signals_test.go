package examples

import (
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/echo-mq/echo_mq/internal/redistest"
)

// checkSIGTERM sends SIGTERM while the worker works a 1.5 s job, enqueues
// one more job, and checks that the worker finished the first, did not
// claim the second, exited 0, and left no process or temporary file
// behind. It passes each job's id to track, for the diagnostics.
func checkSIGTERM(t *testing.T, lang language, svc service, w *worker, q string, track func(id string)) {
	t.Helper()
	id := svc.enqueue(t, q, `{"payload": {"ms": 1500}}`)
	track(id)
	w.waitLogged(t, "claimed "+id, 10*time.Second)
	w.signal(t, syscall.SIGTERM)
	later := svc.enqueue(t, q, `{"payload": {"ms": 100}}`)
	track(later)
	w.waitExit(t, 0)
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

// checkSIGTERMInClaim sends SIGTERM while the worker's claim waits at the
// service for a job, then enqueues one: the claim brings it, and the worker
// works it to completed before it exits 0, sending no other claim. A claim
// the worker dropped would strand its job until the lease lapsed.
func checkSIGTERMInClaim(t *testing.T, lang language, svc service) {
	q := redistest.Queue(t)
	proxy := newProxy(t, svc.URL())
	// A long wait: the claim is still waiting when the job comes. A lease
	// the 300 ms job never needs extended: this is not about the lease, and
	// on a busy machine a short one lapses before the worker reports.
	w := lang.startWorker(t, "EMQ_URL="+proxy.URL(), "EMQ_QUEUE="+q,
		"EMQ_LEASE_MS=6000", "EMQ_WAIT_MS=20000", "EMQ_WORKER=test-"+lang.name)
	w.through(proxy)
	eventually(t, 20*time.Second, "the worker's claim waits at the service", func() bool {
		w.checkRunning(t)
		return atService(proxy, "/claim") == 1
	})
	w.signal(t, syscall.SIGTERM)
	signalled := time.Now()
	// The workers log "stopping" at once, but the shell runs its trap only
	// once the curl of the claim has returned: wait a little, not for it.
	deadline := time.Now().Add(time.Second)
	for !w.logged("stopping") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	id := svc.enqueue(t, q, `{"payload": {"ms": 300}}`)
	w.waitExit(t, 0)
	if j := svc.job(t, q, id); j.State != "completed" {
		t.Errorf("the job a claim in flight at SIGTERM brought is %s, want completed\n%s", j.State, svc.rawJob(q, id))
	} else {
		checkResult(t, lang, j, 300)
	}
	for _, claim := range proxy.Requests("/claim") {
		if claim.At.After(signalled) {
			t.Errorf("the worker sent a claim %s after SIGTERM", claim.At.Sub(signalled))
		}
	}
	for _, line := range []string{"claimed " + id, "completed " + id, "stopping", "stopped"} {
		if !w.logged(line) {
			t.Errorf("the worker did not log %q", line)
		}
	}
}

// checkSecondSignal sends SIGTERM and then SIGINT while the worker works a
// long job: the second signal makes it exit at once, with 130, and leaves
// the job unreported, to its lease.
func checkSecondSignal(t *testing.T, lang language, svc service) {
	q := redistest.Queue(t)
	id := svc.enqueue(t, q, `{"payload": {"ms": 60000}}`)
	w := lang.startWorker(t, "EMQ_URL="+svc.URL(), "EMQ_QUEUE="+q, "EMQ_LEASE_MS=1500", "EMQ_WAIT_MS=1000")
	w.waitLogged(t, "claimed "+id, 20*time.Second)
	w.signal(t, syscall.SIGTERM)
	w.waitLogged(t, "stopping", 5*time.Second)
	w.signal(t, syscall.SIGINT)
	w.waitExit(t, 130)
	if j := svc.job(t, q, id); j.State != "active" && j.State != "pending" || j.LastError != "" {
		t.Errorf("after a second signal the job is %s with last_error %q, want it active (or swept back to "+
			"pending) and unreported", j.State, j.LastError)
	}
}

// signal sends sig to the worker's process.
func (w *worker) signal(t *testing.T, sig os.Signal) {
	t.Helper()
	if err := w.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("%v: %v", sig, err)
	}
}

// waitExit waits until the worker exits, and checks that it exited with
// code and left no process or temporary file behind.
func (w *worker) waitExit(t *testing.T, code int) {
	t.Helper()
	// Generous: this is not a measure of speed, only that it ends (the job
	// in hand first, however slowly a busy machine lets it).
	w.until(t, 20*time.Second, "the worker exits", func() bool {
		select {
		case <-w.done:
			return true
		default:
			return false
		}
	})
	if got := w.cmd.ProcessState.ExitCode(); got != code {
		t.Errorf("the worker exited %d (%v), want %d", got, w.cmd.ProcessState, code)
	}
	if left := leftovers(w.cmd.Process.Pid); len(left) > 0 {
		t.Errorf("the worker left processes running: %q", left)
	}
	if files, _ := os.ReadDir(w.tmpDir); len(files) > 0 {
		t.Errorf("the worker left %d files in its TMPDIR, e.g. %s", len(files), files[0].Name())
	}
}
