package main

import (
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/echo-mq/echo_mq/internal/auth"
	emqhttp "github.com/echo-mq/echo_mq/internal/http"
	"github.com/echo-mq/echo_mq/internal/keyspace"
	"github.com/echo-mq/echo_mq/internal/lease"
	"github.com/echo-mq/echo_mq/internal/metrics"
	"github.com/echo-mq/echo_mq/internal/push"
	"github.com/echo-mq/echo_mq/internal/redisurl"
	"github.com/echo-mq/echo_mq/internal/stall"
)

// config is the service's configuration, read once from the environment.
type config struct {
	Addr            string        // EMQ_ADDR
	RedisURL        string        // EMQ_REDIS_URL: "" runs the embedded store
	RedisCAFile     string        // EMQ_REDIS_CA_FILE: CAs to trust for rediss://
	Prefix          string        // EMQ_PREFIX
	SweepInterval   time.Duration // EMQ_SWEEP_INTERVAL
	EventsMaxAge    time.Duration // EMQ_EVENTS_MAX_AGE: events kept, and an empty queue after its last
	MaxStalled      int           // EMQ_MAX_STALLED
	LogLevel        slog.Level    // EMQ_LOG_LEVEL
	MaxValueBytes   int           // EMQ_MAX_VALUE_BYTES: payload, result, progress
	MaxBodyBytes    int           // EMQ_MAX_BODY_BYTES
	ShutdownTimeout time.Duration // EMQ_SHUTDOWN_TIMEOUT
	HeaderTimeout   time.Duration // EMQ_HEADER_TIMEOUT: to read a request's headers
	KeepCompleted   int           // EMQ_KEEP_COMPLETED: 0 keeps all
	MaxWaiters      int           // EMQ_MAX_WAITERS: long polls waiting at once
	CORSOrigins     []string      // EMQ_CORS_ORIGINS: comma-separated; none: CORS off
	Metrics         string        // EMQ_METRICS: "on" (a reader key when keys are set), "open" or "off"
	AutoPipeline    bool          // EMQ_REDIS_AUTOPIPELINE: "on" (default) or "off"
	Keys            *auth.Keyring // EMQ_API_KEYS: none leaves the API open
	PushAllow       push.Allow    // EMQ_PUSH_ALLOW: the hosts a push target may name; none: push is off
	PushAllowList   string        // EMQ_PUSH_ALLOW as given, for the start-up log
	// EMQ_MAX_WAITERS_PER_KEY: long polls of one API key waiting at once,
	// at most MaxWaiters (a larger value is refused); only with API keys.
	MaxWaitersPerKey int
	// EMQ_MAX_STREAMS: event streams one API key holds open at once.
	MaxStreams int
	// EMQ_MAX_QUEUES: queues there may be; 0: no limit.
	MaxQueues int
	// EMQ_METRICS_MAX_QUEUES: the queues the per-queue series name at most.
	MetricsMaxQueues int
	// EMQ_ACK_REPLICAS: the replicas that must hold a write before it is
	// answered (WAIT); 0 answers once the master has it.
	AckReplicas int
	// EMQ_ACK_TIMEOUT: how long a write waits for them before it is
	// answered 503.
	AckTimeout time.Duration
}

// maxAckTimeout bounds EMQ_ACK_TIMEOUT: a write's answer waits for it,
// and so does every other call its pipeline carries; a claim may wait
// 30 s for a job first, and the HTTP server gives an answer 60 s.
const maxAckTimeout = 25 * time.Second

// variables are the EMQ_* environment variables the service reads: the
// names loadConfig asks for, found by asking it once, so that the list is
// where the settings are read. loadConfig reads every one whatever the
// others say.
var variables = readVariables()

func readVariables() []string {
	var names []string
	_, _ = loadConfig(func(name string) string {
		names = append(names, name)
		return ""
	})
	slices.Sort(names)
	return slices.Compact(names)
}

