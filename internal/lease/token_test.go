package lease_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/echo-mq/echo_mq/internal/job"
	"github.com/echo-mq/echo_mq/internal/keyspace"
	"github.com/echo-mq/echo_mq/internal/lease"
)

// TestTokensAreRandom: one job after another, each call that leases draws
// its token anew (docs/design.md#fencing), by a claim, a complete's
// claim-next and a batch complete's: no token is the one before it plus
// one, and over 64 of them each of the low 52 bits is seen 0 and 1. A
// per-queue counter fails both.
func TestTokensAreRandom(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	const n = 64
	for i := range n {
		f.enqueue(t, lease.NewJob{ID: fmt.Sprintf("j%02d", i)})
	}
	next := &lease.ClaimParams{Count: 1, Lease: time.Minute}
	held := f.claimOne(t, time.Minute)
	tokens := []int64{held.Token}
	for i := 1; i < n; i++ {
		var got []job.Job
		var err error
		switch i % 3 {
		case 0:
			_, _, err = f.leases.Complete(ctx, f.queue, held.ID, held.Token, nil, nil)
			got = []job.Job{f.claimOne(t, time.Minute)}
		case 1:
			_, got, err = f.leases.Complete(ctx, f.queue, held.ID, held.Token, nil, next)
		case 2:
			_, got, err = f.leases.CompleteBatch(ctx, f.queue, []lease.Completion{{ID: held.ID, Token: held.Token}}, next)
		}
		wantErr(t, err, nil)
		if len(got) != 1 {
			t.Fatalf("call %d leased %d jobs, want 1", i, len(got))
		}
		held = got[0]
		tokens = append(tokens, held.Token)
	}
	const low = 1<<52 - 1
	var ones, zeros int64
	var stepped []int // the calls whose token was the one before plus one
	for i, tok := range tokens {
		if tok <= 0 || tok >= 1<<53 {
			t.Errorf("token %d of call %d, want one in [1, 2^53)", tok, i)
		}
		if i > 0 && tok == tokens[i-1]+1 {
			stepped = append(stepped, i)
		}
		ones, zeros = ones|tok, zeros|^tok
	}
	if len(stepped) > 0 {
		t.Errorf("calls %v gave the token before plus one (the first six: %v)", stepped, tokens[:6])
	}
	if ones&low != low || zeros&low != low {
		t.Errorf("over %d tokens the low 52 bits were never 1: %052b; never 0: %052b", n, ^ones&low, ^zeros&low)
	}
}

// counterToken is a token as the queue's counter gave them before tokens
// were random: the server's µs at the queue's first claim, then one up per
// claim.
const counterToken = 1796400434665198

// counterLease makes j's lease one taken under the counter: its row holds
// token, and the queue's meta the counter at token, as that code left them.
func (f fixture) counterLease(t testing.TB, j job.Job, token int64) job.Job {
	t.Helper()
	q := keyspace.NewQueue(prefix, f.queue)
	if err := f.rdb.HSet(context.Background(), q.Job(j.ID), "token", token).Err(); err != nil {
		t.Fatal(err)
	}
	if err := f.rdb.HSet(context.Background(), q.Meta(), "token", token).Err(); err != nil {
		t.Fatal(err)
	}
	j.Token = token
	return j
}

// TestCounterLeaseStillHolds: a lease taken before tokens were random
// (docs/design.md#fencing) is held by its token as any other: its holder
// extends, snoozes and completes it, a repeat is answered as the first
// time, the counter's next token is stale; a new claim of the job gives a
// random token and writes no counter, and the old token is stale then.
func TestCounterLeaseStillHolds(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	f.enqueue(t, lease.NewJob{ID: "a"})
	f.enqueue(t, lease.NewJob{ID: "b"})
	a := f.counterLease(t, f.claimOne(t, time.Minute), counterToken)
	b := f.counterLease(t, f.claimOne(t, time.Minute), counterToken+1)

	_, err := f.leases.Extend(ctx, f.queue, a.ID, lease.ExtendParams{Token: a.Token, Lease: time.Minute})
	wantErr(t, err, nil)
	_, _, err = f.leases.Complete(ctx, f.queue, a.ID, b.Token, nil, nil)
	wantErr(t, err, job.ErrStale)
	for range 2 { // the second a repeat
		done, _, err := f.leases.Complete(ctx, f.queue, a.ID, a.Token, nil, nil)
		wantErr(t, err, nil)
		if done.State != job.StateCompleted {
			t.Fatalf("complete under the counter's token left a %s", done.State)
		}
	}

	_, err = f.leases.Snooze(ctx, f.queue, b.ID, b.Token, 0)
	wantErr(t, err, nil)
	again := f.claimOne(t, time.Minute)
	if again.ID != b.ID || again.Token == b.Token || again.Token == b.Token+1 {
		t.Fatalf("claim after the snooze got %s under %d, want b under a token the counter would not give", again.ID, again.Token)
	}
	_, err = f.leases.Fail(ctx, f.queue, b.ID, lease.FailParams{Token: b.Token, Error: "late"})
	wantErr(t, err, job.ErrStale)
	meta := keyspace.NewQueue(prefix, f.queue).Meta()
	if got := f.rdb.HGet(ctx, meta, "token").Val(); got != fmt.Sprint(b.Token) {
		t.Fatalf("meta token %q after a claim, want the old counter %d left as it was", got, b.Token)
	}
}
