package http_test

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/auth"
	emqhttp "github.com/echo-mq/echo_mq/internal/http"
	"github.com/echo-mq/echo_mq/internal/job"
	"github.com/echo-mq/echo_mq/internal/lease"
	"github.com/echo-mq/echo_mq/internal/redistest"
)

// The handler figures: each hot route of the worker plane driven through
// the router as cmd/api wires it (a worker API key, metrics, an info-level
// text log), against a redis-server of the benchmark's own. Run them with
//
//	go test -run '^$' -bench Handler -benchtime 3s ./internal/http
//
// Each route runs two ways: "http" over a keep-alive connection to an
// httptest.Server (the client's cost is in the figures too) and "recorder"
// straight into ServeHTTP with an httptest.ResponseRecorder (the service's
// cost alone). Between blocks of routed calls the run makes as many of the
// same lease.Service calls directly, with no HTTP, and reports their cost
// (direct-ns/op, direct-B/op, direct-allocs/op) and x-direct, ns/op over
// direct-ns/op. Batch routes also report ns/job.
//
// The wall time of a call is mostly redis-server's, another process, so
// each run also reports the CPU time this process spent per call, routed
// (cpu-ns/op) and direct (direct-cpu-ns/op): the difference is what the
// HTTP layer costs (and, over "http", the client). A CPU profile also holds
// the direct calls and the untimed set-up; look at the routed calls alone
// with pprof's -focus:
//
//	go test -run '^$' -bench 'Handler.*Batch/recorder' -benchtime 8s -cpuprofile /tmp/emq.cpu ./internal/http
//	go tool pprof -top -cum -focus 'Mux\).ServeHTTP' /tmp/emq.cpu

// payload100 is the 100-byte payload of the enqueued jobs, and result the
// result of the completed ones.
var (
	payload100 = []byte(`{"to":"ada@example.com","template":"welcome","vars":{"name":"Ada","plan":"pro"},"n":1234567,"x":123}`)
	result     = []byte(`{"ok":true,"took_ms":12}`)
)

const (
	benchKey    = "bench-worker-key-0123456789"
	holdLeaseMs = 3_600_000 // the benchmark holds its jobs for an hour
)

// BenchmarkHandlerHealthz is the floor: GET /healthz goes through net/http,
// chi and every middleware (request id, log, metrics, body limit) but not
// Redis; its direct call is a Redis PING, the go-redis floor.
func BenchmarkHandlerHealthz(b *testing.B) {
	forEachTransport(b, func(r *rig) workload {
		return workload{status: http.StatusOK,
			refill: repeat(input{method: http.MethodGet, path: "/healthz"}),
			direct: func(ctx context.Context, _ input) error { return r.rdb.Ping(ctx).Err() }}
	})
}

func BenchmarkHandlerEnqueue(b *testing.B) {
	forEachTransport(b, func(r *rig) workload {
		body := fmt.Appendf(nil, `{"payload":%s}`, payload100)
		one := []lease.NewJob{{Payload: payload100}}
		return workload{status: http.StatusCreated, perCall: 1,
			refill: repeat(input{path: jobsPath(r.queue), body: body}),
			direct: func(ctx context.Context, _ input) error {
				_, err := r.leases.Enqueue(ctx, r.queue, one)
				return err
			}}
	})
}

func BenchmarkHandlerEnqueueBatch(b *testing.B) {
	const size = 100
	forEachTransport(b, func(r *rig) workload {
		items := strings.Repeat(fmt.Sprintf(`{"payload":%s},`, payload100), size)
		body := []byte(`{"jobs":[` + strings.TrimSuffix(items, ",") + `]}`)
		batch := make([]lease.NewJob, size)
		for i := range batch {
			batch[i] = lease.NewJob{Payload: payload100}
		}
		return workload{status: http.StatusOK, perCall: size,
			refill: repeat(input{path: jobsPath(r.queue) + "/batch", body: body}),
			direct: func(ctx context.Context, _ input) error {
				_, err := r.leases.Enqueue(ctx, r.queue, batch)
				return err
			}}
	})
}

