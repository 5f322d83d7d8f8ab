package lua

import (
	"context"
	"testing"

	"github.com/echo-mq/echo_mq/internal/job"
	"github.com/echo-mq/echo_mq/internal/keyspace"
	"github.com/echo-mq/echo_mq/internal/redistest"
)

// TestFirstToken: a call's first token is in [1, 2^53 - tokenRoom], and
// each of its 53 bits is drawn: over 200 draws every bit is seen 0 and 1.
func TestFirstToken(t *testing.T) {
	t.Parallel()
	const mask = 1<<53 - 1
	var ones, zeros int64
	for range 200 {
		first := firstToken()
		if first < 1 || first > 1<<53-tokenRoom {
			t.Fatalf("first token %d, want one in [1, 2^53 - %d]", first, tokenRoom)
		}
		ones, zeros = ones|first, zeros|^first
	}
	if ones&mask != mask || zeros&mask != mask {
		t.Errorf("bits never 1: %053b; never 0: %053b", ^ones&mask, ^zeros&mask)
	}
}

// TestClaimArgsDrawEachCall: every call that may lease draws its own first
// token; one that claims nothing sends "".
func TestClaimArgsDrawEachCall(t *testing.T) {
	t.Parallel()
	q := keyspace.NewQueue("emq", "tokens")
	a := ClaimArgs{Count: 1, LeaseMS: 1000}
	first, second := a.Call(q).Args()[5], a.Call(q).Args()[5]
	if _, ok := first.(int64); !ok || first == second {
		t.Errorf("two claims sent first tokens %v and %v, want two drawn apart", first, second)
	}
	none := []Call{ClaimArgs{}.Call(q), CompleteArgs{ID: "a"}.Call(q), CompleteBatchArgs{Jobs: []Completion{{ID: "a"}}}.Call(q)}
	for _, c := range none {
		if args := c.Args(); args[len(args)-2] != "" {
			t.Errorf("%s claiming nothing sent first token %v, want \"\"", c.Script().Name(), args[len(args)-2])
		}
	}
	if args := (CompleteArgs{ID: "a", Next: a}).Call(q).Args(); args[len(args)-2] == "" {
		t.Error("a complete that claims next sent no first token")
	}
}

// TestLeaseSkipsTokensTheRowKnows: a claim whose drawn first token is one
// the job's row holds, or remembers a report under, gives the job the next
// number up that it knows nothing of (lifecycle.lua's unheld); another job
// gets the drawn token itself.
func TestLeaseSkipsTokensTheRowKnows(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	run := NewRunner(redistest.Client(t))
	q := keyspace.NewQueue("tokens", redistest.Queue(t))
	const drawn = int64(4503599627370496) // the first token every claim below "draws"
	claim := func(id string) int64 {
		t.Helper()
		c := ClaimArgs{Count: 1, LeaseMS: 60000}.Call(q)
		c.args[5] = drawn
		got, err := run.Run(ctx, c).Slice()
		if err != nil {
			t.Fatal(err)
		}
		held := got[1].([]any)
		if len(held) != 1 || held[0].([]any)[0] != id {
			t.Fatalf("claim got %v, want %s", held, id)
		}
		j, err := job.Parse("q", held[0])
		if err != nil || j.Token == 0 {
			t.Fatalf("claimed %s without a token: %v (%v)", id, held[0], err)
		}
		return j.Token
	}
	failNow := func(token int64) { // back to pending at once; the row remembers the fail
		t.Helper()
		if err := run.Run(ctx, FailArgs{ID: "a", Token: token, Error: "x", RetryInMS: 0}.Call(q)).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := run.Run(ctx, EnqueueArgs{Jobs: []NewJob{{ID: "a", Payload: "1", MaxAttempts: "5"}}}.Call(q)).Err(); err != nil {
		t.Fatal(err)
	}
	if got := claim("a"); got != drawn {
		t.Fatalf("first claim of a: token %d, want the drawn %d", got, drawn)
	}
	failNow(drawn)
	if got := claim("a"); got != drawn+1 { // the row holds drawn, and remembers a fail under it
		t.Fatalf("second claim of a: token %d, want %d", got, drawn+1)
	}
	failNow(drawn + 1)
	if got := claim("a"); got != drawn+2 { // holds drawn + 1, remembers drawn too
		t.Fatalf("third claim of a: token %d, want %d", got, drawn+2)
	}
	if err := run.Run(ctx, EnqueueArgs{Jobs: []NewJob{{ID: "b", Payload: "2"}}}.Call(q)).Err(); err != nil {
		t.Fatal(err)
	}
	if got := claim("b"); got != drawn {
		t.Fatalf("claim of b: token %d, want the drawn %d (a's tokens are a's)", got, drawn)
	}
}

// TestRateLogKeepsATagDrawnTwice: a rate limit's log entries are tagged by
// the claim's random first token (lifecycle.lua's flow_claim), which two
// claims of one ms may draw alike: each still gets an entry of its own, so
// that once they leave the window the log gives back every start it
// counted (flow.lua's rate_add, rate_room).
func TestRateLogKeepsATagDrawnTwice(t *testing.T) {
	t.Parallel()
	s, err := newScript("ratetags", `-- KEYS[1] meta
for _, n in ipairs({ 2, 3, 2 }) do
  rate_add(QUEUE_SCOPE, n, 1000, '7')
end
local logged = redis.call('ZCARD', BASE .. 'starts')
local room = rate_room(QUEUE_SCOPE, 10, 1000, 5000, 1)
return { logged, room }
`)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	run := NewRunner(redistest.Client(t))
	run.lib = newLibrary([]*Script{s}, nil)
	run.Load(ctx)
	got, err := run.Run(ctx, s.call(keyspace.NewQueue("ratetags", redistest.Queue(t)), "", "", nil)).Int64Slice()
	if err != nil {
		t.Fatal(err)
	}
	if got[0] != 3 || got[1] != 10 {
		t.Errorf("three claims under one tag: %d entries, then room %d; want 3 entries, and 10 once they left the window", got[0], got[1])
	}
}
