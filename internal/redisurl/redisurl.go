// Package redisurl reads a Redis address the way EMQ_REDIS_URL gives it:
// one redis:// or rediss:// URL for a single node, or several
// comma-separated URLs for the seed nodes of a Redis Cluster. Its errors
// never quote a URL, which may hold a password.
package redisurl

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/redis/go-redis/v9"
)

// ErrBadURL refuses a URL without quoting it.
var ErrBadURL = errors.New("not a valid redis:// or rediss:// URL (escape special characters in the password)")

// Parse returns the options of the one node urls names (cluster nil), or
// of the Cluster whose seeds it lists (node nil).
func Parse(urls string) (node *redis.Options, cluster *redis.ClusterOptions, err error) {
	seeds := strings.Split(urls, ",")
	for i := range seeds {
		seeds[i] = strings.TrimSpace(seeds[i])
	}
	if len(seeds) == 1 {
		node, err = redis.ParseURL(seeds[0])
		if err != nil {
			return nil, nil, ErrBadURL
		}
		return node, nil, nil
	}
	cluster, err = clusterOptions(seeds)
	return nil, cluster, err
}

// clusterOptions takes the seed nodes of a Cluster from several URLs. The
// first URL's credentials, TLS and query options (timeouts, pool size)
// apply to every node, as go-redis's cluster URL form has it, so a later
// seed that says otherwise (another scheme, user, password or options) is
// refused rather than silently overruled; so is a database other than 0,
// which a Cluster does not have.
func clusterOptions(seeds []string) (*redis.ClusterOptions, error) {
	first, err := url.Parse(seeds[0])
	if err != nil {
		return nil, fmt.Errorf("seed 1: %w", ErrBadURL)
	}
	query := first.Query()
	for i, seed := range seeds {
		u, err := url.Parse(seed)
		if err != nil {
			return nil, fmt.Errorf("seed %d: %w", i+1, ErrBadURL)
		}
		opts, err := redis.ParseURL(seed)
		if err != nil {
			return nil, fmt.Errorf("seed %d: %w", i+1, ErrBadURL)
		}
		if opts.DB != 0 {
			return nil, fmt.Errorf("seed %d names database %d: a Redis Cluster has only database 0 (use EMQ_PREFIX to keep deployments apart)", i+1, opts.DB)
		}
		if i == 0 {
			continue
		}
		if u.Scheme != first.Scheme || u.User.String() != first.User.String() || (u.RawQuery != "" && u.RawQuery != first.RawQuery) {
			return nil, fmt.Errorf("seed %d differs from the first in its scheme, credentials or options: the first seed's apply to every node, so give them once, on the first", i+1)
		}
		query.Add("addr", opts.Addr)
	}
	first.RawQuery = query.Encode()
	opts, err := redis.ParseClusterURL(first.String())
	if err != nil {
		return nil, fmt.Errorf("seed 1: %w", ErrBadURL)
	}
	return opts, nil
}
