package wake

import (
	"container/list"
	"time"
)

// queue is what a Hub keeps of one queue: its sleeping waiters, and what
// the claims told of it. Guarded by the Hub's mu.
//
// While known, unsent bounds the claimable jobs no claimer has been sent
// for: a claim found the queue empty, and since then every wake either
// sent a sleeper, or was counted here for the next waiter to take.
type queue struct {
	name     string
	sleepers list.List // *Waiter, oldest first
	waiters  int       // Waiters made and not Done, asleep or not
	seq      uint64    // jobs the queue's wakes announced so far
	known    bool      // a claim found nothing (see until)
	basis    uint64    // seq when that claim was sent
	until    time.Time // known holds until then at most
	unsent   int       // wakes that found no sleeper, not yet taken
	timer    *time.Timer
}

// trusted reports whether the Hub may take q's knowledge: subscribed,
// known, and not yet run out.
func (h *Hub) trusted(q *queue, now time.Time) bool {
	return h.live && q.known && now.Before(q.until)
}

// send wakes up to n sleepers of q, oldest first (n < 0: all of them), and
// returns how many.
func (h *Hub) send(q *queue, n int) int {
	sent := 0
	for q.sleepers.Len() > 0 && sent != n {
		w := q.sleepers.Remove(q.sleepers.Front()).(*Waiter)
		w.elem = nil
		w.woken = true
		w.c <- struct{}{}
		sent++
	}
	return sent
}

// giveBack passes on a wake a waiter was sent for and did not claim for:
// to the next sleeper, or to the waiters to come.
func (h *Hub) giveBack(q *queue) {
	if h.send(q, 1) == 0 {
		q.unsent++
	}
}

// refresh runs when q's knowledge runs out: one sleeper claims (and tells
// what it found, which the Hub trusts anew), and again each TrustFor while
// none does. A queue nobody waits on is forgotten.
func (h *Hub) refresh(q *queue) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.queues[q.name] != q || h.trusted(q, time.Now()) {
		return // forgotten, or trusted anew since the timer was set
	}
	if h.send(q, 1) > 0 {
		q.timer.Reset(TrustFor)
		return
	}
	h.forget(q)
}

// forget drops q when no waiter uses it and its knowledge has run out.
func (h *Hub) forget(q *queue) {
	if q.waiters > 0 || h.trusted(q, time.Now()) {
		return
	}
	if q.timer != nil {
		q.timer.Stop()
	}
	delete(h.queues, q.name)
}

// Waiter is one claimer of one queue: awake (claiming) or asleep until
// woken. The Hub sends a sleeping waiter to claim for a wake, or to look
// again when what it knew of the queue ran out.
type Waiter struct {
	// C receives a value when the waiter is woken.
	C     <-chan struct{}
	c     chan struct{}
	hub   *Hub
	q     *queue
	elem  *list.Element // in q.sleepers while asleep
	woken bool          // sent to claim, and has not looked since
	owes  bool          // claims for a wake, and has not told what it found
	done  bool
	seq   uint64 // q.seq when it last looked: its claim's news start there
	gen   uint64 // the Hub's gen then
	// Without a subscription (the Hub not running yet), what the waiter's
	// own last claim found: nothing, at seq quietSeq, trusted until
	// quietTill.
	quiet     bool
	quietSeq  uint64
	quietTill time.Time
}

// waiter makes an awake waiter of queue name, counting from what the Hub
// heard so far. It needs h.mu.
func (h *Hub) waiter(name string) *Waiter {
	q := h.queues[name]
	if q == nil {
		q = &queue{name: name}
		h.queues[name] = q
	}
	q.waiters++
	c := make(chan struct{}, 1)
	return &Waiter{C: c, c: c, hub: h, q: q, seq: q.seq, gen: h.gen}
}

// Register makes a waiter for queue, asleep at once. Register before
// looking at the queue, so that a job made claimable in between still
// wakes it; call Done after.
func (h *Hub) Register(queue string) *Waiter {
	h.mu.Lock()
	defer h.mu.Unlock()
	w := h.waiter(queue)
	w.elem = w.q.sleepers.PushBack(w)
	return w
}

