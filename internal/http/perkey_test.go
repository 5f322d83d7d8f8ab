package http

import (
	"sync"
	"sync/atomic"
	"testing"
)

// held is how many places name holds, and how many names hold any.
func (p *perKey) count(name string) (held, names int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.held[name], len(p.held)
}

func TestPerKeyCountsEachKey(t *testing.T) {
	t.Parallel()
	var p perKey
	a1, ok1 := p.acquire("a", 2)
	_, ok2 := p.acquire("a", 2)
	if _, ok := p.acquire("a", 2); !ok1 || !ok2 || ok {
		t.Fatalf("three acquires of a under 2: %v %v %v, want true true false", ok1, ok2, ok)
	}
	b, ok := p.acquire("b", 2)
	if !ok {
		t.Fatal("b could not acquire while a held its limit")
	}
	a1()
	a1() // a second release gives back nothing more
	if held, _ := p.count("a"); held != 1 {
		t.Fatalf("a holds %d after one of its two was released twice, want 1", held)
	}
	a3, ok := p.acquire("a", 2)
	if _, again := p.acquire("a", 2); !ok || again {
		t.Fatalf("a after a release: %v then %v, want true then false", ok, again)
	}
	a3()
	b()
	if held, names := p.count("b"); held != 0 || names != 1 {
		t.Fatalf("b holds %d, %d names hold any; want 0 and 1 (a)", held, names)
	}
}

// TestPerKeyUnderContention: many goroutines of a few keys acquire and
// release at once; no key ever holds more than its limit, and the map is
// empty when all have let go.
func TestPerKeyUnderContention(t *testing.T) {
	t.Parallel()
	const limit, goroutines, rounds = 3, 32, 300
	var p perKey
	names := []string{"a", "b", "c"}
	var inUse [3]atomic.Int32
	var got atomic.Int64
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			k := g % len(names)
			for range rounds {
				release, ok := p.acquire(names[k], limit)
				if !ok {
					continue
				}
				got.Add(1)
				if n := inUse[k].Add(1); n > limit {
					t.Errorf("%s holds %d places, over its limit %d", names[k], n, limit)
				}
				inUse[k].Add(-1)
				release()
			}
		})
	}
	wg.Wait()
	if _, names := p.count("a"); names != 0 || got.Load() == 0 {
		t.Fatalf("%d names still hold places after every release (%d acquired), want 0", names, got.Load())
	}
}
