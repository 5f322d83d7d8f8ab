package metrics

import (
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// DefaultMaxQueues bounds the queues the per-queue series name when no
// MaxQueues is given (EMQ_METRICS_MAX_QUEUES).
const DefaultMaxQueues = 1000

// evictSample is how many queues an eviction looks at to find the least
// recently updated, as Redis's LRU does: the oldest of a sample, so that a
// queue let in costs the same at any bound.
const evictSample = 32

// Option configures Metrics.
type Option func(*Metrics)

// MaxQueues bounds the queues whose series Metrics keeps: each per-queue
// series family names at most n queues (n <= 0: DefaultMaxQueues).
func MaxQueues(n int) Option {
	return func(m *Metrics) {
		if n > 0 {
			m.maxQueues = n
		}
	}
}

// family is one vector of per-queue series ("queue" its first label) and
// the values its other label has taken, so that a queue's series can be
// deleted one by one, without a pass over every series.
type family struct {
	vec    *prometheus.MetricVec
	values sync.Map // the other label's values seen; "" for a vector with only "queue"
}

// note records value of the family's other label, before a series with it
// is made.
func (f *family) note(value string) {
	if _, ok := f.values.Load(value); !ok {
		f.values.Store(value, struct{}{})
	}
}

// deleteQueue deletes every series of queue in the family.
func (f *family) deleteQueue(queue string) {
	f.values.Range(func(v, _ any) bool {
		if v == "" {
			f.vec.DeleteLabelValues(queue)
		} else {
			f.vec.DeleteLabelValues(queue, v.(string))
		}
		return true
	})
}

// queueSet is the queues that have series, at most max of them, each with
// when it was last updated: the epoch then, which moves on each time a
// queue is let in, so that an update of a queue already updated in this
// epoch writes nothing shared. An update holds the read lock while it
// writes its series, so that an eviction, which holds the write lock, never
// races a series into being after it deleted it.
type queueSet struct {
	mu       sync.RWMutex
	max      int
	epoch    atomic.Uint64
	last     map[string]*atomic.Uint64
	families []*family
}

func newQueueSet(max int, families ...*family) *queueSet {
	return &queueSet{max: max, last: make(map[string]*atomic.Uint64, max), families: families}
}

// enter marks queue updated and returns with a lock held, so that its
// series can be written: the read lock when queue has series already, or
// the write lock when enter let it in (evicting the least recently updated
// queue of a sample when the set was full). Pass what it returns to leave
// once the series are written:
//
//	defer s.leave(s.enter(queue))
func (s *queueSet) enter(queue string) (admitted bool) {
	s.mu.RLock()
	if at, ok := s.last[queue]; ok {
		if e := s.epoch.Load(); at.Load() != e {
			at.Store(e)
		}
		return false
	}
	s.mu.RUnlock()
	s.mu.Lock()
	if at, ok := s.last[queue]; ok { // let in meanwhile
		at.Store(s.epoch.Load())
		return true
	}
	if len(s.last) >= s.max {
		s.forget(s.oldest())
	}
	at := new(atomic.Uint64)
	at.Store(s.epoch.Add(1))
	s.last[queue] = at
	return true
}

// leave releases the lock enter took.
func (s *queueSet) leave(admitted bool) {
	if admitted {
		s.mu.Unlock()
	} else {
		s.mu.RUnlock()
	}
}

// oldest is the least recently updated queue of a sample of the set (Go's
// map order starts at random), in epochs: of two queues updated since the
// same queue was let in, either.
func (s *queueSet) oldest() string {
	var (
		name  string
		least uint64
		n     int
	)
	for q, at := range s.last {
		if t := at.Load(); n == 0 || t < least {
			name, least = q, t
		}
		if n++; n == evictSample {
			break
		}
	}
	return name
}

// forget deletes queue's series and takes it out; the write lock is held.
func (s *queueSet) forget(queue string) {
	for _, f := range s.families {
		f.deleteQueue(queue)
	}
	delete(s.last, queue)
}

// drop forgets queue, if it has series.
func (s *queueSet) drop(queue string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.forget(queue)
}
