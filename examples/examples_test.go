package examples

import (
	"os"
	"sync"
	"testing"
	"time"

	"github.com/echo-mq/echo_mq/internal/redistest"
	"github.com/echo-mq/echo_mq/internal/servicetest"
)

func TestMain(m *testing.M) {
	code := servicetest.Main(m, &serviceBin)
	builds.removeAll()
	os.Exit(code)
}

// TestWorkers runs, for each language, its producer and its worker against
// the service on a real redis-server, through every case of the contract
// (examples/README.md):
//
//   - producer: a job per argument, {"ms": 1000} with none, no job at all
//     when an argument is not JSON, and no second job when an enqueue whose
//     answer was lost is sent again;
//   - worker: one worker process, behind a proxy that refuses its first
//     claims with 503, works a stream of jobs: short ones, a failing one, one
//     cancelled while it runs, one removed while it runs (lost), one whose
//     extends and complete meet 503 and 502, one whose result is refused
//     (400), one whose snooze is refused (400), one claimed before its
//     not_before and snoozed until then (its snooze meeting a lost answer
//     and a 503), which completes with its one attempt; then a SIGTERM
//     while it works lets the job in hand finish;
//   - sigterm_in_claim: a SIGTERM while the claim waits, and the job that
//     claim brings is still worked;
//   - second_signal: a second signal exits at once, 130.
//
// The languages run side by side, all at once whatever -parallel says:
// each mostly waits on its worker's timers, so that on two cores the
// package takes the time of one language, not of two in a row.
func TestWorkers(t *testing.T) {
	var wg sync.WaitGroup
	for _, lang := range languages {
		wg.Go(func() { t.Run(lang.name, func(t *testing.T) { runLanguage(t, lang) }) })
	}
	wg.Wait()
}

// runLanguage is one language's case of TestWorkers.
func runLanguage(t *testing.T, lang language) {
	lang.prepare(t)
	svc := startService(t)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("service log:\n%s", svc.Log())
		}
	})
	t.Run("producer", func(t *testing.T) { checkProducer(t, lang, svc) })
	t.Run("worker", func(t *testing.T) { checkWorker(t, lang, svc) })
	t.Run("sigterm_in_claim", func(t *testing.T) { checkSIGTERMInClaim(t, lang, svc) })
	t.Run("second_signal", func(t *testing.T) { checkSecondSignal(t, lang, svc) })
}

// TestShellWorkerKilledStopsExtending SIGKILLs the shell worker, whose
// lease extender is a background subshell, while it holds a job: the
// extender must notice and end, so that the lease lapses and the sweep
// gives the job back, instead of a job nobody works staying active.
func TestShellWorkerKilledStopsExtending(t *testing.T) {
	t.Parallel()
	shell.prepare(t)
	svc := startService(t)
	q := redistest.Queue(t)
	id := svc.enqueue(t, q, `{"payload": {"ms": 60000}}`)
	w := shell.startWorker(t, "EMQ_URL="+svc.URL(), "EMQ_QUEUE="+q, "EMQ_LEASE_MS=1500", "EMQ_WAIT_MS=1000")
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
