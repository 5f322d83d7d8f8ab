package http_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/admin"
	"github.com/echo-mq/echo_mq/internal/batch"
	"github.com/echo-mq/echo_mq/internal/events"
	"github.com/echo-mq/echo_mq/internal/history"
	emqhttp "github.com/echo-mq/echo_mq/internal/http"
	"github.com/echo-mq/echo_mq/internal/keyspace"
	"github.com/echo-mq/echo_mq/internal/lease"
	"github.com/echo-mq/echo_mq/internal/memstore"
	"github.com/echo-mq/echo_mq/internal/metrics"
	"github.com/echo-mq/echo_mq/internal/push"
	"github.com/echo-mq/echo_mq/internal/redistest"
	"github.com/echo-mq/echo_mq/internal/scheduler"
	"github.com/echo-mq/echo_mq/internal/stall"
	"github.com/echo-mq/echo_mq/internal/wake"
)

// A backend is a Redis the contract runs against: the real redis-server
// that TestMain started, the embedded store the service falls back to, or
// a real three-master Redis Cluster served by two service replicas (each
// request goes to the next replica in turn, so a long poll waits on one
// replica while the enqueue that answers it goes through the other).
type backend struct {
	name     string
	replicas int // service replicas, each with a client of its own
	connect  func(tb testing.TB, opts *redis.Options) redis.UniversalClient
}

var backends = []backend{
	{name: "redis", replicas: 1, connect: func(tb testing.TB, opts *redis.Options) redis.UniversalClient {
		tb.Helper()
		opts.Addr = redistest.Addr()
		return closeLater(tb, redis.NewClient(opts))
	}},
	{name: "embedded", replicas: 1, connect: func(tb testing.TB, opts *redis.Options) redis.UniversalClient {
		tb.Helper()
		opts.Addr = miniredis.RunT(tb).Addr()
		memstore.Configure(opts) // as cmd/api's client of it: no read deadline
		return closeLater(tb, redis.NewClient(opts))
	}},
	{name: "cluster", replicas: 2, connect: func(tb testing.TB, opts *redis.Options) redis.UniversalClient {
		tb.Helper()
		return closeLater(tb, redis.NewClusterClient(&redis.ClusterOptions{
			Addrs:    redistest.SharedCluster(tb).Addrs(),
			PoolSize: opts.PoolSize, MaxIdleConns: opts.MaxIdleConns,
		}))
	}},
}

func closeLater(tb testing.TB, c redis.UniversalClient) redis.UniversalClient {
	tb.Cleanup(func() { c.Close() })
	return c
}

// option tunes the Redis client, the lease service or the handler's Config
// of a harness, or runs a schedule timer in each replica.
type option struct {
	client func(*redis.Options)
	config func(*emqhttp.Config)
	lease  []lease.Option
	timers bool
	push   string // EMQ_PUSH_ALLOW; not "": a push deliverer in each replica
	queues int    // EMQ_MAX_QUEUES; 0: no limit
}

// withMaxQueues limits the queues there may be (EMQ_MAX_QUEUES).
func withMaxQueues(n int) option { return option{queues: n} }

// withPush allows push targets on the hosts of allow (EMQ_PUSH_ALLOW) and
// runs a push deliverer in each replica, as cmd/api does.
func withPush(allow string) option { return option{push: allow} }

// withTimers runs a schedule timer in each replica, as cmd/api does.
func withTimers() option { return option{timers: true} }

func withClient(f func(*redis.Options)) option  { return option{client: f} }
func withConfig(f func(*emqhttp.Config)) option { return option{config: f} }

// withLease passes opts to the harness's lease.Service, e.g.
// lease.KeepCompleted.
func withLease(opts ...lease.Option) option { return option{lease: opts} }

// withMetrics wires real metrics into the handler, as cmd/api does: request
// and transition counters, and queue depth of the most recently active
// queues read through the harness's admin service on each scrape, served
// at GET /metrics.
func withMetrics(opts ...metrics.Option) option {
	return withConfig(func(c *emqhttp.Config) {
		m := metrics.New(depthOver(c.Admin.(*admin.Service), c.Activity.(*keyspace.Activity)), opts...)
		c.Metrics, c.MetricsHandler = m, m.Handler()
	})
}

