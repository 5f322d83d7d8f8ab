package wake

import (
	"testing"
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
	if len(h.waiters) != 0 {
		t.Fatalf("%d queues still have waiters after Done, want 0", len(h.waiters))
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