var prefixRE = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,64}$`)

// loadConfig reads the configuration from getenv, with defaults.
func loadConfig(getenv func(string) string) (config, error) {
	env := func(name, def string) string {
		if v := strings.TrimSpace(getenv(name)); v != "" {
			return v
		}
		return def
	}
	var errs []string
	fail := func(name string, err error) { errs = append(errs, fmt.Sprintf("%s: %v", name, err)) }
	c := config{
		Addr:        env("EMQ_ADDR", "127.0.0.1:8080"),
		RedisURL:    env("EMQ_REDIS_URL", ""),
		RedisCAFile: env("EMQ_REDIS_CA_FILE", ""),
		Prefix:      env("EMQ_PREFIX", keyspace.DefaultPrefix),
	}
	var err error
	if c.SweepInterval, err = positiveDuration(env("EMQ_SWEEP_INTERVAL", stall.DefaultInterval.String())); err != nil {
		fail("EMQ_SWEEP_INTERVAL", err)
	}
	if c.EventsMaxAge, err = positiveDuration(env("EMQ_EVENTS_MAX_AGE", stall.DefaultMaxAge.String())); err != nil {
		fail("EMQ_EVENTS_MAX_AGE", err)
	}
	if c.HeaderTimeout, err = positiveDuration(env("EMQ_HEADER_TIMEOUT", "10s")); err != nil {
		fail("EMQ_HEADER_TIMEOUT", err)
	}
	if c.ShutdownTimeout, err = positiveDuration(env("EMQ_SHUTDOWN_TIMEOUT", "15s")); err != nil {
		fail("EMQ_SHUTDOWN_TIMEOUT", err)
	}
	if c.MaxStalled, err = positiveInt(env("EMQ_MAX_STALLED", strconv.Itoa(stall.DefaultMaxStalled))); err != nil {
		fail("EMQ_MAX_STALLED", err)
	}
	if c.MaxValueBytes, err = positiveInt(env("EMQ_MAX_VALUE_BYTES", strconv.Itoa(emqhttp.DefaultMaxValueBytes))); err != nil {
		fail("EMQ_MAX_VALUE_BYTES", err)
	}
	if c.MaxWaiters, err = positiveInt(env("EMQ_MAX_WAITERS", strconv.Itoa(emqhttp.DefaultMaxWaiters))); err != nil {
		fail("EMQ_MAX_WAITERS", err)
	}
	if c.MaxWaitersPerKey, err = waitersPerKey(env("EMQ_MAX_WAITERS_PER_KEY", ""), c.MaxWaiters); err != nil {
		fail("EMQ_MAX_WAITERS_PER_KEY", err)
	}
	if c.MaxStreams, err = positiveInt(env("EMQ_MAX_STREAMS", strconv.Itoa(emqhttp.DefaultMaxStreams))); err != nil {
		fail("EMQ_MAX_STREAMS", err)
	}
	if c.MaxBodyBytes, err = positiveInt(env("EMQ_MAX_BODY_BYTES", strconv.Itoa(emqhttp.DefaultMaxBodyBytes))); err != nil {
		fail("EMQ_MAX_BODY_BYTES", err)
	}
	if c.MaxQueues, err = strconv.Atoi(env("EMQ_MAX_QUEUES", strconv.Itoa(keyspace.DefaultMaxQueues))); err != nil || c.MaxQueues < 0 {
		fail("EMQ_MAX_QUEUES", fmt.Errorf("%q must be a count, 0 for no limit", getenv("EMQ_MAX_QUEUES")))
	}
	if c.KeepCompleted, err = strconv.Atoi(env("EMQ_KEEP_COMPLETED", strconv.Itoa(lease.DefaultKeepCompleted))); err != nil || c.KeepCompleted < 0 {
		fail("EMQ_KEEP_COMPLETED", fmt.Errorf("%q must be a count, 0 for all", getenv("EMQ_KEEP_COMPLETED")))
	}
	if c.MetricsMaxQueues, err = positiveInt(env("EMQ_METRICS_MAX_QUEUES", strconv.Itoa(metrics.DefaultMaxQueues))); err != nil {
		fail("EMQ_METRICS_MAX_QUEUES", err)
	}
	if c.AckReplicas, err = strconv.Atoi(env("EMQ_ACK_REPLICAS", "0")); err != nil || c.AckReplicas < 0 {
		fail("EMQ_ACK_REPLICAS", fmt.Errorf("%q must be a count of replicas, 0 for none", getenv("EMQ_ACK_REPLICAS")))
	} else if c.AckReplicas > 0 && c.RedisURL == "" {
		fail("EMQ_ACK_REPLICAS", errors.New("the embedded store (no EMQ_REDIS_URL) has no replicas"))
	}
	if c.AckTimeout, err = positiveDuration(env("EMQ_ACK_TIMEOUT", "1s")); err == nil && (c.AckTimeout < time.Millisecond || c.AckTimeout > maxAckTimeout) {
		err = fmt.Errorf("%q must be from 1ms to %s", getenv("EMQ_ACK_TIMEOUT"), maxAckTimeout)
	}
	if err != nil {
		fail("EMQ_ACK_TIMEOUT", err)
	}
	if c.Metrics = env("EMQ_METRICS", "on"); c.Metrics != "on" && c.Metrics != "open" && c.Metrics != "off" {
		fail("EMQ_METRICS", fmt.Errorf("%q must be on, open or off", c.Metrics))
	}
	switch pipe := env("EMQ_REDIS_AUTOPIPELINE", "on"); pipe {
	case "on", "off":
		c.AutoPipeline = pipe == "on"
	default:
		fail("EMQ_REDIS_AUTOPIPELINE", fmt.Errorf("%q must be on or off", pipe))
	}
	if c.Keys, err = auth.ParseKeys(getenv("EMQ_API_KEYS")); err != nil {
		fail("EMQ_API_KEYS", err) // the error never quotes a key
	}
	c.PushAllowList = env("EMQ_PUSH_ALLOW", "")
	if c.PushAllow, err = push.ParseAllow(c.PushAllowList); err != nil {
		fail("EMQ_PUSH_ALLOW", err)
	}
	for _, origin := range strings.Split(env("EMQ_CORS_ORIGINS", ""), ",") {
		if origin = strings.TrimSpace(origin); origin != "" {
			c.CORSOrigins = append(c.CORSOrigins, origin)
		}
	}
	if err = c.LogLevel.UnmarshalText([]byte(env("EMQ_LOG_LEVEL", "info"))); err != nil {
		fail("EMQ_LOG_LEVEL", err)
	}
	if !prefixRE.MatchString(c.Prefix) {
		fail("EMQ_PREFIX", fmt.Errorf("%q must be 1 to 64 characters of A-Z a-z 0-9 . _ : -", c.Prefix))
	}
	if len(errs) > 0 {
		return config{}, fmt.Errorf("bad configuration: %s", strings.Join(errs, "; "))
	}
	return c, nil
}

func positiveDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err == nil && d <= 0 {
		err = fmt.Errorf("%q must be positive", s)
	}
	return d, err
}

// waitersPerKey reads EMQ_MAX_WAITERS_PER_KEY, s: a positive count of at
// most maxWaiters (a share larger than the whole would say the operator
// meant something else), or when s is "" the default share of maxWaiters.
func waitersPerKey(s string, maxWaiters int) (int, error) {
	if s == "" {
		return emqhttp.DefaultMaxWaitersPerKey(maxWaiters), nil
	}
	n, err := positiveInt(s)
	if err == nil && maxWaiters > 0 && n > maxWaiters {
		err = fmt.Errorf("%q must be at most EMQ_MAX_WAITERS (%d)", s, maxWaiters)
	}
	return n, err
}

func positiveInt(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err == nil && n <= 0 {
		err = fmt.Errorf("%q must be positive", s)
	}
	return n, err
}

// logAttrs are the effective configuration for the start-up log, with the
// Redis password masked.
func (c config) logAttrs() []any {
	redisURL := "embedded (in-memory, nothing persists)"
	if c.RedisURL != "" {
		redisURL = redisurl.Mask(c.RedisURL)
	}
	return []any{"addr", c.Addr, "redis", redisURL, "prefix", c.Prefix,
		"sweep_interval", c.SweepInterval, "max_stalled", c.MaxStalled,
		"max_value_bytes", c.MaxValueBytes, "max_body_bytes", c.MaxBodyBytes, "log_level", c.LogLevel,
		"keep_completed", c.KeepCompleted, "cors_origins", c.CORSOrigins, "metrics", c.Metrics,
		"api_keys", c.Keys.Names(), "max_waiters", c.MaxWaiters, "max_waiters_per_key", c.MaxWaitersPerKey,
		"max_streams", c.MaxStreams, "max_queues", c.MaxQueues, "metrics_max_queues", c.MetricsMaxQueues, "redis_autopipeline", c.AutoPipeline,
		"push_allow", c.PushAllowList, "ack_replicas", c.AckReplicas, "ack_timeout", c.AckTimeout}
}

// unknownVariable is a variable of the environment named like a setting
// (EMQ_*, in any case) that the service does not read, and the setting it
// most likely means ("" when none is close).
type unknownVariable struct{ name, near string }

// unknownVariables finds in environ ("NAME=value" entries, as os.Environ
// gives them) the EMQ_* variables the service does not read: a misspelt
// setting would otherwise be ignored without a word. Only names are
// looked at, never values.
func unknownVariables(environ []string) []unknownVariable {
	var out []unknownVariable
	for _, entry := range environ {
		name, _, _ := strings.Cut(entry, "=")
		if strings.HasPrefix(strings.ToUpper(name), "EMQ_") && !slices.Contains(variables, name) {
			out = append(out, unknownVariable{name: name, near: nearestVariable(name)})
		}
	}
	return out
}

// nearestVariable is the variable the service reads that name most likely
// means, or "": of those a typo or two away (case aside) or whose words
// hold all of name's or are all in it (EMQ_REDIS, EMQ_KEYS), the fewest
// edits away.
func nearestVariable(name string) string {
	name = strings.ToUpper(name)
	words := strings.Split(strings.TrimPrefix(name, "EMQ_"), "_")
	best, fewest := "", 0
	for _, v := range variables {
		known := strings.Split(strings.TrimPrefix(v, "EMQ_"), "_")
		d := editDistance(name, v)
		likely := d <= 2 || allIn(words, known) || allIn(known, words)
		if likely && (best == "" || d < fewest) {
			best, fewest = v, d
		}
	}
	return best
}

// allIn reports whether every word of words is one of in.
func allIn(words, in []string) bool {
	for _, w := range words {
		if w == "" || !slices.Contains(in, w) {
			return false
		}
	}
	return true
}

// editDistance is the Levenshtein distance of a and b: the fewest
// one-byte insertions, deletions and substitutions that make a into b.
func editDistance(a, b string) int {
	prev, cur := make([]int, len(b)+1), make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
