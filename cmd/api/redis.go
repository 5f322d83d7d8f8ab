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

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
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
	urls := strings.Split(cfg.RedisURL, ",")
	if len(urls) == 1 {
		opts, err := redis.ParseURL(strings.TrimSpace(urls[0]))
		if err != nil {
			return nil, nil, errBadURL // its text may hold the password
		}
		trust(opts.TLSConfig, roots)
		opts.MaxRetries = noRetries
		rdb := redis.NewClient(opts)
		return rdb, func() { _ = rdb.Close() }, nil
	}
	opts, err := clusterOptions(urls)
	if err != nil {
		return nil, nil, err
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
// decides; every verb a worker retries is safe to repeat (rule 5).
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

// clusterOptions takes the seed nodes of a Cluster from several URLs. The
// first URL's credentials, TLS and query options (timeouts, pool size)
// apply to every node, as go-redis's cluster URL form has it. A database
// other than 0 is refused: a Cluster has no other, and go-redis would
// ignore it without a word.
func clusterOptions(urls []string) (*redis.ClusterOptions, error) {
	first, err := url.Parse(strings.TrimSpace(urls[0]))
	if err != nil {
		return nil, errBadURL
	}
	query := first.Query()
	for i, u := range urls {
		opts, err := redis.ParseURL(strings.TrimSpace(u))
		if err != nil {
			return nil, fmt.Errorf("EMQ_REDIS_URL seed %d: %w", i+1, errBadURL)
		}
		if opts.DB != 0 {
			return nil, fmt.Errorf("EMQ_REDIS_URL seed %d names database %d: a Redis Cluster has only database 0 (use EMQ_PREFIX to keep deployments apart)", i+1, opts.DB)
		}
		if i > 0 {
			query.Add("addr", opts.Addr)
		}
	}
	first.RawQuery = query.Encode()
	opts, err := redis.ParseClusterURL(first.String())
	if err != nil {
		return nil, errBadURL
	}
	return opts, nil
}

// embedded starts the in-process Redis-compatible store, for a machine with
// no Redis: it keeps everything in memory, so it says so loudly.
func embedded(log *slog.Logger) (redis.UniversalClient, func(), error) {
	mr, err := miniredis.Run()
	if err != nil {
		return nil, nil, fmt.Errorf("start the embedded store: %w", err)
	}
	log.Warn("NO EMQ_REDIS_URL: running on an embedded in-memory store. NOTHING PERSISTS: every job is lost when the process stops. Set EMQ_REDIS_URL=redis://host:6379 for real use.",
		"embedded_addr", mr.Addr())
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr(), MaxRetries: noRetries})
	return rdb, func() { _ = rdb.Close(); mr.Close() }, nil
}

// errBadURL refuses an EMQ_REDIS_URL without quoting it: it may hold a
// password.
var errBadURL = fmt.Errorf("EMQ_REDIS_URL is not a valid redis:// or rediss:// URL (escape special characters in the password)")

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
