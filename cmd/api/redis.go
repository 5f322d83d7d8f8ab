package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
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
			return nil, nil, fmt.Errorf("EMQ_REDIS_URL: %w", err)
		}
		trust(opts.TLSConfig, roots)
		rdb := redis.NewClient(opts)
		return rdb, func() { _ = rdb.Close() }, nil
	}
	opts, err := clusterOptions(urls)
	if err != nil {
		return nil, nil, err
	}
	trust(opts.TLSConfig, roots)
	rdb := redis.NewClusterClient(opts)
	return rdb, func() { _ = rdb.Close() }, nil
}

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
// apply to every node, as go-redis's cluster URL form has it.
func clusterOptions(urls []string) (*redis.ClusterOptions, error) {
	first, err := url.Parse(strings.TrimSpace(urls[0]))
	if err != nil {
		return nil, fmt.Errorf("EMQ_REDIS_URL seed 1: %w", err)
	}
	query := first.Query()
	for i, u := range urls[1:] {
		opts, err := redis.ParseURL(strings.TrimSpace(u))
		if err != nil {
			return nil, fmt.Errorf("EMQ_REDIS_URL seed %d: %w", i+2, err)
		}
		query.Add("addr", opts.Addr)
	}
	first.RawQuery = query.Encode()
	opts, err := redis.ParseClusterURL(first.String())
	if err != nil {
		return nil, fmt.Errorf("EMQ_REDIS_URL: %w", err)
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
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	return rdb, func() { _ = rdb.Close(); mr.Close() }, nil
}

// maskURLs hides the passwords of comma-separated Redis URLs.
func maskURLs(urls string) string {
	parts := strings.Split(urls, ",")
	for i, p := range parts {
		if u, err := url.Parse(strings.TrimSpace(p)); err == nil {
			parts[i] = u.Redacted()
		}
	}
	return strings.Join(parts, ",")
}
