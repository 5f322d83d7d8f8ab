package http_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/echo-mq/echo_mq/internal/redistest"
)

func snoozeBody(token int64, delayMs int64) string {
	return fmt.Sprintf(`{"token":%d,"delay_ms":%d}`, token, delayMs)
}

// A snooze puts the held job back, delayed, without spending its attempt
// or touching its stalls; the token is dead afterwards, and a repeat
// answers as the first time.
func TestSnoozeGivesTheAttemptBack(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.enqueue(t, q, `{"id":"s1","payload":{},"max_attempts":2}`)
		held := h.claimOne(t, q, "s1", 30000)
		if held.Attempts != 1 {
			t.Fatalf("claimed with attempts %d", held.Attempts)
		}
		before := time.Now()
		snoozed := must[jobView](t, h.do(t, "POST", jobPath(q, "s1", "snooze"), snoozeBody(held.Token, 60000)), http.StatusOK)
		if snoozed.State != "delayed" || snoozed.Attempts != 0 || snoozed.Stalled != 0 || snoozed.LeaseExpiresAt != "" {
			t.Fatalf("snoozed: %+v", snoozed)
		}
		if runAt := parseStamp(t, snoozed.RunAt); runAt.Before(before.Add(59*time.Second)) || runAt.After(time.Now().Add(61*time.Second)) {
			t.Errorf("run_at %v, want a minute from now", runAt)
		}
		again := must[jobView](t, h.do(t, "POST", jobPath(q, "s1", "snooze"), snoozeBody(held.Token, 60000)), http.StatusOK)
		if again.State != "delayed" || again.RunAt != snoozed.RunAt {
			t.Errorf("a repeated snooze answered %+v, want the job as the first left it", again)
		}
		for verb, body := range map[string]string{"lease": `"lease_ms":1000`, "complete": `"result":1`, "fail": `"error":"x"`} {
			wantProblem(t, h.do(t, "POST", jobPath(q, "s1", verb), fmt.Sprintf(`{"token":%d,%s}`, held.Token, body)),
				http.StatusConflict, "EMQSTALE")
		}

		// Snoozed for 0 ms it is pending at once, and its next claim is its
		// first attempt again: a job snoozed any number of times keeps its
		// budget.
		h.enqueue(t, q, `{"id":"s2","payload":{},"max_attempts":1}`)
		for range 3 {
			held := h.claimOne(t, q, "s2", 30000)
			if held.Attempts != 1 {
				t.Fatalf("claim after snoozes: attempts %d", held.Attempts)
			}
			if j := must[jobView](t, h.do(t, "POST", jobPath(q, "s2", "snooze"), snoozeBody(held.Token, 0)), http.StatusOK); j.State != "pending" {
				t.Fatalf("snoozed for 0: %+v", j)
			}
		}
	})
}

// A snooze of a job whose cancel was requested cancels it: the snooze is
// the holder's safe point.
func TestSnoozeOfACancelRequestedJobCancelsIt(t *testing.T) {
	t.Parallel()
	h := newHarness(t, redistest.Client(t))
	q := redistest.Queue(t)
	h.enqueue(t, q, `{"id":"c1","payload":{}}`)
	held := h.claimOne(t, q, "c1", 30000)
	if r := h.do(t, "POST", jobPath(q, "c1", "cancel"), `{"reason":"superseded"}`); r.Status != http.StatusAccepted {
		t.Fatalf("cancel answered %s", r)
	}
	j := must[jobView](t, h.do(t, "POST", jobPath(q, "c1", "snooze"), snoozeBody(held.Token, 1000)), http.StatusOK)
	if j.State != "cancelled" || j.CancelReason != "superseded" {
		t.Fatalf("snoozed after a cancel request: %+v", j)
	}
}

// A snooze frees the job's flow control slot, and a fifo group's head
// stays with the snoozed job.
func TestSnoozeFreesTheSlotAndKeepsTheFIFOHead(t *testing.T) {
	t.Parallel()
	h := newHarness(t, redistest.Client(t))
	q := redistest.Queue(t)
	h.putSettings(t, q, `{"concurrency":1,"group_order":"fifo"}`)
	h.addIn(t, q, "g", "first", "second")
	held := h.claimOne(t, q, "first", 30000)
	if got := h.claimAnswer(t, q, map[string]any{}); len(got.Jobs) != 0 {
		t.Fatalf("a second claim under concurrency 1 got %v", ids(got.Jobs))
	}
	must[jobView](t, h.do(t, "POST", jobPath(q, "first", "snooze"), snoozeBody(held.Token, 0)), http.StatusOK)
	h.claimOne(t, q, "first", 30000) // the slot is free, and the group's head is still "first"
}

func TestSnoozeRefusesBadRequests(t *testing.T) {
	t.Parallel()
	h := newHarness(t, redistest.Client(t))
	q := redistest.Queue(t)
	h.enqueue(t, q, `{"id":"b1","payload":{}}`)
	held := h.claimOne(t, q, "b1", 30000)
	for body, field := range map[string]string{
		fmt.Sprintf(`{"token":%d}`, held.Token):                        "delay_ms",
		fmt.Sprintf(`{"token":%d,"delay_ms":-1}`, held.Token):          "delay_ms",
		fmt.Sprintf(`{"token":%d,"delay_ms":31536000001}`, held.Token): "delay_ms",
		`{"delay_ms":10}`: "token",
	} {
		wantField(t, wantProblem(t, h.do(t, "POST", jobPath(q, "b1", "snooze"), body), http.StatusBadRequest, "EMQINVALID"), field)
	}
	wantProblem(t, h.do(t, "POST", jobPath(q, "nope", "snooze"), snoozeBody(held.Token, 10)), http.StatusNotFound, "EMQGONE")
	if j := h.get(t, q, "b1"); j.State != "active" {
		t.Errorf("refused snoozes moved the job: %+v", j)
	}
}
