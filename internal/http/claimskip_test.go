package http_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/echo-mq/echo_mq/internal/redistest"
)

// onRedis is a harness on the shared real redis-server alone (one replica).
func onRedis(t *testing.T, opts ...option) *harness {
	t.Helper()
	return newHarness(t, redistest.Client(t), opts...)
}

// An expired job at the head of a group with a group rate limit is
// cancelled by the claim, which takes on past it: it is not a start, so it
// must not spend the group's rate limit (docs: "Expired jobs it took
// instead count against neither limit").
func TestExpiredJobSpendsNoGroupRateLimit(t *testing.T) {
	t.Parallel()
	h := onRedis(t)
	q := redistest.Queue(t)
	h.putSettings(t, q, `{"group_rate_limit":{"limit":1,"window_ms":60000}}`)
	h.enqueue(t, q, `{"id":"x","payload":1,"group":"g","expires_in_ms":1}`)
	h.addIn(t, q, "g", "good")
	time.Sleep(20 * time.Millisecond) // x expires
	c := h.claimAnswer(t, q, nil)
	h.wantState(t, q, "x", "cancelled")
	if len(c.Jobs) != 1 || c.Jobs[0].ID != "good" {
		t.Fatalf("claim answered %d jobs %v, held_by %q; want job good (x expired and was no start)",
			len(c.Jobs), ids(c.Jobs), c.HeldBy)
	}
}

// The same with a fifo group: the expired head is let go, and the claim
// takes the group's next job.
func TestExpiredFifoHolderLetsTheGroupGoOn(t *testing.T) {
	t.Parallel()
	h := onRedis(t)
	q := redistest.Queue(t)
	h.putSettings(t, q, `{"group_order":"fifo","group_concurrency":1}`)
	h.enqueue(t, q, `{"id":"x","payload":1,"group":"g","expires_in_ms":1}`)
	h.addIn(t, q, "g", "good", "after")
	time.Sleep(20 * time.Millisecond)
	c := h.claimAnswer(t, q, `{"count":5}`)
	if len(c.Jobs) != 1 || c.Jobs[0].ID != "good" {
		t.Fatalf("claim answered %v held_by %q, want good alone (fifo)", ids(c.Jobs), c.HeldBy)
	}
	h.wantState(t, q, "x", "cancelled")
	page := must[groupPage](t, h.do(t, "GET", "/queues/"+q+"/groups", nil), http.StatusOK)
	if len(page.Groups) != 1 || page.Groups[0].Counts["active"] != 1 {
		t.Fatalf("groups %+v, want g with 1 active", page.Groups)
	}
}

// A freed slot wakes a poll only while claims are being held back (the
// held key, lua/flow.lua's wake_held, lives 2 s after the last held
// claim), so a poll held back looks again within retry_after, which keeps
// the key alive. A paused group beside a concurrency-held one must not
// make the poll trust its empty answer until a resume: whichever group's
// name sorts first, the slot b1 frees reaches the poll at once.
func TestAPausedGroupHidesNoConcurrencyWake(t *testing.T) {
	t.Parallel()
	for _, paused := range []string{"z", "a"} {
		t.Run("paused group "+paused, func(t *testing.T) {
			t.Parallel()
			h := onRedis(t)
			q := redistest.Queue(t)
			h.putSettings(t, q, `{"group_concurrency":1}`)
			h.addIn(t, q, "b", "b1", "b2")
			h.addIn(t, q, paused, "p1")
			must[any](t, h.do(t, "POST", "/queues/"+q+"/groups/"+paused+"/pause", nil), http.StatusOK)
			b1 := h.claimOne(t, q, "b1", 60_000)
			poll := h.pollAsync(t, q, `{"wait_ms":15000}`)
			time.Sleep(2600 * time.Millisecond) // past the held key's 2 s
			must[any](t, h.complete(t, q, "b1", b1.Token, ""), http.StatusOK)
			completed := time.Now()
			a := await(t, poll, 14*time.Second)
			took := time.Since(completed)
			got := decode[claimView](t, a.reply)
			if len(got.Jobs) != 1 || got.Jobs[0].ID != "b2" {
				t.Fatalf("the poll answered %s, want b2", a.reply)
			}
			if took > 1500*time.Millisecond {
				t.Fatalf("the poll answered b2 %v after b1 completed freed its group's slot, want within ~1 s", took)
			}
		})
	}
}

// retry_after_ms of a claim cut short by concurrency counts the leases
// this claim starts as lasting lease_ms; a job with a timeout_ms shorter
// than that gets a lease that ends by its timeout (run_deadline), so the
// first slot frees then, not lease_ms on.
func TestConcurrencyRetryAfterCountsTimeouts(t *testing.T) {
	t.Parallel()
	h := onRedis(t)
	q := redistest.Queue(t)
	h.putSettings(t, q, `{"concurrency":2}`)
	for _, id := range []string{"t1", "t2", "t3"} {
		h.enqueue(t, q, `{"id":"`+id+`","payload":1,"timeout_ms":200}`)
	}
	c := h.claimAnswer(t, q, `{"count":3,"lease_ms":30000}`)
	if len(c.Jobs) != 2 || c.HeldBy != "concurrency" || c.RetryAfterMs == nil {
		t.Fatalf("claim answered %v held_by %q, want 2 held by concurrency", ids(c.Jobs), c.HeldBy)
	}
	lease := parseStamp(t, c.Jobs[0].LeaseExpiresAt).Sub(parseStamp(t, c.Jobs[0].StartedAt))
	if *c.RetryAfterMs > 200 {
		t.Fatalf("retry_after_ms %d, but the claimed jobs' leases end %v after they started (timeout_ms 200)",
			*c.RetryAfterMs, lease)
	}
}

// Tokens stay distinct and consecutive across the skip loop's rounds (the
// next round starts at the token after the last one used), plain and
// under flow control.
func TestSkipRoundsGiveDistinctTokens(t *testing.T) {
	t.Parallel()
	h := onRedis(t)
	for _, settings := range []string{"", `{"concurrency":100}`} {
		q := redistest.Queue(t)
		if settings != "" {
			h.putSettings(t, q, settings)
		}
		for i := range 12 {
			h.enqueue(t, q, `{"id":"x`+string(rune('a'+i))+`","payload":1,"expires_in_ms":1}`)
			h.add(t, q, "g"+string(rune('a'+i)))
		}
		time.Sleep(20 * time.Millisecond)
		c := h.claimAnswer(t, q, `{"count":10}`)
		if len(c.Jobs) != 10 {
			t.Fatalf("settings %q: claim answered %v, want 10 jobs", settings, ids(c.Jobs))
		}
		for i, j := range c.Jobs {
			if j.ID[0] != 'g' || j.Token != c.Jobs[0].Token+int64(i) {
				t.Fatalf("settings %q: job %d %s token %d, first %d: want g jobs, consecutive tokens",
					settings, i, j.ID, j.Token, c.Jobs[0].Token)
			}
		}
	}
}
