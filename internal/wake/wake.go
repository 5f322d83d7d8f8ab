// Package wake lets long-polling claimers sleep without holding a Redis
// connection each.
//
// The scripts that make jobs pending publish how many on the queue's wake
// channel. A Hub keeps one pattern subscription per process for every queue,
// and wakes that many of the queue's waiters, first come first served; a
// woken waiter claims, and registers again if another got there first.
// Because the wake goes through Redis, an enqueue on any service replica
// wakes claimers waiting on every replica.
package wake

import (
	"container/list"
	"context"
	"log/slog"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/keyspace"
)

// Hub wakes the waiters of a queue when its jobs become pending.
type Hub struct {
	rdb     redis.UniversalClient
	prefix  string
	log     *slog.Logger
	mu      sync.Mutex
	waiters map[string]*list.List // queue -> FIFO of *Waiter
}

// NewHub returns a Hub for the queues under prefix. Call Run to start it.
func NewHub(rdb redis.UniversalClient, prefix string, log *slog.Logger) *Hub {
	return &Hub{rdb: rdb, prefix: prefix, log: log, waiters: make(map[string]*list.List)}
}

// Waiter is one claimer waiting for jobs of one queue.
type Waiter struct {
	// C receives a value when the waiter is woken.
	C     <-chan struct{}
	c     chan struct{}
	hub   *Hub
	queue string
	elem  *list.Element
}

// Register makes a waiter for queue. Register before looking at the queue,
// so that a job made pending in between still wakes it; call Done after.
func (h *Hub) Register(queue string) *Waiter {
	c := make(chan struct{}, 1)
	w := &Waiter{C: c, c: c, hub: h, queue: queue}
	h.mu.Lock()
	defer h.mu.Unlock()
	l := h.waiters[queue]
	if l == nil {
		l = list.New()
		h.waiters[queue] = l
	}
	w.elem = l.PushBack(w)
	return w
}

// Done unregisters the waiter. A wake it received but did not take from C
// (its client went away, or it found jobs anyway) is passed on to the next
// waiter of the queue, so that no wake is lost.
func (w *Waiter) Done() {
	h := w.hub
	h.mu.Lock()
	if w.elem != nil {
		l := h.waiters[w.queue]
		l.Remove(w.elem)
		w.elem = nil
		if l.Len() == 0 {
			delete(h.waiters, w.queue)
		}
	}
	h.mu.Unlock()
	select {
	case <-w.c:
		h.Wake(w.queue, 1)
	default:
	}
}

// Wake wakes up to n waiters of queue, oldest first; n < 0 wakes them all.
func (h *Hub) Wake(queue string, n int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	l := h.waiters[queue]
	for l != nil && l.Len() > 0 && n != 0 {
		w := l.Remove(l.Front()).(*Waiter)
		w.elem = nil
		w.c <- struct{}{}
		n--
	}
	if l != nil && l.Len() == 0 {
		delete(h.waiters, queue)
	}
}

// wakeAll wakes every waiter of every queue: after a (re)subscription,
// when wake messages may have been missed.
func (h *Hub) wakeAll() {
	h.mu.Lock()
	queues := make([]string, 0, len(h.waiters))
	for q := range h.waiters {
		queues = append(queues, q)
	}
	h.mu.Unlock()
	for _, q := range queues {
		h.Wake(q, -1)
	}
}

// Run subscribes to every queue's wake channel and wakes waiters until ctx
// ends. The subscription reconnects by itself when Redis comes back.
func (h *Hub) Run(ctx context.Context) {
	chanPrefix := keyspace.WakeChannelPrefix(h.prefix)
	ps := h.rdb.PSubscribe(ctx, chanPrefix+"*")
	defer ps.Close()
	messages := ps.ChannelWithSubscriptions()
	for {
		select {
		case <-ctx.Done():
			return
		case msg := <-messages:
			switch m := msg.(type) {
			case *redis.Subscription:
				h.wakeAll()
			case *redis.Message:
				n, err := strconv.Atoi(m.Payload)
				if err != nil {
					h.log.Warn("Ignoring a bad wake message", "channel", m.Channel)
					continue
				}
				h.Wake(strings.TrimPrefix(m.Channel, chanPrefix), n)
			}
		}
	}
}