// Poll makes an awake waiter for a long poll of queue: call Look before
// each claim, Found after it, and Done at the end. A claim it makes before
// the first Look (one that will not wait) counts from Poll.
func (h *Hub) Poll(queue string) *Waiter {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.waiter(queue)
}

// Look says whether the waiter should claim now, and if not puts it to
// sleep until C fires. It claims when it was woken, when it takes over a
// wake that found no sleeper, when it has yet to tell what a claim for a
// wake found (the claim failed), and when the Hub does not know that the
// queue has nothing for it. Otherwise it sleeps: until woken or its
// deadline, or, when the Hub has no subscription to keep watch with
// (recheck not zero), until recheck at the latest.
func (w *Waiter) Look() (claim bool, recheck time.Time) {
	h, q := w.hub, w.q
	h.mu.Lock()
	defer h.mu.Unlock()
	if w.elem != nil {
		q.sleepers.Remove(w.elem)
		w.elem = nil
	}
	select {
	case <-w.c:
	default:
	}
	w.seq, w.gen = q.seq, h.gen
	now := time.Now()
	switch {
	case w.woken || w.owes:
		w.woken, w.owes = false, true
		return true, time.Time{}
	case h.trusted(q, now) && q.unsent > 0:
		q.unsent--
		w.owes = true
		return true, time.Time{}
	case h.trusted(q, now):
	case !h.live && w.quiet && w.quietSeq == q.seq && now.Before(w.quietTill):
		recheck = w.quietTill
	default:
		return true, time.Time{}
	}
	w.elem = q.sleepers.PushBack(w)
	return false, recheck
}

// Found tells the Hub what the waiter's claim, sent since it last looked,
// found: all it asked for (full), or less. A claim that found less says
// the queue had nothing more for it; holds is how long that stays true at
// most as time goes (until a delayed job comes due, or a flow control
// limit lets a claim on), -1 when nothing says.
func (w *Waiter) Found(full bool, holds time.Duration) {
	h, q := w.hub, w.q
	h.mu.Lock()
	defer h.mu.Unlock()
	w.owes, w.quiet = false, false
	now := time.Now()
	if full {
		if !h.trusted(q, now) {
			h.send(q, 1) // there may be more than anyone was told of
		}
		return
	}
	until := now.Add(TrustFor)
	if holds >= 0 {
		until = earlier(until, now.Add(max(holds, minHold)))
	}
	if !h.live {
		w.quiet, w.quietSeq, w.quietTill = true, w.seq, until
		return
	}
	if w.gen != h.gen {
		return // sent before the subscription came back: wakes may be lost
	}
	if h.trusted(q, now) && w.seq <= q.basis {
		q.until = earlier(q.until, until) // no newer than what is known
	} else {
		q.basis, q.until = w.seq, until
	}
	q.known = true
	// Claimable now are at most the jobs announced since this claim was
	// sent, and of those, the ones no claimer was sent for.
	q.unsent = min(q.unsent, int(q.seq-w.seq))
	if q.timer == nil {
		q.timer = time.AfterFunc(time.Until(q.until), func() { h.refresh(q) })
	} else {
		q.timer.Reset(time.Until(q.until))
	}
}

// Done ends the waiter. A wake it was sent for and did not claim for (its
// client went away, or its claim failed) is passed on, so that no wake is
// lost. Done twice does nothing more.
func (w *Waiter) Done() {
	h, q := w.hub, w.q
	h.mu.Lock()
	defer h.mu.Unlock()
	if w.done {
		return
	}
	w.done = true
	if w.elem != nil {
		q.sleepers.Remove(w.elem)
		w.elem = nil
	}
	untaken := false
	select {
	case <-w.c:
		untaken = true
	default:
	}
	if untaken || w.owes {
		w.owes, w.woken = false, false
		h.giveBack(q)
	}
	q.waiters--
	h.forget(q)
}

// earlier is the earlier of a and b.
func earlier(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