// depthOver reads the depth of the limit most recently active queues, and
// one entry more when there were more (cmd/api's depthOf).
func depthOver(adm *admin.Service, act *keyspace.Activity) metrics.DepthFunc {
	return func(ctx context.Context, limit int) ([]metrics.QueueDepth, error) {
		names, more, err := act.Recent(ctx, limit)
		if err != nil {
			return nil, err
		}
		infos, err := adm.QueuesNamed(ctx, names)
		out := make([]metrics.QueueDepth, len(infos), len(infos)+1)
		for i, info := range infos {
			out[i] = metrics.QueueDepth{Queue: info.Name, Paused: info.Paused, Counts: info.Counts}
		}
		if more {
			out = append(out, metrics.QueueDepth{}) // one more says the list was cut
		}
		return out, err
	}
}

// withCORS allows the browser origins to call the API.
func withCORS(origins ...string) option {
	return withConfig(func(c *emqhttp.Config) { c.CORSOrigins = origins })
}

// forEachBackend runs fn as a parallel subtest per backend, each with a
// harness of its own under a key prefix of its own.
func forEachBackend(t *testing.T, fn func(t *testing.T, h *harness), opts ...option) {
	t.Helper()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			ro := &redis.Options{}
			for _, o := range opts {
				if o.client != nil {
					o.client(ro)
				}
			}
			clients := make([]redis.UniversalClient, b.replicas)
			for i := range clients {
				clients[i] = b.connect(t, ro)
			}
			fn(t, newReplicas(t, clients, opts...))
		})
	}
}

// harness is the real router over real services on one Redis, as one
// service replica or several.
type harness struct {
	rdb      redis.UniversalClient // the first replica's client
	clients  []redis.UniversalClient
	replicas []http.Handler
	hubs     []*wake.Hub // each replica's
	prefix   string
	handler  http.Handler
	stopping chan struct{}
	stopOnce *sync.Once
}

// newHarness wires emqhttp.NewHandler as cmd/api does, with a wake hub
// running until the test ends, and a key prefix unique to the test.
func newHarness(tb testing.TB, rdb redis.UniversalClient, opts ...option) *harness {
	tb.Helper()
	return newReplicas(tb, []redis.UniversalClient{rdb}, opts...)
}

// newReplicas wires one service replica per client, all under one key
// prefix and stopped together; with several, requests go to them in turn.
func newReplicas(tb testing.TB, clients []redis.UniversalClient, opts ...option) *harness {
	tb.Helper()
	h := &harness{rdb: clients[0], clients: clients, prefix: "emqt-" + redistest.Queue(tb),
		stopping: make(chan struct{}), stopOnce: new(sync.Once)}
	for _, rdb := range clients {
		h.replicas = append(h.replicas, h.replica(tb, rdb, opts))
	}
	tb.Cleanup(h.stop) // before the hubs stop: a test that failed early leaves no poll waiting
	h.handler = &inTurn{replicas: h.replicas}
	if len(clients) == 1 {
		h.handler = h.replicas[0]
	}
	return h
}

// only is the harness as seen through replica i alone, for what is per
// process (a cap of waiters, a process's counters).
func (h *harness) only(i int) *harness {
	one := *h
	one.handler = h.replicas[i]
	return &one
}

// sleeping is how many long polls of q sleep on every replica.
func (h *harness) sleeping(q string) int {
	n := 0
	for _, hub := range h.hubs {
		n += hub.Sleeping(q)
	}
	return n
}

// poolStats adds up the connection pools of every replica's client.
func (h *harness) poolStats() redis.PoolStats {
	var sum redis.PoolStats
	for _, c := range h.clients {
		s := c.(interface{ PoolStats() *redis.PoolStats }).PoolStats()
		sum.Hits += s.Hits
		sum.Misses += s.Misses
		sum.TotalConns += s.TotalConns
	}
	return sum
}

