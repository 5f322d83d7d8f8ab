// Package admin is echo_mq's operator plane: reading and managing queues and
// jobs outside a worker's lease (counts, listings, pause, drain, obliterate,
// retry, promote, remove). Every change is one atomic script, as in the
// worker plane, and writes an event naming who asked for it.
package admin

import (
	"errors"

	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/keyspace"
	"github.com/echo-mq/echo_mq/lua"
)

// ErrCursor means a listing's cursor is not one the service gave out.
var ErrCursor = errors.New("invalid cursor")

// Service runs the operator plane for every queue under one key prefix.
type Service struct {
	rdb     redis.UniversalClient
	prefix  string
	queues  *keyspace.Registry
	scripts *lua.Runner
}

// Option configures a Service.
type Option func(*Service)

// Registry makes the Service list and admit queues through reg (its
// limit, shared with the other services); the default is a registry of
// its own with no limit.
func Registry(reg *keyspace.Registry) Option {
	return func(s *Service) { s.queues = reg }
}

// NewService returns a Service for the keys under prefix.
func NewService(rdb redis.UniversalClient, prefix string, opts ...Option) *Service {
	s := &Service{rdb: rdb, prefix: prefix, queues: keyspace.NewRegistry(rdb, prefix), scripts: lua.NewRunner(rdb)}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Actor is who asks for an operator action, for the audit trail in the
// event stream: the API key's name and role.
type Actor = lua.Actor
