package lua

import (
	"context"
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// TestEveryScriptCompilesForEVAL: each script's EVAL form (the shared
// files and its body, one Lua function) compiles in the embedded store's
// Lua, whose limit of locals per function a real Redis, running the
// library, would not show.
func TestEveryScriptCompilesForEVAL(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: miniredis.RunT(t).Addr()})
	defer rdb.Close()
	for _, s := range All {
		// Run with no KEYS nor ARGV: it fails at once, as it may, but not
		// while compiling (miniredis compiles at the EVAL, and names a
		// compiler's error "compile error").
		err := rdb.Eval(context.Background(), s.eval.text, nil).Err()
		if err != nil && strings.Contains(err.Error(), "compile error") {
			t.Errorf("%s: %v", s.name, err)
		}
	}
}
