package wake

import (
	"testing"
	"time"
)

// received reports whether w was woken.
func received(w *Waiter) bool {
	select {
	case <-w.C:
		return true
	default:
		return false
	}
}

// liveHub is a Hub as Run leaves it once subscribed, without Redis: the
// tests call Wake as Run does for each message.
func liveHub() *Hub {
	h := NewHub(nil, "p", nil)
	h.subscribed()
	return h
}

// emptyPoll makes a poll of queue whose claim found nothing, and returns
// it asleep.
func emptyPoll(t *testing.T, h *Hub, queue string, holds time.Duration) *Waiter {
	t.Helper()
	w := h.Poll(queue)
	if claim, _ := w.Look(); !claim {
		t.Fatal("a poll of a queue the hub knows nothing of did not claim")
	}
	w.Found(false, holds)
	if claim, _ := w.Look(); claim {
		t.Fatal("a poll whose claim found nothing claimed again with no wake")
	}
	return w
}

func TestWakeWakesNOldestFirst(t *testing.T) {
	t.Parallel()
	h := NewHub(nil, "p", nil)
	a, b, c := h.Register("q"), h.Register("q"), h.Register("q")
	other := h.Register("r")
	h.Wake("q", 2)
	if !received(a) || !received(b) || received(c) || received(other) {
		t.Fatal("Wake(q, 2) did not wake exactly the two oldest waiters of q")
	}
	h.Wake("q", -1)
	if !received(c) || received(other) {
		t.Fatal("Wake(q, -1) did not wake the rest of q only")
	}
	for _, w := range []*Waiter{a, b, c, other} {
		w.Done()
	}
	if len(h.queues) != 0 {
		t.Fatalf("%d queues still kept after Done, want 0", len(h.queues))
	}
}

func TestDonePassesOnAnUntakenWake(t *testing.T) {
	t.Parallel()
	h := NewHub(nil, "p", nil)
	gone, next := h.Register("q"), h.Register("q")
	h.Wake("q", 1) // wakes gone, whose client has left without reading C
	gone.Done()
	if !received(next) {
		t.Fatal("the wake gone did not take was lost, want it passed to the next waiter")
	}
	next.Done()
}

func TestDoneAfterTakingTheWakePassesNothing(t *testing.T) {
	t.Parallel()
	h := NewHub(nil, "p", nil)
	w, other := h.Register("q"), h.Register("q")
	h.Wake("q", 1)
	if !received(w) {
		t.Fatal("not woken")
	}
	w.Done()
	if received(other) {
		t.Fatal("a taken wake was passed on again")
	}
	other.Done()
}

// TestAPollOfAQueueKnownEmptySleeps: once a claim found the queue empty,
// a new poll sleeps without a claim, until a wake sends it.
func TestAPollOfAQueueKnownEmptySleeps(t *testing.T) {
	t.Parallel()
	h := liveHub()
	first := emptyPoll(t, h, "q", -1)
	second := h.Poll("q")
	if claim, recheck := second.Look(); claim || !recheck.IsZero() {
		t.Fatalf("a poll of a queue known empty: claim %v, recheck %v; want asleep, no recheck of its own", claim, recheck)
	}
	h.Wake("q", 1)
	if !received(first) || received(second) {
		t.Fatal("a wake of 1 did not send exactly the oldest sleeper")
	}
	if claim, _ := first.Look(); !claim {
		t.Fatal("a woken poll did not claim")
	}
	first.Found(true, -1)
	if received(second) {
		t.Fatal("a claim that took the job it was sent for sent another poll")
	}
	first.Done()
	second.Done()
}

// TestAWakeWithNoSleeperIsKeptForTheNextPoll: a wake that finds every poll
// awake is taken by the next poll that looks, which claims.
func TestAWakeWithNoSleeperIsKeptForTheNextPoll(t *testing.T) {
	t.Parallel()
	h := liveHub()
	emptyPoll(t, h, "q", -1).Done()
	h.Wake("q", 2)
	for i := range 2 {
		w := h.Poll("q")
		if claim, _ := w.Look(); !claim {
			t.Fatalf("poll %d after a wake of 2 with no sleeper did not claim", i)
		}
		w.Found(true, -1)
		w.Done()
	}
	w := h.Poll("q")
	if claim, _ := w.Look(); claim {
		t.Fatal("a third poll after a wake of 2 claimed")
	}
	w.Done()
}

// TestAWakeDuringAClaimIsNotLost: a claim that found nothing while a wake
// came claims again; one sent after the wake was heard sleeps.
func TestAWakeDuringAClaimIsNotLost(t *testing.T) {
	t.Parallel()
	h := liveHub()
	w := h.Poll("q")
	w.Look()
	h.Wake("q", 1) // the job may have come after the claim looked
	w.Found(false, -1)
	if claim, _ := w.Look(); !claim {
		t.Fatal("a poll whose claim raced a wake did not claim again")
	}
	w.Found(false, -1) // sent after the wake was heard: the job went elsewhere
	if claim, _ := w.Look(); claim {
		t.Fatal("a poll claimed a third time with no new wake")
	}
	w.Done()
}

