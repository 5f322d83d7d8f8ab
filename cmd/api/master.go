package main

import (
	"context"
	"log/slog"
	"net"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// masterWatch knows the master a Sentinel client writes to: the address
// of its latest connection (go-redis dials the master Sentinel names, and
// after a failover closes the connections to the old one). It logs each
// change, which is how the log names the master in use.
type masterWatch struct {
	name string // the master's name in Sentinel
	log  *slog.Logger
	addr atomic.Pointer[string]
}

// Addr is the master's host:port, "" before the first connection.
func (m *masterWatch) Addr() string {
	if m == nil {
		return ""
	}
	if a := m.addr.Load(); a != nil {
		return *a
	}
	return ""
}

// addrFunc is Addr for /readyz: nil when there is no Sentinel master.
func (m *masterWatch) addrFunc() func() string {
	if m == nil {
		return nil
	}
	return m.Addr
}

func (m *masterWatch) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := next(ctx, network, addr)
		if err == nil {
			now := conn.RemoteAddr().String()
			if old := m.addr.Swap(&now); old == nil || *old != now {
				m.log.Info("Redis master in use", "master_name", m.name, "addr", now)
			}
		}
		return conn, err
	}
}

func (*masterWatch) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (*masterWatch) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
