package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/memstore"
	"github.com/echo-mq/echo_mq/internal/redisurl"
)

// connect returns a client for cfg.RedisURL: one node for one URL, a
// Cluster for several comma-separated seed URLs, and the embedded in-memory
// store for none. A rediss:// URL speaks TLS, trusting the system's CAs or
// those in cfg.RedisCAFile; a user and password in the URL log in (Redis
// ACL). The returned stop closes the client (and the embedded store).
func connect(cfg config, log *slog.Logger) (redis.UniversalClient, func(), error) {
	if cfg.RedisURL == "" {
		return embedded(log)
	}
	roots, err := caPool(cfg.RedisCAFile)
	if err != nil {
		return nil, nil, err
	}
	node, opts, err := redisurl.Parse(cfg.RedisURL)
	if err != nil {
		return nil, nil, fmt.Errorf("EMQ_REDIS_URL: %w", err)
	}
	if node != nil {
		trust(node.TLSConfig, roots)
		node.MaxRetries = noRetries
		rdb := redis.NewClient(node)
		return rdb, func() { _ = rdb.Close() }, nil
	}
	trust(opts.TLSConfig, roots)
	opts.MaxRetries = noRetries
	rdb := redis.NewClusterClient(opts)
	rdb.OnNewNode(func(node *redis.Client) { node.AddHook(reloadOnDialFailure{rdb}) })
	return rdb, func() { _ = rdb.Close() }, nil
}

// reloadOnDialFailure makes a cluster client read the slot map again when
// it cannot reach a node. When a master dies and a replica takes its
// place, go-redis would otherwise dial the dead master for every call on
// its slots until its periodic reload, a minute later, and the service
// would answer 503 all that time; with it, the calls find the new master
// as soon as the cluster has promoted it.
type reloadOnDialFailure struct{ cluster *redis.ClusterClient }

func (h reloadOnDialFailure) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := next(ctx, network, addr)
		if err != nil {
			h.cluster.ReloadState(ctx) // in the background, one at a time
		}
		return conn, err
	}
}

func (reloadOnDialFailure) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (reloadOnDialFailure) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// noRetries turns off go-redis's resending of a command whose answer was
// lost (a read timeout): a claim or a batch complete run twice would lease
// jobs nobody sees, and a retry or promote run twice would answer 409 after
// it succeeded. The error reaches the client as 503 instead, and the client
// decides; every verb a worker retries is safe to repeat (docs/design.md#fencing, rule 5).
const noRetries = -1

// caPool reads the PEM certificates of file; nil (the system's) for "".
func caPool(file string) (*x509.CertPool, error) {
	if file == "" {
		return nil, nil
	}
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("EMQ_REDIS_CA_FILE: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("EMQ_REDIS_CA_FILE: no PEM certificate in %s", file)
	}
	return pool, nil
}

// trust makes a TLS config (nil for a plain redis:// URL) trust roots.
func trust(tlsConfig *tls.Config, roots *x509.CertPool) {
	if tlsConfig != nil && roots != nil {
		tlsConfig.RootCAs = roots
	}
}

// embedded starts the in-process Redis-compatible store, for a machine with
// no Redis: it keeps everything in memory, so it says so loudly. Its client
// sets no read or write deadline (memstore.Configure): the store answers
// every command, late when the machine is busy, and a deadline would answer
// 503 for commands that ran.
func embedded(log *slog.Logger) (redis.UniversalClient, func(), error) {
	store, err := memstore.Start(time.Second)
	if err != nil {
		return nil, nil, fmt.Errorf("start the embedded store: %w", err)
	}
	log.Warn("NO EMQ_REDIS_URL: running on an embedded in-memory store. NOTHING PERSISTS: every job is lost when the process stops. Set EMQ_REDIS_URL=redis://host:6379 for real use.",
		"embedded_addr", store.Addr())
	opts := &redis.Options{Addr: store.Addr(), MaxRetries: noRetries}
	memstore.Configure(opts)
	rdb := redis.NewClient(opts)
	return rdb, func() { _ = rdb.Close(); store.Close() }, nil
}

// maskURLs hides the passwords of comma-separated Redis URLs; a URL that
// does not parse is not shown at all.
func maskURLs(urls string) string {
	parts := strings.Split(urls, ",")
	for i, p := range parts {
		if u, err := url.Parse(strings.TrimSpace(p)); err == nil {
			parts[i] = u.Redacted()
		} else {
			parts[i] = "<unparseable>"
		}
	}
	return strings.Join(parts, ",")
}