// replica wires one replica's handler over rdb, its wake hub running
// until the test ends.
func (h *harness) replica(tb testing.TB, rdb redis.UniversalClient, opts []option) http.Handler {
	logger := slog.New(slog.DiscardHandler)
	hub := wake.NewHub(rdb, h.prefix, logger)
	h.hubs = append(h.hubs, hub)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); hub.Run(ctx) }()
	tb.Cleanup(func() { cancel(); <-done })
	var allow push.Allow
	maxQueues := 0
	for _, o := range opts {
		maxQueues = max(maxQueues, o.queues)
	}
	// One registry of queues for the replica's services, as cmd/api has.
	reg := keyspace.NewRegistry(rdb, h.prefix, keyspace.RegistryMax(maxQueues))
	leaseOpts := []lease.Option{lease.Registry(reg)}
	for _, o := range opts {
		leaseOpts = append(leaseOpts, o.lease...)
		if o.push != "" {
			var err error
			if allow, err = push.ParseAllow(o.push); err != nil {
				tb.Fatal(err)
			}
		}
		if o.timers {
			timer := scheduler.NewTimer(scheduler.NewService(rdb, h.prefix, scheduler.Registry(reg)), scheduler.TimerConfig{Logger: logger})
			timerDone := make(chan struct{})
			go func() { defer close(timerDone); timer.Run(ctx) }()
			tb.Cleanup(func() { cancel(); <-timerDone })
		}
	}
	leases := lease.NewService(rdb, h.prefix, leaseOpts...)
	batches := batch.NewService(rdb, h.prefix, leases)
	dispatcher := batches.NewDispatcher(batch.DispatcherConfig{Interval: 20 * time.Millisecond,
		Encode: emqhttp.BatchCallbackBody, Logger: logger})
	dispatchDone := make(chan struct{})
	go func() { defer close(dispatchDone); dispatcher.Run(ctx) }()
	tb.Cleanup(func() { cancel(); <-dispatchDone })
	cfg := emqhttp.Config{
		Leases:    leases,
		Batches:   batches,
		Admin:     admin.NewService(rdb, h.prefix, admin.Registry(reg)),
		Schedules: scheduler.NewService(rdb, h.prefix, scheduler.Registry(reg)),
		Pushes:    push.NewStore(rdb, h.prefix, push.Registry(reg)), PushAllow: allow,
		History:  history.NewReader(rdb, h.prefix),
		Sweeper:  stall.NewService(rdb, h.prefix),
		Waiters:  hub,
		Events:   events.NewLog(rdb, h.prefix),
		Activity: keyspace.NewActivity(rdb, h.prefix),
		Ready:    func(ctx context.Context) error { return rdb.Ping(ctx).Err() },
		Stopping: h.stopping,
		Logger:   logger,
	}
	for _, o := range opts {
		if o.config != nil {
			o.config(&cfg)
		}
	}
	if allow.On() {
		pc := push.Config{Store: cfg.Pushes, Leases: leases, Waiters: hub, Allow: allow, Encode: emqhttp.PushBody,
			MaxResultBytes: emqhttp.DefaultMaxValueBytes, Interval: 100 * time.Millisecond, Logger: cfg.Logger}
		if m, ok := cfg.Metrics.(*metrics.Metrics); ok {
			pc.OnDelivery = m.PushDelivery
		}
		d := push.NewDeliverer(pc)
		pushDone := make(chan struct{})
		go func() { defer close(pushDone); d.Run(ctx) }()
		tb.Cleanup(func() { cancel(); <-pushDone })
	}
	return emqhttp.NewHandler(cfg)
}

// inTurn sends each request to the next replica, as a round-robin load
// balancer does.
type inTurn struct {
	replicas []http.Handler
	next     atomic.Uint64
}

func (t *inTurn) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	t.replicas[(t.next.Add(1)-1)%uint64(len(t.replicas))].ServeHTTP(w, r)
}

// stop closes the handler's Stopping channel, as a graceful shutdown does.
func (h *harness) stop() { h.stopOnce.Do(func() { close(h.stopping) }) }

// reply is an HTTP answer.
type reply struct {
	Status int
	Header http.Header
	Body   []byte
}

func (r reply) String() string { return fmt.Sprintf("%d %s", r.Status, r.Body) }

