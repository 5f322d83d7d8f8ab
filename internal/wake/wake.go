// Package wake lets long-polling claimers sleep without holding a Redis
// connection each, and without asking Redis when nothing can have changed.
//
// The scripts that make jobs claimable publish how many on the queue's wake
// channel. A Hub keeps one pattern subscription per process for every
// queue, and sends that many of the queue's sleeping waiters to claim,
// oldest first; a wake that finds no sleeper is kept for the next waiter
// that comes. Because the wake goes through Redis, an enqueue on any
// service replica wakes claimers waiting on every replica (each replica
// sends at most n of its own for a wake of n).
//
// A Hub also remembers, per queue, that a claim found nothing: until a wake
// comes, a new long poll of that queue sleeps at once, without a claim.
// Pub/sub is at most once (a message published while the subscription is
// down is lost), so that knowledge is trusted for TrustFor at most, and
// never past the time the claim said a delayed job comes due or a flow
// control limit lets a claim on. When it runs out, one sleeper claims
// (refresh): a lost wake delays a job by TrustFor at most.
package wake

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/keyspace"
)

// TrustFor is how long a Hub trusts that a queue a claim found empty stays
// so while no wake comes: the longest a lost wake message delays a job, and
// how often a queue with polls waiting is claimed while nothing happens (as
// BullMQ's workers look again after their drain delay, 5 s by default).
const TrustFor = 5 * time.Second

// minHold is the shortest a claim's answer is trusted for: a due job that
// a claim could not move yet (a very long delayed backlog) must not make
// the waiters claim in a loop.
const minHold = 5 * time.Millisecond

// Hub wakes the waiters of a queue when its jobs become claimable.
type Hub struct {
	rdb    redis.UniversalClient
	prefix string
	log    *slog.Logger
	mu     sync.Mutex
	queues map[string]*queue // the queues with waiters or knowledge
	live   bool              // subscribed: wakes arrive
	gen    uint64            // counts the subscriptions: wakes before one may be lost
}

// NewHub returns a Hub for the queues under prefix. Call Run to start it;
// until it has subscribed, waiters sleep until their own deadlines or the
// times their claims named, as no wake can be heard.
func NewHub(rdb redis.UniversalClient, prefix string, log *slog.Logger) *Hub {
	return &Hub{rdb: rdb, prefix: prefix, log: log, queues: make(map[string]*queue)}
}

// Wake sends up to n sleeping waiters of queue to claim, oldest first: n
// jobs became claimable (n < 0: wake them all, and forget what the Hub
// knew of the queue). What n leaves over is kept for the waiters to come.
func (h *Hub) Wake(queue string, n int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	q := h.queues[queue]
	if q == nil {
		return // nobody waits, and nothing is known
	}
	if n < 0 {
		q.known = false
		h.send(q, -1)
		return
	}
	q.seq += uint64(n)
	q.unsent += n - h.send(q, n)
}

// Sleeping is how many waiters of queue sleep now.
func (h *Hub) Sleeping(queue string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if q := h.queues[queue]; q != nil {
		return q.sleepers.Len()
	}
	return 0
}

// subscribed is told that the subscription is (again) in place: wakes
// published while it was not are lost, so every sleeper claims, and
// nothing the Hub knew is trusted, nor any claim's answer sent before.
func (h *Hub) subscribed() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.live = true
	h.gen++
	for _, q := range h.queues {
		q.known = false
		h.send(q, -1)
	}
}

// unsubscribed is told that no wake will come any more.
func (h *Hub) unsubscribed() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.live = false
	h.gen++
}

// Run subscribes to every queue's wake channel and wakes waiters until ctx
// ends. The subscription reconnects by itself when Redis comes back.
func (h *Hub) Run(ctx context.Context) {
	chanPrefix := keyspace.WakeChannelPrefix(h.prefix)
	ps := h.rdb.PSubscribe(ctx, chanPrefix+"*")
	defer ps.Close()
	defer h.unsubscribed()
	messages := ps.ChannelWithSubscriptions()
	for {
		select {
		case <-ctx.Done():
			return
		case msg := <-messages:
			switch m := msg.(type) {
			case *redis.Subscription:
				if m.Kind == "psubscribe" {
					h.subscribed()
				}
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
