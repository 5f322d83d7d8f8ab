package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/memstore"
	"github.com/echo-mq/echo_mq/internal/redisurl"
	"github.com/echo-mq/echo_mq/internal/replication"
	"github.com/echo-mq/echo_mq/lua"
)

// connect returns a client for cfg.RedisURL: one node for one URL, a
// Cluster for several comma-separated seed URLs, the master Redis Sentinel
// names for a redis+sentinel:// URL, and the embedded in-memory store for
// none. A rediss:// URL speaks TLS, trusting the system's CAs or those in
// cfg.RedisCAFile; a user and password in the URL log in (Redis ACL). With
// EMQ_ACK_REPLICAS, every node's client waits for replicas after each
// write (internal/replication). The returned master names the node the
// service writes to ("" but under Sentinel, where it changes), and stop
// closes the client (and the embedded store).
func connect(cfg config, log *slog.Logger) (rdb redis.UniversalClient, master *masterWatch, stop func(), err error) {
	if cfg.RedisURL == "" {
		rdb, stop, err := embedded(log)
		return rdb, nil, stop, err
	}
	roots, err := caPool(cfg.RedisCAFile)
	if err != nil {
		return nil, nil, nil, err
	}
	target, err := redisurl.Parse(cfg.RedisURL)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("EMQ_REDIS_URL: %w", err)
	}
	acked := func(node *redis.Client) {
		if cfg.AckReplicas > 0 {
			replication.Install(node, replication.Config{Replicas: cfg.AckReplicas, Timeout: cfg.AckTimeout, ReadOnlyScript: lua.ReadOnly})
		}
	}
	switch {
	case target.Node != nil:
		opts := target.Node
		harden(cfg, roots, opts.TLSConfig, &opts.MaxRetries, &opts.ReadTimeout)
		node := redis.NewClient(opts)
		acked(node)
		return node, nil, func() { _ = node.Close() }, nil
	case target.Sentinel != nil:
		opts := target.Sentinel
		harden(cfg, roots, opts.TLSConfig, &opts.MaxRetries, &opts.ReadTimeout)
		node := redis.NewFailoverClient(opts)
		master = &masterWatch{name: opts.MasterName, log: log}
		node.AddHook(master)
		acked(node)
		return node, master, func() { _ = node.Close() }, nil
	}
	opts := target.Cluster
	harden(cfg, roots, opts.TLSConfig, &opts.MaxRetries, &opts.ReadTimeout)
	cluster := redis.NewClusterClient(opts)
	cluster.OnNewNode(func(node *redis.Client) {
		node.AddHook(reloadOnDialFailure{cluster})
		acked(node)
	})
	return cluster, nil, func() { _ = cluster.Close() }, nil
}

// harden sets what every kind of client the service makes takes from it:
// the CAs a TLS connection trusts, no resending (noRetries), and a read
// timeout that EMQ_ACK_TIMEOUT fits in.
func harden(cfg config, roots *x509.CertPool, tlsConfig *tls.Config, maxRetries *int, read *time.Duration) {
	trust(tlsConfig, roots)
	*maxRetries = noRetries
	*read = readTimeout(*read, cfg)
}

// readTimeout is the read timeout of the Redis client: the URL's
// (go-redis's 3 s when it sets none), made longer where EMQ_ACK_TIMEOUT
// would not fit in it, since a pipeline's answers arrive after its WAIT.
func readTimeout(given time.Duration, cfg config) time.Duration {
	effective := given
	if effective == 0 {
		effective = 3 * time.Second
	}
	if cfg.AckReplicas > 0 && effective > 0 && effective < cfg.AckTimeout+time.Second {
		return cfg.AckTimeout + time.Second
	}
	return given
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