// do sends a request through the router. A string or []byte body is sent
// as it is, anything else as its JSON; both as application/json.
func (h *harness) do(tb testing.TB, method, path string, body any) reply {
	tb.Helper()
	var raw []byte
	switch b := body.(type) {
	case nil:
	case string:
		raw = []byte(b)
	case []byte:
		raw = b
	default:
		var err error
		if raw, err = json.Marshal(b); err != nil {
			tb.Fatal(err)
		}
	}
	contentType := ""
	if body != nil {
		contentType = "application/json"
	}
	return h.send(tb, method, path, contentType, raw)
}

// send sends a request with the given Content-Type ("" for none), and
// checks the request and its answer against api/openapi.yaml.
func (h *harness) send(tb testing.TB, method, path, contentType string, body []byte) reply {
	tb.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req := httptest.NewRequest(method, path, rd)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	return h.serve(tb, req, body)
}

// serve sends req, whose body is body, through the router, and checks the
// request and its answer against api/openapi.yaml.
func (h *harness) serve(tb testing.TB, req *http.Request, body []byte) reply {
	tb.Helper()
	rec := httptest.NewRecorder()
	h.handler.ServeHTTP(rec, req)
	emqhttp.CheckContract(tb, req, body, rec.Code, rec.Header(), rec.Body.Bytes())
	return reply{Status: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}
}

// jobView is a job as the API shows it.
type jobView struct {
	ID              string          `json:"id"`
	Queue           string          `json:"queue"`
	State           string          `json:"state"`
	Payload         json.RawMessage `json:"payload"`
	Result          json.RawMessage `json:"result"`
	Progress        json.RawMessage `json:"progress"`
	Priority        int             `json:"priority"`
	Attempts        int             `json:"attempts"`
	MaxAttempts     int             `json:"max_attempts"`
	Stalled         int             `json:"stalled"`
	LastError       string          `json:"last_error"`
	CancelRequested bool            `json:"cancel_requested"`
	CancelReason    string          `json:"cancel_reason"`
	Group           string          `json:"group"`
	DedupeKey       string          `json:"dedupe_key"`
	ExpiresAt       string          `json:"expires_at"`
	TimeoutMs       int64           `json:"timeout_ms"`
	Traceparent     string          `json:"traceparent"`
	BatchID         string          `json:"batch_id"`
	DependsOn       []string        `json:"depends_on"`
	OnDepFailure    string          `json:"on_dependency_failure"`
	Token           int64           `json:"token"`
	CreatedAt       string          `json:"created_at"`
	RunAt           string          `json:"run_at"`
	StartedAt       string          `json:"started_at"`
	LeaseExpiresAt  string          `json:"lease_expires_at"`
	FinishedAt      string          `json:"finished_at"`
}

type jobList struct {
	Jobs []jobView `json:"jobs"`
}

type problem struct {
	Type     string `json:"type"`
	Title    string `json:"title"`
	Status   int    `json:"status"`
	Detail   string `json:"detail"`
	Code     string `json:"code"`
	Instance string `json:"instance"`
	Errors   []struct {
		Field   string `json:"field"`
		Message string `json:"message"`
	} `json:"errors"`
}

// decode reads r's JSON body into a T.
func decode[T any](tb testing.TB, r reply) T {
	tb.Helper()
	var v T
	if err := json.Unmarshal(r.Body, &v); err != nil {
		tb.Fatalf("decode %T from %s: %v", v, r, err)
	}
	return v
}

// must fails the test unless r has the status, and decodes its body.
func must[T any](tb testing.TB, r reply, status int) T {
	tb.Helper()
	if r.Status != status {
		tb.Fatalf("got %s, want status %d", r, status)
	}
	return decode[T](tb, r)
}

// wantProblem fails the test unless r is an RFC 9457 problem with the
// status and code.
func wantProblem(tb testing.TB, r reply, status int, code string) problem {
	tb.Helper()
	if r.Status != status {
		tb.Fatalf("got %s, want status %d (%s)", r, status, code)
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/problem+json") {
		tb.Errorf("Content-Type = %q, want application/problem+json", ct)
	}
	p := decode[problem](tb, r)
	if p.Code != code || p.Status != status || p.Type == "" || p.Title == "" || p.Detail == "" {
		tb.Errorf("got problem %+v, want code %s, status %d and type, title, detail set", p, code, status)
	}
	return p
}