func BenchmarkHandlerClaim(b *testing.B) {
	for _, count := range []int{1, 16} {
		b.Run(fmt.Sprintf("count=%d", count), func(b *testing.B) {
			forEachTransport(b, func(r *rig) workload {
				const calls = 250 // per refill
				claim := input{path: "/queues/" + r.queue + "/claim",
					body: fmt.Appendf(nil, `{"count":%d,"lease_ms":%d}`, count, holdLeaseMs)}
				refill := repeat(claim)
				return workload{status: http.StatusOK, perCall: count,
					refill: func(tb testing.TB) []input {
						r.fill(tb, calls*count)
						return refill(tb)[:calls]
					},
					check: func(tb testing.TB, body []byte) {
						if got := decode[jobList](tb, reply{Body: body}).Jobs; len(got) != count {
							tb.Fatalf("claim answered %d jobs, want %d", len(got), count)
						}
					},
					direct: func(ctx context.Context, _ input) error {
						c, err := r.leases.Claim(ctx, r.queue, lease.ClaimParams{Count: count, Lease: time.Hour})
						if err == nil && len(c.Jobs) != count {
							err = fmt.Errorf("claimed %d jobs, want %d", len(c.Jobs), count)
						}
						return err
					}}
			})
		})
	}
}

func BenchmarkHandlerExtend(b *testing.B) {
	forEachTransport(b, func(r *rig) workload {
		held := r.hold(b, 1, 0)[0]
		body := fmt.Appendf(nil, `{"token":%d,"lease_ms":%d}`, held.Token, holdLeaseMs)
		p := lease.ExtendParams{Token: held.Token, Lease: time.Hour}
		return workload{status: http.StatusOK, perCall: 1,
			refill: repeat(input{path: jobPath(r.queue, held.ID, "lease"), body: body}),
			direct: func(ctx context.Context, _ input) error {
				_, err := r.leases.Extend(ctx, r.queue, held.ID, p)
				return err
			}}
	})
}

// BenchmarkHandlerComplete completes one held job with a small result,
// and with next=1 claims the next job in the same call. The claimed job
// is left active: the next call completes another held one.
func BenchmarkHandlerComplete(b *testing.B) {
	for _, next := range []int{0, 1} {
		b.Run(fmt.Sprintf("next=%d", next), func(b *testing.B) {
			forEachTransport(b, func(r *rig) workload {
				claimNext, params := "", (*lease.ClaimParams)(nil)
				if next > 0 {
					claimNext, params = fmt.Sprintf(`,"claim":{"count":%d}`, next), &lease.ClaimParams{Count: next}
				}
				return workload{status: http.StatusOK, perCall: 1,
					refill: func(tb testing.TB) []input {
						held := r.hold(tb, 500, 500*next)
						ins := make([]input, len(held))
						for i, j := range held {
							ins[i] = input{path: jobPath(r.queue, j.ID, "complete"), held: held[i : i+1],
								body: fmt.Appendf(nil, `{"token":%d,"result":%s%s}`, j.Token, result, claimNext)}
						}
						return ins
					},
					check: func(tb testing.TB, body []byte) {
						got := decode[struct {
							State string    `json:"state"`
							Next  []jobView `json:"next"`
						}](tb, reply{Body: body})
						if got.State != "completed" || len(got.Next) != next {
							tb.Fatalf("complete answered %s, want completed and %d next", body, next)
						}
					},
					direct: func(ctx context.Context, in input) error {
						j := in.held[0]
						_, claimed, err := r.leases.Complete(ctx, r.queue, j.ID, j.Token, result, params)
						if err == nil && len(claimed) != next {
							err = fmt.Errorf("claimed %d next jobs, want %d", len(claimed), next)
						}
						return err
					}}
			})
		})
	}
}

