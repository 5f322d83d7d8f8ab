package http_test

import (
	"context"
	"os"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/redistest"
)

// TestMain starts the real redis-server that the contract tests share; each
// test uses a key prefix of its own, and the embedded store a server of its
// own. go-redis's own log is muted: TestRedisDown makes it log every refused
// dial on purpose.
func TestMain(m *testing.M) {
	redis.SetLogger(quiet{})
	os.Exit(redistest.Run(m))
}

type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}