// wantField fails the test unless p names field among its errors.
func wantField(tb testing.TB, p problem, field string) {
	tb.Helper()
	var got []string
	for _, e := range p.Errors {
		if e.Field == field && e.Message != "" {
			return
		}
		got = append(got, e.Field)
	}
	tb.Errorf("problem errors name fields %q, want %q", got, field)
}

func jobsPath(q string) string { return "/queues/" + q + "/jobs" }
func jobPath(q, id string, verb ...string) string {
	return strings.Join(append([]string{jobsPath(q), id}, verb...), "/")
}

// enqueue enqueues body on q and wants a new job.
func (h *harness) enqueue(tb testing.TB, q string, body any) jobView {
	tb.Helper()
	return must[jobView](tb, h.do(tb, "POST", jobsPath(q), body), http.StatusCreated)
}

// add enqueues a job per id, payload {"id": id}, in order.
func (h *harness) add(tb testing.TB, q string, ids ...string) {
	tb.Helper()
	for _, id := range ids {
		h.enqueue(tb, q, map[string]any{"id": id, "payload": map[string]string{"id": id}})
	}
}

// claim claims from q and wants 200.
func (h *harness) claim(tb testing.TB, q string, body any) []jobView {
	tb.Helper()
	return must[jobList](tb, h.do(tb, "POST", "/queues/"+q+"/claim", body), http.StatusOK).Jobs
}

// claimOne claims one job of q for leaseMs and wants exactly one, id.
func (h *harness) claimOne(tb testing.TB, q, id string, leaseMs int) jobView {
	tb.Helper()
	jobs := h.claim(tb, q, map[string]any{"lease_ms": leaseMs})
	if len(jobs) != 1 || jobs[0].ID != id {
		tb.Fatalf("claim got %v, want job %s", ids(jobs), id)
	}
	return jobs[0]
}

// get reads job id of q and wants 200.
func (h *harness) get(tb testing.TB, q, id string) jobView {
	tb.Helper()
	return must[jobView](tb, h.do(tb, "GET", jobPath(q, id), nil), http.StatusOK)
}

// wantState fails the test unless job id of q is in state, by the API and
// by the sorted set that holds it.
func (h *harness) wantState(tb testing.TB, q, id, state string) jobView {
	tb.Helper()
	j := h.get(tb, q, id)
	if j.State != state {
		tb.Errorf("job %s state = %q, want %q", id, j.State, state)
	}
	for _, set := range []string{"pending", "active", "delayed", "waiting", "completed", "dead", "cancelled"} {
		if got, want := h.inSet(tb, q, set, id), set == state; got != want {
			tb.Errorf("job %s in %s set = %v, want %v", id, set, got, want)
		}
	}
	return j
}

// inSet reports whether id is a member of q's sorted set for state.
func (h *harness) inSet(tb testing.TB, q, state, id string) bool {
	tb.Helper()
	err := h.rdb.ZScore(context.Background(), h.key(q, state), id).Err()
	if err != nil && err != redis.Nil {
		tb.Fatal(err)
	}
	return err == nil
}

// key is one of q's keys, e.g. h.key(q, "meta").
func (h *harness) key(q, name string) string { return h.prefix + ":{" + q + "}:" + name }

// pause pauses q by its meta flag.
func (h *harness) pause(tb testing.TB, q string) {
	tb.Helper()
	if err := h.rdb.HSet(context.Background(), h.key(q, "meta"), "paused", 1).Err(); err != nil {
		tb.Fatal(err)
	}
}

type swept struct {
	Recovered []string `json:"recovered"`
	Dead      []string `json:"dead"`
	Cancelled []string `json:"cancelled"`
	Retried   []string `json:"retried"`
}

func (s swept) all() []string {
	return append(append(append(append([]string{}, s.Recovered...), s.Dead...), s.Cancelled...), s.Retried...)
}