// BenchmarkHandlerCompleteBatch completes 16 held jobs in one call, each
// with a small result, and claims the next 16.
func BenchmarkHandlerCompleteBatch(b *testing.B) {
	const size, calls = 16, 50 // calls per refill
	forEachTransport(b, func(r *rig) workload {
		return workload{status: http.StatusOK, perCall: size,
			refill: func(tb testing.TB) []input {
				held := r.hold(tb, size*calls, size*calls)
				ins := make([]input, calls)
				for i := range ins {
					ins[i] = completeBatchInput(r.queue, held[i*size:(i+1)*size])
				}
				return ins
			},
			check: func(tb testing.TB, body []byte) {
				got := decode[batchResults](tb, reply{Body: body})
				for _, res := range got.Results {
					if res.State != "completed" {
						tb.Fatalf("batch complete answered %s, want every job completed", body)
					}
				}
				if len(got.Results) != size || got.Next == nil || len(*got.Next) != size {
					tb.Fatalf("batch complete answered %s, want %d results and %d next", body, size, size)
				}
			},
			direct: func(ctx context.Context, in input) error {
				batch := make([]lease.Completion, len(in.held))
				for i, j := range in.held {
					batch[i] = lease.Completion{ID: j.ID, Token: j.Token, Result: result}
				}
				_, next, err := r.leases.CompleteBatch(ctx, r.queue, batch, &lease.ClaimParams{Count: size})
				if err == nil && len(next) != size {
					err = fmt.Errorf("claimed %d next jobs, want %d", len(next), size)
				}
				return err
			}}
	})
}

// completeBatchInput completes held in one batch and claims as many next.
func completeBatchInput(queue string, held []job.Job) input {
	items := make([]string, len(held))
	for i, j := range held {
		items[i] = fmt.Sprintf(`{"id":%q,"token":%d,"result":%s}`, j.ID, j.Token, result)
	}
	body := fmt.Sprintf(`{"jobs":[%s],"claim":{"count":%d}}`, strings.Join(items, ","), len(held))
	return input{path: "/queues/" + queue + "/complete", body: []byte(body), held: held}
}

// input is one call of a benchmark: the request, and the held jobs it
// names, for the direct call.
type input struct {
	method string // "": POST
	path   string
	body   []byte
	held   []job.Job
}

// workload is what a benchmark calls, through the router and directly.
type workload struct {
	status  int                                       // the status the route answers
	perCall int                                       // jobs per call; ns/job is reported when > 1
	refill  func(tb testing.TB) []input               // untimed: the next calls, ready to send
	check   func(tb testing.TB, body []byte)          // optional: checks a first answer, untimed
	direct  func(ctx context.Context, in input) error // the same call on the lease.Service
}

// repeat is a refill that sends in again and again.
func repeat(in input) func(testing.TB) []input {
	ins := make([]input, 1000)
	for i := range ins {
		ins[i] = in
	}
	return func(testing.TB) []input { return ins }
}

// transport sends one request through the rig's router and fails the
// benchmark unless it answers want.
type transport struct {
	name string
	send func(r *rig, tb testing.TB, in input, want int)
}

var transports = []transport{{"http", (*rig).sendHTTP}, {"recorder", (*rig).sendRecorder}}

// forEachTransport runs the workload as a sub-benchmark per transport,
// each on a rig of its own.
func forEachTransport(b *testing.B, w func(r *rig) workload) {
	for _, tr := range transports {
		b.Run(tr.name, func(b *testing.B) {
			r := newRig(b)
			r.run(b, tr, w(r))
		})
	}
}

// interleave is how much routed time passes between two blocks of direct
// calls.
const interleave = 100 * time.Millisecond

