package push

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/keyspace"
	"github.com/echo-mq/echo_mq/lua"
)

// ErrorsKept is how many delivery errors a queue keeps, newest first.
const ErrorsKept = 20

// Actor is who asks for a change of a target, for the event stream.
type Actor = lua.Actor

// Store keeps the queues' targets and their last delivery errors in
// Redis (lua/push.lua), and the set of queues that have a target, which
// every replica's Deliverer watches.
type Store struct {
	rdb     redis.UniversalClient
	prefix  string
	queues  *keyspace.Registry
	scripts *lua.Runner
}

// StoreOption configures a Store.
type StoreOption func(*Store)

// Registry makes the Store admit queues through reg (its limit, shared
// with the other services); the default is a registry of its own with no
// limit.
func Registry(reg *keyspace.Registry) StoreOption {
	return func(s *Store) { s.queues = reg }
}

// NewStore returns the Store of the queues under prefix.
func NewStore(rdb redis.UniversalClient, prefix string, opts ...StoreOption) *Store {
	s := &Store{rdb: rdb, prefix: prefix, queues: keyspace.NewRegistry(rdb, prefix), scripts: lua.NewRunner(rdb)}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Put sets queue's target (its defaults filled in, checked by Check) and
// answers it as stored, and whether the queue had none before. A queue
// that is not known yet must have a place (keyspace.ErrQuota).
func (s *Store) Put(ctx context.Context, queue string, t Target, by Actor) (Target, bool, error) {
	headers, err := encodeHeaders(t.Headers)
	if err != nil {
		return Target{}, false, err
	}
	added, err := s.queues.Admit(ctx, queue)
	if err != nil {
		return Target{}, false, err
	}
	reply, err := s.scripts.Reply(ctx, lua.PushPutArgs{URL: t.URL, TimeoutMS: t.Timeout.Milliseconds(),
		Concurrency: t.Concurrency, LeaseMS: t.Lease.Milliseconds(), Secret: t.Secret, Headers: headers,
		By: by}.Call(s.queue(queue)))
	if err != nil {
		if added { // a refused put leaves nothing behind
			_ = s.queues.Withdraw(context.WithoutCancel(ctx), queue)
		}
		return Target{}, false, err
	}
	existed, updated, err := putReply(reply)
	if err != nil {
		return Target{}, false, err
	}
	// After the target is there, so that a deliverer that reads the set
	// finds it; a lost SADD is healed by the next Put only, so it is an
	// error.
	if err := s.rdb.SAdd(ctx, keyspace.PushKey(s.prefix), queue).Err(); err != nil {
		return Target{}, false, err
	}
	t.UpdatedAt = updated
	return t, !existed, nil
}

// Delete takes queue's target away, and reports whether it had one.
// Deliveries under way finish; no new one starts once each replica has
// seen it gone.
func (s *Store) Delete(ctx context.Context, queue string, by Actor) (bool, error) {
	reply, err := s.scripts.Reply(ctx, lua.PushPutArgs{By: by}.Call(s.queue(queue)))
	if err != nil {
		return false, err
	}
	existed, _, err := putReply(reply)
	return existed, err
}

// Get reads queue's target, its secret and headers included; ok false
// when it has none.
func (s *Store) Get(ctx context.Context, queue string) (t Target, ok bool, err error) {
	f, err := s.rdb.HGetAll(ctx, s.queue(queue).Push()).Result()
	if err != nil || f["url"] == "" {
		return Target{}, false, err
	}
	ms := func(name string) time.Duration {
		n, _ := strconv.ParseInt(f[name], 10, 64)
		return time.Duration(n) * time.Millisecond
	}
	concurrency, _ := strconv.Atoi(f["concurrency"])
	updated, _ := strconv.ParseInt(f["updated_at"], 10, 64)
	t = Target{URL: f["url"], Timeout: ms("timeout_ms"), Concurrency: concurrency, Lease: ms("lease_ms"),
		Secret: f["secret"], UpdatedAt: time.UnixMilli(updated).UTC()}
	if text := f["headers"]; text != "" {
		if err := json.Unmarshal([]byte(text), &t.Headers); err != nil {
			// Not the text itself: it holds what a log should not.
			return Target{}, false, fmt.Errorf("push target of %s: its headers are not a JSON object", queue)
		}
	}
	return t, true, nil
}

// encodeHeaders is a target's headers as push_put.lua keeps them: a JSON
// object, "" for none.
func encodeHeaders(headers map[string]string) (string, error) {
	if len(headers) == 0 {
		return "", nil
	}
	text, err := json.Marshal(headers)
	return string(text), err
}

// Queues lists the queues that have (or had) a target.
func (s *Store) Queues(ctx context.Context) ([]string, error) {
	return s.rdb.SMembers(ctx, keyspace.PushKey(s.prefix)).Result()
}

// forget takes queue out of the watched set once it has no target; a Put
// meanwhile puts it back (the target is checked again after the SREM).
func (s *Store) forget(ctx context.Context, queue string) error {
	if err := s.rdb.SRem(ctx, keyspace.PushKey(s.prefix), queue).Err(); err != nil {
		return err
	}
	if _, ok, err := s.Get(ctx, queue); ok || err != nil {
		return s.rdb.SAdd(ctx, keyspace.PushKey(s.prefix), queue).Err()
	}
	return nil
}

// DeliveryError is one failed delivery, as a queue keeps it.
type DeliveryError struct {
	At      time.Time `json:"at"`
	JobID   string    `json:"job_id"`
	Attempt int       `json:"attempt"`
	Status  int       `json:"status,omitempty"` // the HTTP status; 0: none came
	Error   string    `json:"error"`
}

// Errors reads queue's last delivery errors, newest first.
func (s *Store) Errors(ctx context.Context, queue string) ([]DeliveryError, error) {
	texts, err := s.rdb.LRange(ctx, s.queue(queue).PushErrors(), 0, ErrorsKept-1).Result()
	if err != nil {
		return nil, err
	}
	out := make([]DeliveryError, 0, len(texts))
	for _, text := range texts {
		var e DeliveryError
		if json.Unmarshal([]byte(text), &e) == nil {
			out = append(out, e)
		}
	}
	return out, nil
}

// record keeps e as queue's newest delivery error, dropping the oldest
// past ErrorsKept. (A log of what happened, not a job's state: no script.)
func (s *Store) record(ctx context.Context, queue string, e DeliveryError) error {
	text, err := json.Marshal(e)
	if err != nil {
		return err
	}
	key := s.queue(queue).PushErrors()
	_, err = s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.LPush(ctx, key, text)
		p.LTrim(ctx, key, 0, ErrorsKept-1)
		return nil
	})
	return err
}

func (s *Store) queue(name string) keyspace.Queue { return keyspace.NewQueue(s.prefix, name) }

// putReply reads push_put.lua's {existed, updated_at}.
func putReply(reply any) (existed bool, updated time.Time, err error) {
	f, ok := reply.([]any)
	if !ok || len(f) != 2 {
		return false, time.Time{}, fmt.Errorf("push_put reply: unexpected %T", reply)
	}
	n, _ := f[0].(int64)
	ms, _ := f[1].(int64)
	return n == 1, time.UnixMilli(ms).UTC(), nil
}
