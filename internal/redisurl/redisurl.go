// Package redisurl reads a Redis address the way EMQ_REDIS_URL gives it:
// one redis:// or rediss:// URL for a single node, several comma-separated
// URLs for the seed nodes of a Redis Cluster, or one redis+sentinel:// URL
// for a master that Redis Sentinel watches over. Its errors never quote a
// URL, which may hold a password, and Mask shows one without its secrets.
package redisurl

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// ErrBadURL refuses a URL without quoting it.
var ErrBadURL = errors.New("not a valid redis://, rediss:// or redis+sentinel:// URL (escape special characters in the password)")

// Target is where EMQ_REDIS_URL points: exactly one of its fields is set.
type Target struct {
	Node     *redis.Options         // one node
	Cluster  *redis.ClusterOptions  // a Redis Cluster, by its seeds
	Sentinel *redis.FailoverOptions // the master a set of sentinels names
}

// Parse reads urls: one node, a Cluster's seeds, or a Sentinel URL.
func Parse(urls string) (Target, error) {
	urls = strings.TrimSpace(urls)
	if isSentinel(urls) {
		opts, err := sentinelOptions(urls)
		return Target{Sentinel: opts}, err
	}
	seeds := strings.Split(urls, ",")
	for i := range seeds {
		seeds[i] = strings.TrimSpace(seeds[i])
	}
	if len(seeds) == 1 {
		node, err := redis.ParseURL(seeds[0])
		if err != nil || !userWhole(seeds[0]) {
			return Target{}, ErrBadURL
		}
		return Target{Node: node}, nil
	}
	cluster, err := clusterOptions(seeds)
	return Target{Cluster: cluster}, err
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
		if err != nil || !userWhole(seed) {
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

// Mask is urls with every password hidden: a URL's own and, in a
// Sentinel URL, the sentinels' (sentinel_password); a URL that does not
// parse, or whose password does not parse whole, is not shown at all. It
// is what logs show of EMQ_REDIS_URL.
func Mask(urls string) string {
	if isSentinel(strings.TrimSpace(urls)) {
		return maskSentinel(strings.TrimSpace(urls))
	}
	parts := strings.Split(urls, ",")
	for i, p := range parts {
		if u, err := url.Parse(strings.TrimSpace(p)); err == nil && userWhole(p) {
			parts[i] = u.Redacted()
		} else {
			parts[i] = "<unparseable>"
		}
	}
	return strings.Join(parts, ",")
}

// userWhole reports whether raw, a URL, has no '@' past its scheme, or
// parses with a user: an unescaped '#', '/' or '?' in a password makes a
// URL parser end the host before the '@' and take the rest for a path,
// query or fragment, so that the password would be dropped, or shown as
// a path.
func userWhole(raw string) bool {
	_, rest, _ := strings.Cut(strings.TrimSpace(raw), "://")
	if !strings.Contains(rest, "@") {
		return true
	}
	u, err := url.Parse(strings.TrimSpace(raw))
	return err == nil && u.User != nil
}

// DefaultSentinelPort is the port of a sentinel a Sentinel URL names
// without one.
const DefaultSentinelPort = "26379"

// sentinelSchemes are the schemes of a Sentinel URL, and the scheme of the
// data nodes each stands for: rediss+sentinel speaks TLS to sentinels and
// data nodes alike.
var sentinelSchemes = map[string]string{"redis+sentinel": "redis", "rediss+sentinel": "rediss"}

func isSentinel(raw string) bool {
	scheme, _, ok := strings.Cut(raw, "://")
	_, known := sentinelSchemes[strings.ToLower(scheme)]
	return ok && known
}

// sentinelURL is a Sentinel URL taken apart:
// redis+sentinel://[user:password@]host[:port][,host[:port]...]/master_name[/db][?options].
type sentinelURL struct {
	scheme    string        // of the data nodes: redis or rediss
	user      *url.Userinfo // logs in to the master and replicas; nil: none
	sentinels []string      // host:port, the port 26379 where none is given
	master    string        // the name the sentinels know the master by
	db        int
	query     url.Values // the go-redis options, sentinel_username and sentinel_password
}

// sentinelQueryTaken are the go-redis options a Sentinel URL gives in its
// own parts, and so refuses in its query.
var sentinelQueryTaken = map[string]string{"master_name": "the path", "addr": "the host list",
	"username": "the user part", "password": "the user part", "db": "the path"}

// sentinelQueryRefused are the go-redis options that would send commands
// to replicas, which refuse writes (go-redis's failover client panics at
// two of them).
var sentinelQueryRefused = []string{"replica_only", "route_randomly", "route_by_latency", "route_by_latency_tolerance", "use_disconnected_replicas"}

// splitSentinel takes raw apart, without quoting it in an error.
func splitSentinel(raw string) (sentinelURL, error) {
	scheme, rest, _ := strings.Cut(raw, "://")
	s := sentinelURL{scheme: sentinelSchemes[strings.ToLower(scheme)]}
	if at := strings.LastIndex(rest, "@"); at >= 0 {
		// The user part ends at the last '@', whatever it holds: a
		// password's unescaped '#', '/' or '?' stays in the password.
		user, err := userInfo(rest[:at])
		if err != nil {
			return s, err
		}
		s.user, rest = user, rest[at+1:]
	}
	rest, rawQuery, _ := strings.Cut(rest, "?")
	hosts, path, _ := strings.Cut(rest, "/")
	for _, h := range strings.Split(hosts, ",") {
		addr, err := sentinelAddr(strings.TrimSpace(h))
		if err != nil {
			return s, err
		}
		s.sentinels = append(s.sentinels, addr)
	}
	parts := strings.Split(path, "/")
	if len(parts) > 2 || parts[0] == "" {
		return s, errors.New("a Sentinel URL names the master after the sentinels: redis+sentinel://host:26379,host:26379/master_name[/db]")
	}
	master, err := url.PathUnescape(parts[0])
	if err != nil {
		return s, ErrBadURL
	}
	s.master = master
	if len(parts) == 2 && parts[1] != "" {
		if s.db, err = strconv.Atoi(parts[1]); err != nil || s.db < 0 {
			return s, errors.New("the database after the master's name must be a number")
		}
	}
	if s.query, err = url.ParseQuery(rawQuery); err != nil {
		return s, ErrBadURL
	}
	for name, where := range sentinelQueryTaken {
		if s.query.Has(name) {
			return s, fmt.Errorf("option %s: a Sentinel URL gives it in %s", name, where)
		}
	}
	for _, name := range sentinelQueryRefused {
		if s.query.Has(name) {
			return s, fmt.Errorf("option %s: echo_mq writes, so it talks to the master alone", name)
		}
	}
	return s, nil
}

// userInfo reads "user[:password]", each part %-escaped or not.
func userInfo(text string) (*url.Userinfo, error) {
	name, password, hasPassword := strings.Cut(text, ":")
	name, err1 := url.PathUnescape(name)
	password, err2 := url.PathUnescape(password)
	if err1 != nil || err2 != nil {
		return nil, ErrBadURL
	}
	if hasPassword {
		return url.UserPassword(name, password), nil
	}
	return url.User(name), nil
}

// sentinelAddr is the host:port of one sentinel of the list, the default
// port added where none is given.
func sentinelAddr(h string) (string, error) {
	if h == "" {
		return "", errors.New("a Sentinel URL names at least one sentinel, and no empty one between commas")
	}
	if _, _, err := net.SplitHostPort(h); err == nil {
		return h, nil
	}
	addr := net.JoinHostPort(strings.Trim(h, "[]"), DefaultSentinelPort)
	if _, _, err := net.SplitHostPort(addr); err != nil || strings.ContainsAny(h, "/?#") {
		return "", ErrBadURL
	}
	return addr, nil
}

// sentinelOptions reads a Sentinel URL into go-redis's options: it writes
// the form go-redis reads (one sentinel as the host, the others as addr,
// the master and its credentials as options) and lets go-redis read it,
// so that every option go-redis knows (dial_timeout, pool_size...) works
// here as in a plain URL. The URL's user and password log in to the data
// nodes; sentinel_username and sentinel_password, to the sentinels.
func sentinelOptions(raw string) (*redis.FailoverOptions, error) {
	s, err := splitSentinel(raw)
	if err != nil {
		return nil, err
	}
	q := url.Values{}
	for name, values := range s.query {
		if name != "sentinel_username" && name != "sentinel_password" {
			q[name] = values
		}
	}
	q.Set("master_name", s.master)
	for _, addr := range s.sentinels[1:] {
		q.Add("addr", addr)
	}
	if s.user != nil {
		q.Set("username", s.user.Username())
		if pw, ok := s.user.Password(); ok {
			q.Set("password", pw)
		}
	}
	u := url.URL{Scheme: s.scheme, Host: s.sentinels[0], Path: "/" + strconv.Itoa(s.db), RawQuery: q.Encode()}
	if s.query.Has("sentinel_username") || s.query.Has("sentinel_password") {
		u.User = url.UserPassword(s.query.Get("sentinel_username"), s.query.Get("sentinel_password"))
	}
	opts, err := redis.ParseFailoverURL(u.String())
	if err != nil {
		if strings.Contains(err.Error(), "unexpected option") {
			return nil, fmt.Errorf("%s (not a go-redis option)", strings.TrimPrefix(err.Error(), "redis: "))
		}
		return nil, ErrBadURL
	}
	if s.user != nil && s.user.Username() == "" {
		opts.Username = "" // ":password@": the default user, as in a plain URL
	}
	if opts.TLSConfig != nil {
		// go-redis names the first sentinel as every server's: each
		// sentinel and data node is checked against its own address.
		opts.TLSConfig.ServerName = ""
	}
	return opts, nil
}

// maskSentinel is a Sentinel URL without its passwords.
func maskSentinel(raw string) string {
	s, err := splitSentinel(raw)
	if err != nil {
		return "<unparseable>"
	}
	var b strings.Builder
	b.WriteString(strings.ToLower(strings.SplitN(raw, "://", 2)[0]) + "://")
	if _, hasPassword := s.user.Password(); hasPassword {
		b.WriteString(url.UserPassword(s.user.Username(), "xxxxx").String() + "@")
	} else if s.user != nil {
		b.WriteString(s.user.String() + "@")
	}
	b.WriteString(strings.Join(s.sentinels, ",") + "/" + url.PathEscape(s.master))
	if s.db != 0 {
		b.WriteString("/" + strconv.Itoa(s.db))
	}
	if s.query.Has("sentinel_password") {
		s.query.Set("sentinel_password", "xxxxx")
	}
	if len(s.query) > 0 {
		b.WriteString("?" + s.query.Encode())
	}
	return b.String()
}
