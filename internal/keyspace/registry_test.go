package keyspace_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/keyspace"
	"github.com/echo-mq/echo_mq/internal/redistest"
)

// TestRegistry runs the registry's tests on one redis-server of their own
// (the package has no TestMain), each under a prefix of its own.
func TestRegistry(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: redistest.StartServer(t).Addr})
	t.Cleanup(func() { rdb.Close() })
	for name, test := range map[string]func(*testing.T, redis.UniversalClient, string){
		"AdmitAtTheLimit":       testAdmitAtTheLimit,
		"AdmitConcurrently":     testAdmitConcurrently,
		"AdmitUnlimited":        testAdmitUnlimited,
		"PagesByPrefix":         testPagesByPrefix,
		"MigratesTheOldSet":     testMigratesTheOldSet,
		"RememberAndForgetBoth": testRememberAndForgetBoth,
		"WithdrawGivesBack":     testWithdrawGivesBack,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			test(t, rdb, "emqreg-"+redistest.Queue(t))
		})
	}
}

// testAdmitAtTheLimit: a full registry refuses a new queue with a
// QuotaError naming the limit, and writes nothing; a known queue is
// admitted; a forgotten one frees its place.
func testAdmitAtTheLimit(t *testing.T, rdb redis.UniversalClient, prefix string) {
	ctx := context.Background()
	reg := keyspace.NewRegistry(rdb, prefix, keyspace.RegistryMax(3))
	for _, q := range []string{"a", "b", "c"} {
		if _, err := reg.Admit(ctx, q); err != nil {
			t.Fatalf("Admit(%s): %v", q, err)
		}
	}
	other := keyspace.NewRegistry(rdb, prefix, keyspace.RegistryMax(3)) // another replica: nothing seen
	_, err := other.Admit(ctx, "d")
	var qe *keyspace.QuotaError
	if !errors.Is(err, keyspace.ErrQuota) || !errors.As(err, &qe) || qe.Max != 3 || qe.Queue != "d" ||
		!strings.Contains(err.Error(), "3") {
		t.Fatalf("Admit(d) at the limit: got %v, want a QuotaError naming 3", err)
	}
	if rdb.ZScore(ctx, keyspace.QueueNamesKey(prefix), "d").Err() != redis.Nil ||
		rdb.SIsMember(ctx, keyspace.QueuesKey(prefix), "d").Val() {
		t.Error("a refused queue was written to the registry")
	}
	if _, err := other.Admit(ctx, "b"); err != nil {
		t.Errorf("Admit(b), a known queue, at the limit: %v", err)
	}
	if err := reg.Forget(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Admit(ctx, "d"); err != nil {
		t.Errorf("Admit(d) after a forget: %v", err)
	}
	if n := rdb.ZCard(ctx, keyspace.QueueNamesKey(prefix)).Val(); n != 3 {
		t.Errorf("the registry holds %d queues, want 3", n)
	}
	if _, err := other.Admit(ctx, "a"); !errors.Is(err, keyspace.ErrQuota) {
		t.Errorf("Admit(a) once full again: got %v, want ErrQuota", err)
	}
}

// testAdmitConcurrently: 32 replicas making a queue each at once, with a
// limit of 10, make exactly 10.
func testAdmitConcurrently(t *testing.T, rdb redis.UniversalClient, prefix string) {
	ctx := context.Background()
	const creators, limit = 32, 10
	var wg sync.WaitGroup
	errs := make([]error, creators)
	for i := range creators {
		wg.Add(1)
		go func() {
			defer wg.Done()
			reg := keyspace.NewRegistry(rdb, prefix, keyspace.RegistryMax(limit))
			_, errs[i] = reg.Admit(ctx, fmt.Sprintf("q%02d", i))
		}()
	}
	wg.Wait()
	admitted := 0
	for i, err := range errs {
		switch {
		case err == nil:
			admitted++
		case !errors.Is(err, keyspace.ErrQuota):
			t.Errorf("creator %d: %v", i, err)
		}
	}
	if n := rdb.ZCard(ctx, keyspace.QueueNamesKey(prefix)).Val(); admitted != limit || n != limit {
		t.Errorf("admitted %d, the registry holds %d; want %d", admitted, n, limit)
	}
}

// testAdmitUnlimited: RegistryMax(0) is no limit.
func testAdmitUnlimited(t *testing.T, rdb redis.UniversalClient, prefix string) {
	ctx := context.Background()
	reg := keyspace.NewRegistry(rdb, prefix, keyspace.RegistryMax(0))
	for i := range 50 {
		if _, err := reg.Admit(ctx, fmt.Sprintf("q%02d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if n := rdb.ZCard(ctx, keyspace.QueueNamesKey(prefix)).Val(); n != 50 {
		t.Errorf("the registry holds %d queues, want 50", n)
	}
}

// testPagesByPrefix: paging with a prefix gives exactly the names with
// it, in order, each once, across pages of every size.
func testPagesByPrefix(t *testing.T, rdb redis.UniversalClient, prefix string) {
	ctx := context.Background()
	var names []string
	for _, head := range []string{"a", "ab", "abc", "abd", "b", "b.", "b-", "B", "_", "z"} {
		for i := range 23 {
			names = append(names, fmt.Sprintf("%s%d", head, i))
		}
	}
	names = append(names, "a", "ab", "abc")
	members := make([]redis.Z, len(names))
	for i, n := range names {
		members[i] = redis.Z{Member: n}
	}
	if err := rdb.ZAdd(ctx, keyspace.QueueNamesKey(prefix), members...).Err(); err != nil {
		t.Fatal(err)
	}
	reg := keyspace.NewRegistry(rdb, prefix)
	for _, p := range []string{"", "a", "ab", "abc", "abc1", "b", "b.", "B", "_", "z2", "zz", "0"} {
		var want []string
		for _, n := range names {
			if strings.HasPrefix(n, p) {
				want = append(want, n)
			}
		}
		slices.Sort(want)
		for _, size := range []int{1, 7, 23, 1000} {
			var got []string
			after := ""
			for pages := 0; ; pages++ {
				page, more, err := reg.Page(ctx, p, after, size)
				if err != nil {
					t.Fatal(err)
				}
				if len(page) > size || (more && len(page) != size) {
					t.Fatalf("prefix %q, size %d: a page of %d, more %v", p, size, len(page), more)
				}
				got = append(got, page...)
				if !more {
					break
				}
				if pages > len(names) {
					t.Fatalf("prefix %q, size %d: the paging never ended", p, size)
				}
				after = page[len(page)-1]
			}
			if !slices.Equal(got, want) {
				t.Errorf("prefix %q, size %d: got %v, want %v", p, size, got, want)
			}
		}
	}
	// A cursor before the prefix starts at the prefix; one past it ends.
	if page, _, _ := reg.Page(ctx, "b", "a9", 2); !slices.Equal(page, []string{"b-0", "b-1"}) { // "-" < "." < "0"
		t.Errorf("cursor a9, prefix b: got %v", page)
	}
	if page, more, _ := reg.Page(ctx, "b", "c", 2); len(page) != 0 || more {
		t.Errorf("cursor c, prefix b: got %v, %v", page, more)
	}
}

// testMigratesTheOldSet: the names only the previous release's set has
// are copied into the registry, and All reads both.
func testMigratesTheOldSet(t *testing.T, rdb redis.UniversalClient, prefix string) {
	ctx := context.Background()
	reg := keyspace.NewRegistry(rdb, prefix, keyspace.RegistryMax(2))
	if _, err := reg.Admit(ctx, "new"); err != nil {
		t.Fatal(err)
	}
	old := make([]any, 2500) // more than one scan step
	for i := range old {
		old[i] = fmt.Sprintf("old%04d", i)
	}
	old = append(old, "bad name", "new")
	if err := rdb.SAdd(ctx, keyspace.QueuesKey(prefix), old...).Err(); err != nil {
		t.Fatal(err)
	}
	all, err := reg.All(ctx)
	if err != nil || len(all) != 2501 || all[0] != "new" || all[1] != "old0000" || !slices.IsSorted(all) {
		t.Fatalf("All before the migration: %d names from %v, %v; want 2501 sorted, new first", len(all), all[:min(3, len(all))], err)
	}
	n, err := reg.Migrate(ctx)
	if err != nil || n != 2500 {
		t.Fatalf("Migrate: %d, %v; want 2500 added", n, err)
	}
	if n, err := reg.Migrate(ctx); err != nil || n != 0 {
		t.Errorf("Migrate again: %d, %v; want none added", n, err)
	}
	page, more, err := reg.Page(ctx, "old12", "", 100)
	if err != nil || len(page) != 100 || page[0] != "old1200" || page[99] != "old1299" || more {
		t.Errorf("Page(old12) after the migration: %d names from %v, more %v, %v", len(page), page[:min(1, len(page))], more, err)
	}
	// The migrated queues count towards the limit: they exist.
	if _, err := reg.Admit(ctx, "another"); !errors.Is(err, keyspace.ErrQuota) {
		t.Errorf("Admit past the migrated queues: got %v, want ErrQuota", err)
	}
	if _, err := reg.Admit(ctx, "old0007"); err != nil {
		t.Errorf("Admit of a migrated queue: %v", err)
	}
}

// testRememberAndForgetBoth: Remember writes the registry and the previous
// release's set, without the limit; Forget takes the queue out of both.
func testRememberAndForgetBoth(t *testing.T, rdb redis.UniversalClient, prefix string) {
	ctx := context.Background()
	reg := keyspace.NewRegistry(rdb, prefix, keyspace.RegistryMax(1))
	for _, q := range []string{"a", "b"} {
		if err := reg.Remember(ctx, q, true); err != nil {
			t.Fatal(err)
		}
	}
	in := func(q string) (bool, bool) {
		return rdb.ZScore(ctx, keyspace.QueueNamesKey(prefix), q).Err() == nil,
			rdb.SIsMember(ctx, keyspace.QueuesKey(prefix), q).Val()
	}
	if z, s := in("b"); !z || !s {
		t.Errorf("remembered b: in the registry %v, in the old set %v", z, s)
	}
	if err := reg.Forget(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	if z, s := in("b"); z || s {
		t.Errorf("forgotten b: in the registry %v, in the old set %v", z, s)
	}
	// Forgotten, b is not taken for known: Admit checks it again.
	if _, err := reg.Admit(ctx, "b"); !errors.Is(err, keyspace.ErrQuota) {
		t.Errorf("Admit(b) after Forget with a full registry: got %v, want ErrQuota", err)
	}
}

// testWithdrawGivesBack: Admit says whether it added the queue; Withdraw
// gives back its place unless the queue has keys by now.
func testWithdrawGivesBack(t *testing.T, rdb redis.UniversalClient, prefix string) {
	ctx := context.Background()
	reg := keyspace.NewRegistry(rdb, prefix, keyspace.RegistryMax(1))
	if added, err := reg.Admit(ctx, "a"); err != nil || !added {
		t.Fatalf("Admit(a): added %v, %v; want added", added, err)
	}
	if added, err := keyspace.NewRegistry(rdb, prefix).Admit(ctx, "a"); err != nil || added {
		t.Fatalf("Admit(a) again: added %v, %v; want known", added, err)
	}
	if err := reg.Withdraw(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if n := rdb.ZCard(ctx, keyspace.QueueNamesKey(prefix)).Val() + rdb.SCard(ctx, keyspace.QueuesKey(prefix)).Val(); n != 0 {
		t.Errorf("withdrawn, the registry and the old set hold %d names", n)
	}
	if _, err := reg.Admit(ctx, "b"); err != nil {
		t.Fatalf("Admit(b) in the place given back: %v", err)
	}
	if err := rdb.HSet(ctx, keyspace.NewQueue(prefix, "b").Meta(), "seq", 1).Err(); err != nil {
		t.Fatal(err)
	}
	if err := reg.Withdraw(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	if rdb.ZScore(ctx, keyspace.QueueNamesKey(prefix), "b").Err() != nil {
		t.Error("a queue with keys was withdrawn")
	}
}