// run times the workload's calls through tr and reports them next to the
// same calls made directly. The direct calls run in blocks between the
// routed ones, as many as there were routed calls since the last block, so
// that both meet Redis in the same state.
func (r *rig) run(b *testing.B, tr transport, w workload) {
	routed, d := feed{refill: w.refill}, direct{w: w, f: feed{refill: w.refill}}
	first := routed.next(b, b)
	status, body := r.record(b, first)
	if status != w.status {
		b.Fatalf("%s answered %d %s, want %d", first.path, status, body, w.status)
	}
	if w.check != nil {
		w.check(b, body)
	}
	b.ReportAllocs()
	m := meter{b: b}
	m.begin() // b's timer runs already
	calls, mark := 0, time.Duration(0)
	for b.Loop() {
		tr.send(r, b, routed.next(b, &m), w.status)
		if calls++; m.elapsed()-mark >= interleave {
			m.StopTimer()
			d.block(b, calls)
			m.StartTimer()
			calls, mark = 0, m.elapsed()
		}
	}
	m.end() // b.Loop stopped b's timer
	d.block(b, calls)
	report(b, w, m, d)
}

// report reports the routed calls' cost per call and per job, the direct
// calls' and their ratio.
func report(b *testing.B, w workload, m meter, d direct) {
	perOp := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	if w.perCall > 1 {
		b.ReportMetric(perOp/float64(w.perCall), "ns/job")
	}
	b.ReportMetric(float64(m.cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
	per := func(v float64) float64 { return v / float64(d.calls) }
	directNs := per(float64(d.m.took.Nanoseconds()))
	b.ReportMetric(directNs, "direct-ns/op")
	b.ReportMetric(per(float64(d.m.cpu.Nanoseconds())), "direct-cpu-ns/op")
	b.ReportMetric(per(float64(d.m.bytes)), "direct-B/op")
	b.ReportMetric(per(float64(d.m.allocs)), "direct-allocs/op")
	b.ReportMetric(perOp/directNs, "x-direct")
}

// direct makes a workload's calls on the lease.Service, with no HTTP, and
// counts what they cost.
type direct struct {
	w     workload
	f     feed
	m     meter
	calls int
}

// block makes n direct calls.
func (d *direct) block(b *testing.B, n int) {
	ctx := context.Background()
	d.m.StartTimer()
	for range n {
		if err := d.w.direct(ctx, d.f.next(b, &d.m)); err != nil {
			b.Fatal(err)
		}
	}
	d.m.StopTimer()
	d.calls += n
}

// timer is what a refill pauses.
type timer interface {
	StopTimer()
	StartTimer()
}

// feed hands out a workload's inputs, refilling with the timer stopped
// when it runs dry.
type feed struct {
	refill func(testing.TB) []input
	ready  []input
}

func (f *feed) next(tb testing.TB, t timer) input {
	if len(f.ready) == 0 {
		t.StopTimer()
		f.ready = f.refill(tb)
		t.StartTimer()
	}
	in := f.ready[0]
	f.ready = f.ready[1:]
	return in
}

// meter counts the process's CPU time (cpuTime: every goroutine's, the
// HTTP client's too) while it runs, since the wall time of a call is
// mostly Redis's. Over a testing.B it also starts and stops the
// benchmark's timer; on its own it also counts wall time and allocations,
// as testing.B does.
type meter struct {
	b                       *testing.B // nil: the meter times on its own
	on                      bool
	start                   time.Time
	startCPU                time.Duration
	startAllocs, startBytes uint64
	took, cpu               time.Duration
	allocs, bytes           uint64
}

func (m *meter) StartTimer() {
	if m.b != nil {
		m.b.StartTimer()
	} else {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		m.startAllocs, m.startBytes = ms.Mallocs, ms.TotalAlloc
	}
	m.begin()
}

func (m *meter) StopTimer() {
	m.end()
	if m.b != nil {
		m.b.StopTimer()
		return
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	m.allocs += ms.Mallocs - m.startAllocs
	m.bytes += ms.TotalAlloc - m.startBytes
}

func (m *meter) begin() { m.on, m.startCPU, m.start = true, cpuTime(), time.Now() }

func (m *meter) end() {
	m.took += time.Since(m.start)
	m.cpu += cpuTime() - m.startCPU
	m.on = false
}

func (m *meter) elapsed() time.Duration {
	if m.on {
		return m.took + time.Since(m.start)
	}
	return m.took
}

// rig is the handler wired as cmd/api wires it, on a redis-server of the
// benchmark's own (a run leaves hundreds of thousands of job rows behind),
// with a lease.Service of its own for the untimed set-up and the direct
// calls.
type rig struct {
	h      *harness
	rdb    redis.UniversalClient
	leases *lease.Service
	queue  string
	srv    *httptest.Server
	client *http.Client
}

func newRig(b *testing.B) *rig {
	b.Helper()
	if len(payload100) != 100 {
		b.Fatalf("the payload is %d bytes, want 100", len(payload100))
	}
	server := redistest.StartServer(b)
	rdb := redis.NewClient(&redis.Options{Addr: server.Addr, MaxRetries: -1}) // as cmd/api connects
	b.Cleanup(func() { rdb.Close() })
	keys, err := auth.ParseKeys("worker:" + benchKey)
	if err != nil {
		b.Fatal(err)
	}
	h := newHarness(b, rdb, withMetrics(), withConfig(func(c *emqhttp.Config) {
		c.Keys = keys
		// cmd/api's default EMQ_LOG_LEVEL: the per-request line is Debug.
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}))
	r := &rig{h: h, rdb: rdb, leases: lease.NewService(rdb, h.prefix), queue: redistest.Queue(b),
		srv: httptest.NewServer(h.handler), client: &http.Client{}}
	b.Cleanup(r.client.CloseIdleConnections)
	b.Cleanup(r.srv.Close)
	return r
}

// sendHTTP sends in over the rig's keep-alive client.
func (r *rig) sendHTTP(tb testing.TB, in input, want int) {
	req := newRequest(tb, r.srv.URL, in)
	resp, err := r.client.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != want {
		got, _ := io.ReadAll(resp.Body)
		tb.Fatalf("%s answered %d %s, want %d", in.path, resp.StatusCode, got, want)
	}
	if _, err := io.Copy(io.Discard, resp.Body); err != nil { // drained, so the connection is kept
		tb.Fatal(err)
	}
}

// sendRecorder sends in straight into the router.
func (r *rig) sendRecorder(tb testing.TB, in input, want int) {
	if status, got := r.record(tb, in); status != want {
		tb.Fatalf("%s answered %d %s, want %d", in.path, status, got, want)
	}
}

// record sends in straight into the router and returns the answer.
func (r *rig) record(tb testing.TB, in input) (int, []byte) {
	rec := httptest.NewRecorder()
	r.h.handler.ServeHTTP(rec, newRequest(tb, "", in))
	return rec.Code, rec.Body.Bytes()
}

// newRequest is in as a request to base+path, with the worker key and,
// when it has a body, a JSON body type.
func newRequest(tb testing.TB, base string, in input) *http.Request {
	var body io.Reader
	if in.body != nil {
		body = bytes.NewReader(in.body)
	}
	req, err := http.NewRequest(cmp.Or(in.method, http.MethodPost), base+in.path, body)
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+benchKey)
	if in.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return req
}

// fill enqueues n pending jobs with the 100-byte payload, 1000 a call.
func (r *rig) fill(tb testing.TB, n int) {
	tb.Helper()
	for n > 0 {
		batch := make([]lease.NewJob, min(n, 1000))
		for i := range batch {
			batch[i] = lease.NewJob{Payload: payload100}
		}
		if _, err := r.leases.Enqueue(context.Background(), r.queue, batch); err != nil {
			tb.Fatal(err)
		}
		n -= len(batch)
	}
}

// hold enqueues n+spare jobs, claims n of them for an hour and returns
// them; the spare stay pending, for the calls that claim the next job.
func (r *rig) hold(tb testing.TB, n, spare int) []job.Job {
	tb.Helper()
	r.fill(tb, n+spare)
	held := make([]job.Job, 0, n)
	for len(held) < n {
		c, err := r.leases.Claim(context.Background(), r.queue, lease.ClaimParams{Count: min(n-len(held), 100), Lease: time.Hour})
		if err != nil || len(c.Jobs) == 0 {
			tb.Fatalf("claim: %v, %d jobs", err, len(c.Jobs))
		}
		held = append(held, c.Jobs...)
	}
	return held
}
