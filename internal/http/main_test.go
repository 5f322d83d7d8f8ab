package http_test

import (
	"os"
	"testing"

	"github.com/echo-mq/echo_mq/internal/redistest"
)

// TestMain starts the real redis-server that the contract tests share; each
// test uses a key prefix of its own, and the embedded store a server of its
// own.
func TestMain(m *testing.M) { os.Exit(redistest.Run(m)) }