// TestAWakeSendsAtMostNPerHub: a wake of n sends n sleepers, however many
// sleep.
func TestAWakeSendsAtMostNPerHub(t *testing.T) {
	t.Parallel()
	h := liveHub()
	polls := []*Waiter{emptyPoll(t, h, "q", -1)}
	for range 9 {
		w := h.Poll("q")
		w.Look()
		polls = append(polls, w)
	}
	h.Wake("q", 3)
	woken := 0
	for _, w := range polls {
		if received(w) {
			woken++
		}
	}
	if woken != 3 || h.Sleeping("q") != 7 {
		t.Fatalf("a wake of 3 woke %d of 10, %d still asleep; want 3 and 7", woken, h.Sleeping("q"))
	}
	for _, w := range polls {
		w.Done()
	}
}

// TestKnowledgeRunsOut: what a claim found is trusted until the time it
// named (a job comes due), and then one sleeper is sent to claim.
func TestKnowledgeRunsOut(t *testing.T) {
	t.Parallel()
	h := liveHub()
	a := emptyPoll(t, h, "q", 50*time.Millisecond)
	b := h.Poll("q")
	if claim, _ := b.Look(); claim {
		t.Fatal("a poll claimed while the hub knew the queue empty")
	}
	select {
	case <-a.C:
	case <-time.After(TrustFor):
		t.Fatal("no sleeper was sent to claim when the job came due")
	}
	if received(b) {
		t.Fatal("more than one sleeper was sent when the knowledge ran out")
	}
	if claim, _ := a.Look(); !claim {
		t.Fatal("the sleeper sent did not claim")
	}
	a.Found(true, -1) // took the due job: there may be more
	if !received(b) {
		t.Fatal("a claim that took all it asked for, with nothing known, sent no other sleeper")
	}
	a.Done()
	b.Done()
}

// TestResubscribingWakesAll: wakes may have been lost while the
// subscription was down, so every sleeper claims, and a claim sent before
// teaches nothing.
func TestResubscribingWakesAll(t *testing.T) {
	t.Parallel()
	h := liveHub()
	a := emptyPoll(t, h, "q", -1)
	b := h.Poll("q")
	b.Look()
	inFlight := h.Poll("q")
	inFlight.Look()
	h.subscribed()
	if !received(a) || !received(b) {
		t.Fatal("a resubscription did not wake every sleeper")
	}
	inFlight.Found(false, -1)
	if claim, _ := inFlight.Look(); !claim {
		t.Fatal("a claim sent before the resubscription was trusted")
	}
	for _, w := range []*Waiter{a, b, inFlight} {
		w.Done()
	}
}

// TestWithoutASubscriptionAPollLooksAgainByItself: a Hub that is not
// running hears no wake, so a poll trusts its own claim only until a
// recheck at most TrustFor away.
func TestWithoutASubscriptionAPollLooksAgainByItself(t *testing.T) {
	t.Parallel()
	h := NewHub(nil, "p", nil)
	w := h.Poll("q")
	if claim, _ := w.Look(); !claim {
		t.Fatal("did not claim")
	}
	w.Found(false, -1)
	claim, recheck := w.Look()
	if claim || recheck.IsZero() || time.Until(recheck) > TrustFor {
		t.Fatalf("claim %v, recheck in %v; want asleep, looking again within %v", claim, time.Until(recheck), TrustFor)
	}
	other := h.Poll("q")
	if claim, _ := other.Look(); !claim {
		t.Fatal("another poll trusted a claim of a hub that hears no wake")
	}
	w.Done()
	other.Done()
}

// TestDoneGivesBackAnUnusedWake: a poll sent to claim that ends before
// telling what it found passes its wake on.
func TestDoneGivesBackAnUnusedWake(t *testing.T) {
	t.Parallel()
	h := liveHub()
	a := emptyPoll(t, h, "q", -1)
	b := h.Poll("q")
	b.Look()
	h.Wake("q", 1)
	if !received(a) {
		t.Fatal("not woken")
	}
	a.Look() // claims, and fails
	a.Done()
	a.Done()
	if !received(b) {
		t.Fatal("the wake of a poll whose claim failed was lost")
	}
	if claim, _ := b.Look(); !claim {
		t.Fatal("the poll given the wake did not claim")
	}
	b.Done() // without telling: passed on again, to the polls to come
	c := h.Poll("q")
	if claim, _ := c.Look(); !claim {
		t.Fatal("a wake given back with no sleeper was lost")
	}
	c.Done()
}