// sweepUntil sweeps q with body until every id has been swept (a lease
// lapses on the server's clock, so it polls rather than trusting a sleep),
// and returns what the sweeps moved.
func (h *harness) sweepUntil(tb testing.TB, q string, body any, want ...string) swept {
	tb.Helper()
	var total swept
	deadline := time.Now().Add(10 * time.Second)
	for {
		s := must[swept](tb, h.do(tb, "POST", "/queues/"+q+"/sweep", body), http.StatusOK)
		total.Recovered = append(total.Recovered, s.Recovered...)
		total.Dead = append(total.Dead, s.Dead...)
		total.Cancelled = append(total.Cancelled, s.Cancelled...)
		total.Retried = append(total.Retried, s.Retried...)
		if containsAll(total.all(), want) {
			return total
		}
		if time.Now().After(deadline) {
			tb.Fatalf("sweeps moved %+v, want %v within 10s", total, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitPast sleeps until the local clock is a little past stamp, a lease
// deadline on the server's clock (the same machine's).
func waitPast(tb testing.TB, stamp string) {
	tb.Helper()
	at := parseStamp(tb, stamp)
	time.Sleep(time.Until(at.Add(50 * time.Millisecond)))
}

func parseStamp(tb testing.TB, s string) time.Time {
	tb.Helper()
	at, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		tb.Fatalf("timestamp %q: %v", s, err)
	}
	return at
}

// snapshot dumps every key under the harness prefix with its contents, to
// prove a refused request changed nothing.
func (h *harness) snapshot(tb testing.TB) map[string]string {
	tb.Helper()
	ctx := context.Background()
	keys := scanKeys(tb, h.rdb, h.prefix+"*")
	out := make(map[string]string, len(keys))
	for _, k := range keys {
		var v any
		switch typ := h.rdb.Type(ctx, k).Val(); typ {
		case "hash":
			v = h.rdb.HGetAll(ctx, k).Val()
		case "zset":
			v = h.rdb.ZRangeWithScores(ctx, k, 0, -1).Val()
		case "set":
			m := h.rdb.SMembers(ctx, k).Val()
			sort.Strings(m)
			v = m
		case "string":
			v = h.rdb.Get(ctx, k).Val()
		case "list":
			v = h.rdb.LRange(ctx, k, 0, -1).Val()
		default:
			v = typ
		}
		out[k] = fmt.Sprint(v)
	}
	return out
}

// sameJSON fails the test unless got and want are the same JSON value,
// numbers compared digit for digit.
func sameJSON(tb testing.TB, what string, got, want []byte) {
	tb.Helper()
	g, err1 := decodeNumbers(got)
	w, err2 := decodeNumbers(want)
	if err1 != nil || err2 != nil || !reflect.DeepEqual(g, w) {
		tb.Errorf("%s = %s, want %s", what, got, want)
	}
}

func decodeNumbers(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}

func ids(jobs []jobView) []string {
	out := make([]string, len(jobs))
	for i, j := range jobs {
		out[i] = j.ID
	}
	return out
}

func containsAll(have, want []string) bool {
	set := map[string]bool{}
	for _, h := range have {
		set[h] = true
	}
	for _, w := range want {
		if !set[w] {
			return false
		}
	}
	return true
}

// unchanged fails the test unless the keys under the prefix are as before.
func (h *harness) unchanged(tb testing.TB, before map[string]string, what string) {
	tb.Helper()
	if after := h.snapshot(tb); !reflect.DeepEqual(after, before) {
		tb.Errorf("%s changed Redis:\ngot  %v\nwant %v", what, after, before)
	}
}

// queueView is a queue as the API shows it.
type queueView struct {
	Name   string           `json:"name"`
	Paused bool             `json:"paused"`
	Counts map[string]int64 `json:"counts"`
}

// queuePage is a page of GET /queues.
type queuePage struct {
	Queues     []queueView `json:"queues"`
	NextCursor *string     `json:"next_cursor"`
}

// jobPage is a page of GET /queues/{queue}/jobs.
type jobPage struct {
	Jobs       []jobView `json:"jobs"`
	NextCursor *string   `json:"next_cursor"`
}

// streamEntries reads q's event stream straight from Redis (XRANGE), each
// entry's fields with its id under "id".
func (h *harness) streamEntries(tb testing.TB, q string) []map[string]string {
	tb.Helper()
	msgs, err := h.rdb.XRange(context.Background(), h.key(q, "events"), "-", "+").Result()
	if err != nil {
		tb.Fatal(err)
	}
	out := make([]map[string]string, len(msgs))
	for i, m := range msgs {
		out[i] = map[string]string{"id": m.ID}
		for k, v := range m.Values {
			out[i][k] = fmt.Sprint(v)
		}
	}
	return out
}

// entriesOf keeps the entries of kind ("" for any) about job id ("" for
// queue-level entries too).
func entriesOf(entries []map[string]string, kind, id string) []map[string]string {
	var out []map[string]string
	for _, e := range entries {
		if (kind == "" || e["kind"] == kind) && (id == "" || e["job"] == id) {
			out = append(out, e)
		}
	}
	return out
}

// keysOf lists the keys of q under the harness prefix that are left in
// Redis (SCAN "<prefix>:{<queue>}*").
func (h *harness) keysOf(tb testing.TB, q, suffix string) []string {
	tb.Helper()
	return scanKeys(tb, h.rdb, h.prefix+":{"+q+"}"+suffix)
}

// scanKeys lists the keys matching pattern: with SCAN on one node, on
// every master of a Cluster.
func scanKeys(tb testing.TB, rdb redis.UniversalClient, pattern string) []string {
	tb.Helper()
	ctx := context.Background()
	var mu sync.Mutex
	var keys []string
	scan := func(ctx context.Context, node redis.Cmdable) error {
		iter := node.Scan(ctx, 0, pattern, 1000).Iterator()
		for iter.Next(ctx) {
			mu.Lock()
			keys = append(keys, iter.Val())
			mu.Unlock()
		}
		return iter.Err()
	}
	var err error
	if cluster, ok := rdb.(*redis.ClusterClient); ok {
		err = cluster.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error { return scan(ctx, node) })
	} else {
		err = scan(ctx, rdb)
	}
	if err != nil {
		tb.Fatal(err)
	}
	sort.Strings(keys)
	return keys
}

// queueOf reads GET /queues/{q} and wants 200.
func (h *harness) queueOf(tb testing.TB, q string) queueView {
	tb.Helper()
	return must[queueView](tb, h.do(tb, "GET", "/queues/"+q, nil), http.StatusOK)
}

// batchOf is an enqueue batch of ids prefix+from ... prefix+(from+n-1),
// zero-padded to 5 digits so that id order is number order, each with
// extra fields (e.g. `,"delay_ms":60000`).
func batchOf(prefix string, from, n int, extra string) string {
	jobs := make([]string, n)
	for i := range jobs {
		jobs[i] = fmt.Sprintf(`{"id":"%s%05d","payload":%d%s}`, prefix, from+i, from+i, extra)
	}
	return `{"jobs":[` + strings.Join(jobs, ",") + `]}`
}

// enqueueBatch enqueues a batch body on q and wants 200.
func (h *harness) enqueueBatch(tb testing.TB, q, body string) []jobView {
	tb.Helper()
	return must[jobList](tb, h.do(tb, "POST", jobsPath(q)+"/batch", body), http.StatusOK).Jobs
}

// completeBatch completes the held jobs in one batch complete, with the
// body's other fields in extra (e.g. `,"claim":{"count":100}`), wants every
// one completed and returns the next jobs it claimed.
func (h *harness) completeBatch(tb testing.TB, q string, held []jobView, extra string) []jobView {
	tb.Helper()
	items := make([]string, len(held))
	for i, j := range held {
		items[i] = fmt.Sprintf(`{"id":%q,"token":%d}`, j.ID, j.Token)
	}
	r := h.do(tb, "POST", "/queues/"+q+"/complete", `{"jobs":[`+strings.Join(items, ",")+`]`+extra+`}`)
	got := must[batchResults](tb, r, http.StatusOK)
	if len(got.Results) != len(held) {
		tb.Fatalf("batch complete of %d jobs answered %d results", len(held), len(got.Results))
	}
	for i, res := range got.Results {
		if res.State != "completed" || res.ID != held[i].ID {
			tb.Fatalf("batch complete result %d = %+v, want %s completed", i, res, held[i].ID)
		}
	}
	if got.Next == nil {
		return nil
	}
	return *got.Next
}
