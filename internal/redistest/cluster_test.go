package redistest

import (
	"context"
	"testing"
)

// TestClusterFailoverKeepsWrites fails a slot over and back.
func TestClusterFailoverKeepsWrites(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 3, 1)
	rdb := c.Client(t)
	ctx := context.Background()
	if err := rdb.Set(ctx, "{q}x", "kept", 0).Err(); err != nil {
		t.Fatal(err)
	}
	from, to := c.Failover(t, "{q}x")
	if from == to {
		t.Fatalf("failover left %s the owner", from)
	}
	if back, again := c.Failover(t, "{q}x"); back != to || again != from {
		t.Fatalf("the second failover went %s -> %s, want %s -> %s", back, again, to, from)
	}
	masters, err := c.Masters(ctx)
	if err != nil || len(masters) != 3 {
		t.Fatalf("masters after the failover: %d, %v; want 3", len(masters), err)
	}
	if v, err := rdb.Get(ctx, "{q}x").Result(); err != nil || v != "kept" {
		t.Fatalf("GET after the failover: %q, %v; want kept", v, err)
	}
}

func TestSharedClusterHasThreeMasters(t *testing.T) {
	t.Parallel()
	c := SharedCluster(t)
	masters, err := c.Masters(context.Background())
	if err != nil || len(masters) != 3 {
		t.Fatalf("masters: %d, %v; want 3", len(masters), err)
	}
	if c != SharedCluster(t) {
		t.Fatal("SharedCluster started a second cluster")
	}
}
