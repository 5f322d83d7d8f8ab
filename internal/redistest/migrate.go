package redistest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Migration batches: how many keys each MIGRATE moves (redis-cli's default
// --cluster-pipeline) and how long the source may take to hand them over
// (redis-cli's default --cluster-timeout is 60 s; a loopback test needs
// far less, and a stuck MIGRATE should fail the test rather than hang it).
const (
	migrateBatch   = 10
	migrateTimeout = 10 * time.Second
)

// Window is one move of a slot between masters: from just before its
// first CLUSTER SETSLOT (IMPORTING, on the target) to just after its last
// (NODE, on the last master told), the time during which a client of the
// slot can meet ASK redirects, TRYAGAIN refusals and a slot whose keys
// are split between two nodes.
type Window struct {
	Slot     int
	From, To string    // the source's and the target's host:port
	Begin    time.Time // just before the first SETSLOT was sent
	End      time.Time // just after the last SETSLOT NODE was answered; zero if the move failed
	Keys     int       // keys named in MIGRATE calls (a key deleted meanwhile is counted but not moved)
	Batches  int       // MIGRATE calls
}

// Duration is how long the slot was moving (zero if the move failed).
func (w Window) Duration() time.Duration {
	if w.End.IsZero() {
		return 0
	}
	return w.End.Sub(w.Begin)
}

// Contains reports whether t falls within the window, or at most slack
// after its end (for answers that were already on their way). A window
// that failed (no End) contains every time from its Begin on.
func (w Window) Contains(t time.Time, slack time.Duration) bool {
	if t.Before(w.Begin) {
		return false
	}
	return w.End.IsZero() || !t.After(w.End.Add(slack))
}

func (w Window) String() string {
	return fmt.Sprintf("slot %d %s -> %s: %d keys in %d MIGRATEs, %v", w.Slot, w.From, w.To, w.Keys, w.Batches,
		w.Duration().Round(time.Millisecond))
}

// MigrateSlot moves slot from the master at fromAddr to the master at
// toAddr while clients go on using it, the way redis-cli --cluster
// reshard does (clusterManagerMoveSlot), one step at a time:
//
//  1. CLUSTER SETSLOT slot IMPORTING <source id> on the target, then
//     CLUSTER SETSLOT slot MIGRATING <target id> on the source;
//  2. until the source has no key left in the slot: CLUSTER GETKEYSINSLOT
//     slot 10 on the source, then MIGRATE <target host> <target port> ""
//     0 <timeout> KEYS k1 ... k10 there, pausing step between batches so
//     that the move spans many client requests;
//  3. CLUSTER SETSLOT slot NODE <target id> on the target, on the source,
//     then on every other master;
//
// and then waits until every node agrees that the target owns the slot.
// It returns the move's Window (when it began and ended, how many keys it
// moved).
//
// MIGRATE is sent without REPLACE, as redis-cli sends it by default: a
// BUSYKEY (the target already has a key the source still holds, so that
// someone wrote it on the target while the source's copy was live) or an
// IOERR is returned as the error, wrapped with the keys of the batch, and
// the slot is left as it was then (importing on the target, migrating on
// the source; the Window's End is zero), as redis-cli leaves it for
// redis-cli --cluster fix. So is any other error, and ctx's end. The
// caller must not move the slot's keys in any other way meanwhile.
func (c *Cluster) MigrateSlot(ctx context.Context, slot int, fromAddr, toAddr string, step time.Duration) (Window, error) {
	w := Window{Slot: slot, From: fromAddr, To: toAddr}
	if fromAddr == toAddr {
		return w, fmt.Errorf("redistest: migrate slot %d from %s to itself", slot, fromAddr)
	}
	nodes, err := clusterNodes(ctx, fromAddr)
	if err != nil {
		return w, fmt.Errorf("redistest: CLUSTER NODES on %s: %w", fromAddr, err)
	}
	var fromID, toID string
	var others []string // the other masters' addresses
	for _, n := range nodes {
		switch {
		case n.addr == fromAddr:
			if !n.master() || !n.owns(slot) {
				return w, fmt.Errorf("redistest: %s does not own slot %d: %+v", fromAddr, slot, n)
			}
			fromID = n.id
		case n.addr == toAddr:
			if !n.master() {
				return w, fmt.Errorf("redistest: %s is not a master: %+v", toAddr, n)
			}
			toID = n.id
		case n.master():
			others = append(others, n.addr)
		}
	}
	if fromID == "" || toID == "" {
		return w, fmt.Errorf("redistest: %s does not know both %s and %s: %+v", fromAddr, fromAddr, toAddr, nodes)
	}
	host, port, err := net.SplitHostPort(toAddr)
	if err != nil {
		return w, err
	}
	// No retries: a command resent after a lost answer could hide what
	// happened to the slot.
	from := redis.NewClient(&redis.Options{Addr: fromAddr, MaxRetries: -1, ReadTimeout: migrateTimeout + 5*time.Second})
	defer from.Close()
	to := redis.NewClient(&redis.Options{Addr: toAddr, MaxRetries: -1})
	defer to.Close()
	setSlot := func(rdb *redis.Client, args ...any) error {
		argv := append([]any{"CLUSTER", "SETSLOT", slot}, args...)
		if err := rdb.Do(ctx, argv...).Err(); err != nil {
			return fmt.Errorf("redistest: %v on %s: %w", argv, rdb.Options().Addr, err)
		}
		return nil
	}

	w.Begin = time.Now()
	if err := setSlot(to, "IMPORTING", fromID); err != nil {
		return w, err
	}
	if err := setSlot(from, "MIGRATING", toID); err != nil {
		return w, err
	}
	for {
		keys, err := from.ClusterGetKeysInSlot(ctx, slot, migrateBatch).Result()
		if err != nil {
			return w, fmt.Errorf("redistest: CLUSTER GETKEYSINSLOT %d on %s: %w", slot, fromAddr, err)
		}
		if len(keys) == 0 {
			break
		}
		argv := []any{"MIGRATE", host, port, "", 0, migrateTimeout.Milliseconds(), "KEYS"}
		for _, k := range keys {
			argv = append(argv, k)
		}
		if err := from.Do(ctx, argv...).Err(); err != nil {
			return w, fmt.Errorf("redistest: MIGRATE of slot %d from %s to %s, keys %q (after %d keys moved): %w",
				slot, fromAddr, toAddr, keys, w.Keys, err)
		}
		w.Keys += len(keys)
		w.Batches++
		if err := pause(ctx, step); err != nil {
			return w, fmt.Errorf("redistest: migrating slot %d: %w", slot, err)
		}
	}
	// The target first, so that it owns the slot before the source stops
	// redirecting to it; the source refuses if a key came back to it.
	if err := setSlot(to, "NODE", toID); err != nil {
		return w, err
	}
	if err := setSlot(from, "NODE", toID); err != nil {
		return w, err
	}
	for _, addr := range others {
		rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
		err := setSlot(rdb, "NODE", toID)
		rdb.Close()
		if err != nil {
			return w, err
		}
	}
	w.End = time.Now()
	for {
		owner, err := c.agreedOwner(ctx, slot)
		if err == nil && owner == toAddr {
			return w, nil
		}
		if err == nil {
			err = errors.New("the nodes agree on " + owner)
		}
		if perr := pause(ctx, 20*time.Millisecond); perr != nil {
			return w, fmt.Errorf("redistest: slot %d moved to %s, but the nodes do not agree yet: %v (%w)",
				slot, toAddr, err, perr)
		}
	}
}

// pause sleeps d, or until ctx ends (its error).
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// SlotOf is the slot of key, by CLUSTER KEYSLOT on the cluster's first
// node.
func (c *Cluster) SlotOf(ctx context.Context, key string) (int, error) {
	rdb := redis.NewClient(&redis.Options{Addr: c.Nodes[0].Addr})
	defer rdb.Close()
	slot, err := rdb.ClusterKeySlot(ctx, key).Result()
	if err != nil {
		return 0, fmt.Errorf("redistest: CLUSTER KEYSLOT %s: %w", strconv.Quote(key), err)
	}
	return int(slot), nil
}
