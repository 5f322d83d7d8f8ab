package http_test

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/redis/go-redis/v9"

	emqhttp "github.com/echo-mq/echo_mq/internal/http"
	"github.com/echo-mq/echo_mq/internal/keyspace"
	"github.com/echo-mq/echo_mq/internal/redistest"
)

// The fuzz targets send random bodies (and, for FuzzPath, random paths)
// through the real router to real services on the test's redis-server, and
// check what every answer must be, whatever was sent:
//
//   - never a 5xx;
//   - JSON that parses: application/json, or for a 4xx an RFC 9457
//     application/problem+json body whose code is one of the known ones and
//     goes with its status;
//   - a 4xx changed no key ("A bad request never changes any state",
//     docs/design.md#the-contract-in-brief; a refused verb does not either);
//   - every key under the rig's prefix is one of a queue's keys, named by a
//     valid queue name and job id: nothing reaches a key through a name;
//   - a body that is not JSON is never accepted (the body targets), nor one
//     a gateway could read otherwise: a member name twice in one object,
//     invalid UTF-8 or an escaped lone surrogate (docs/design.md#hostile-clients);
//   - every string stored under the prefix is valid UTF-8, and every stored
//     JSON value (payload, result, progress, a batch's callback payload) is
//     strict JSON, as every application/json answer is;
//   - a name outside docs/design.md's alphabet never passes validation
//     (FuzzPath).
//
// Each target also checks what its route must answer for a request that
// passed validation, predicted from the jobs it set up (the fence: only the
// current token holds a job). Without -fuzz the seeds (f.Add and
// testdata/fuzz) run as tests; CI fuzzes each target for a few seconds.

// fzValueBytes is the payload/result/progress limit of the fuzzed handler:
// small, so that the fuzzer reaches 413 cheaply.
const fzValueBytes = 256

// The names docs/design.md allows, written out here rather than taken from the
// keyspace package, so that a bug there cannot hide itself.
var (
	fzQueueName = regexp.MustCompile(`^[A-Za-z0-9._-]{1,100}$`)
	fzJobID     = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)
)

// fzCodes are the problem codes a fuzzed request may get, with their status.
var fzCodes = map[string]int{
	"EMQINVALID": 400, "EMQTOOLARGE": 413, "EMQMEDIATYPE": 415, "EMQSTALE": 409,
	"EMQGONE": 404, "EMQSTATE": 409, "EMQNOTFOUND": 404, "EMQMETHOD": 405,
}

// fuzzRig is one fuzz target's handler, under a key prefix of its own.
type fuzzRig struct {
	h      *harness
	queues atomic.Uint64
	keyRE  *regexp.Regexp
}

func newFuzzRig(f *testing.F) *fuzzRig {
	f.Helper()
	h := newHarness(f, redistest.Client(f), withConfig(func(c *emqhttp.Config) { c.MaxValueBytes = fzValueBytes }))
	h.stop() // long polls and event streams answer at once: no execution waits
	return &fuzzRig{h: h, keyRE: regexp.MustCompile(`^` + regexp.QuoteMeta(h.prefix) +
		`:(?:queues|queue_names|batches|active|due|\{([^{}]*)\}:(?:meta|pending|active|delayed|waiting|completed|dead|cancelled|events|stats|` +
		`batches|batches_created|batches_due|job:(.*)|deps:(.*)|batch:(.*)|batch_jobs:(.*)))$`)}
}

// reset deletes every key under the rig's prefix, so that each execution
// starts from nothing and Redis stays small, and returns a fresh queue name.
func (r *fuzzRig) reset(t *testing.T) string {
	t.Helper()
	if keys := r.keys(t); len(keys) > 0 {
		if err := r.h.rdb.Del(context.Background(), keys...).Err(); err != nil {
			t.Fatal(err)
		}
	}
	return fmt.Sprintf("fz-%d", r.queues.Add(1))
}

func (r *fuzzRig) keys(t *testing.T) []string {
	t.Helper()
	keys, err := r.h.rdb.Keys(context.Background(), r.h.prefix+":*").Result()
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// dump is every key under the prefix with its DUMP: a fingerprint of the
// rig's state.
func (r *fuzzRig) dump(t *testing.T) map[string]string {
	t.Helper()
	ctx := context.Background()
	keys := r.keys(t)
	cmds := make([]interface{ Val() string }, len(keys))
	pipe := r.h.rdb.Pipeline()
	for i, k := range keys {
		cmds[i] = pipe.Dump(ctx, k)
	}
	if _, err := pipe.Exec(ctx); err != nil && len(keys) > 0 {
		t.Fatal(err)
	}
	out := make(map[string]string, len(keys))
	for i, k := range keys {
		out[k] = cmds[i].Val()
	}
	return out
}

// exec sends req through the router and checks what every answer must be,
// and that api/openapi.yaml describes the answer.
func (r *fuzzRig) exec(t *testing.T, req *http.Request) reply {
	t.Helper()
	before := r.dump(t)
	rec := httptest.NewRecorder()
	r.h.handler.ServeHTTP(rec, req)
	rep := reply{Status: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}
	emqhttp.CheckAnswer(t, req, rep.Status, rep.Header, rep.Body)
	fzCheckReply(t, req, rep)
	if rep.Status >= 400 {
		if after := r.dump(t); !maps.Equal(after, before) {
			t.Fatalf("%s %s answered %s but changed Redis: %s", req.Method, req.URL, rep, fzDiff(before, after))
		}
	}
	r.checkKeys(t)
	r.checkStored(t)
	return rep
}

// post sends body as JSON to a route that decodes it. Besides what every
// answer must be, a body that is not JSON is never accepted (docs/design.md:
// malformed JSON is a 400), nor one that is not strict JSON or names a
// field in other case than the spec's (docs/design.md#hostile-clients); an
// empty one, or one of JSON whitespace only, reads as {}.
func (r *fuzzRig) post(t *testing.T, path string, body []byte) reply {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	rep := r.exec(t, req)
	blank := strings.Trim(string(body), " \t\r\n") == ""
	if rep.Status < 300 && !blank && !json.Valid(body) {
		t.Fatalf("POST %s accepted %q, which is not JSON: %s", path, body, rep)
	}
	if rep.Status < 300 && !blank && !jsontext.Value(body).IsValid() {
		t.Fatalf("POST %s accepted %q, which names a member twice in one object or is not UTF-8: %s", path, body, rep)
	}
	if rep.Status < 300 && !blank {
		for name := range fzLenient[map[string]json.RawMessage](t, body) {
			if name != strings.ToLower(name) {
				t.Fatalf("POST %s accepted the field %q: the spec's names are lower case: %s", path, name, rep)
			}
		}
	}
	return rep
}

// fzCheckReply fails unless rep is an answer the API may give.
func fzCheckReply(t *testing.T, req *http.Request, rep reply) {
	t.Helper()
	what := fmt.Sprintf("%s %q answered %s", req.Method, req.URL.String(), rep)
	if rep.Status >= 500 {
		t.Fatalf("%s: a 5xx", what)
	}
	mt, _, _ := mime.ParseMediaType(rep.Header.Get("Content-Type"))
	if rep.Status < 400 && !strings.HasPrefix(req.URL.Path, "/queues") {
		return // the service routes: YAML, Swagger UI, redirects
	}
	if rep.Status == http.StatusOK && req.Method == http.MethodGet && mt == "text/event-stream" &&
		strings.HasSuffix(req.URL.Path, "/events") {
		return
	}
	want := "application/json"
	if rep.Status >= 400 {
		want = "application/problem+json"
	} else if !slices.Contains([]int{200, 201, 202}, rep.Status) {
		t.Fatalf("%s: status %d", what, rep.Status)
	}
	if mt != want || !jsontext.Value(rep.Body).IsValid() {
		t.Fatalf("%s: Content-Type %q, strict JSON %v; want %s", what, rep.Header.Get("Content-Type"), jsontext.Value(rep.Body).IsValid(), want)
	}
	if rep.Status < 400 {
		return
	}
	var p problem
	if err := json.Unmarshal(rep.Body, &p); err != nil {
		t.Fatalf("%s: not a problem: %v", what, err)
	}
	if status, known := fzCodes[p.Code]; !known || status != rep.Status || p.Status != rep.Status ||
		p.Type == "" || p.Title == "" || p.Detail == "" {
		t.Fatalf("%s: want a problem with a known code for status %d, and type, title and detail", what, rep.Status)
	}
}

// checkKeys fails unless every key under the prefix is a queue's key named
// by a valid queue name (and job id), and the queues set holds only valid
// names.
func (r *fuzzRig) checkKeys(t *testing.T) {
	t.Helper()
	for _, k := range r.keys(t) {
		if i := strings.IndexFunc(k, fzBadKeyRune); i >= 0 {
			t.Fatalf("key %q has %q, outside [A-Za-z0-9._:{}-]", k, k[i:])
		}
		m := r.keyRE.FindStringSubmatch(k)
		if m == nil || (m[1] != "" && !fzQueueName.MatchString(m[1])) || (m[2] != "" && !fzJobID.MatchString(m[2])) ||
			(m[3] != "" && !fzJobID.MatchString(m[3])) || (m[4] != "" && !fzJobID.MatchString(m[4])) ||
			(m[5] != "" && !fzJobID.MatchString(m[5])) {
			t.Fatalf("key %q is not a queue's key named by a valid queue name and job id", k)
		}
	}
	names, err := r.h.rdb.SMembers(context.Background(), keyspace.QueuesKey(r.h.prefix)).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if !fzQueueName.MatchString(n) {
			t.Fatalf("the queues set holds %q, not a valid queue name", n)
		}
	}
}

// fzJSONFields are the hash fields that hold a client's JSON value.
var fzJSONFields = map[string]bool{"payload": true, "result": true, "progress": true, "callback_payload": true}

// checkStored fails unless every string under the prefix (hash fields and
// values, set and sorted set members, stream entries) is valid UTF-8, and
// every JSON value a client stored is strict JSON: what a worker in any
// language parses one way.
func (r *fuzzRig) checkStored(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	for _, k := range r.keys(t) {
		var texts []string
		switch r.h.rdb.Type(ctx, k).Val() {
		case "hash":
			for f, v := range r.h.rdb.HGetAll(ctx, k).Val() {
				if fzJSONFields[f] && !jsontext.Value(v).IsValid() {
					t.Fatalf("%s holds %s %q, which is not strict JSON", k, f, v)
				}
				texts = append(texts, f, v)
			}
		case "set":
			texts = r.h.rdb.SMembers(ctx, k).Val()
		case "zset":
			texts = r.h.rdb.ZRange(ctx, k, 0, -1).Val()
		case "stream":
			for _, m := range r.h.rdb.XRange(ctx, k, "-", "+").Val() {
				for f, v := range m.Values {
					texts = append(texts, f, fmt.Sprint(v))
				}
			}
		}
		for _, s := range texts {
			if !utf8.ValidString(s) {
				t.Fatalf("%s holds %q, which is not UTF-8", k, s)
			}
		}
	}
}

func fzBadKeyRune(c rune) bool {
	return !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("._:{}-", c))
}

// fzDiff says which keys differ between two dumps.
func fzDiff(before, after map[string]string) string {
	var out []string
	for k := range before {
		if _, ok := after[k]; !ok {
			out = append(out, "deleted "+k)
		} else if after[k] != before[k] {
			out = append(out, "changed "+k)
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			out = append(out, "created "+k)
		}
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}

// fzRefused reports whether rep refused the request itself (400, 413, 415):
// the route's own answer is predictable only for a request that passed.
func fzRefused(rep reply) bool {
	return rep.Status == 400 || rep.Status == 413 || rep.Status == 415
}

// fzWant fails unless rep has status and, for an error, code.
func fzWant(t *testing.T, what string, rep reply, status int, code string) {
	t.Helper()
	if rep.Status != status {
		t.Fatalf("%s: got %s, want %d %s", what, rep, status, code)
	}
	if code != "" {
		if p := decode[problem](t, rep); p.Code != code {
			t.Fatalf("%s: got %s, want %d %s", what, rep, status, code)
		}
	}
}

// fzSame reports whether two JSON texts are the same value, numbers
// compared digit for digit.
func fzSame(a, b []byte) bool {
	va, err1 := decodeNumbers(a)
	vb, err2 := decodeNumbers(b)
	return err1 == nil && err2 == nil && reflect.DeepEqual(va, vb)
}

// fzLenient decodes a body the handler accepted, without its strictness, to
// learn what was asked. An empty body reads as {}, as the handler reads it.
func fzLenient[T any](t *testing.T, body []byte) T {
	t.Helper()
	var v T
	if len(bytes.TrimSpace(body)) == 0 {
		return v
	}
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("the handler accepted %q, which does not decode: %v", body, err)
	}
	return v
}

// fzPick are the jobs of fzJobs, and one that does not exist.
var fzPick = []string{"a", "b", "c", "d", "e", "zz"}

// fzJobs sets up, on a fresh queue: a active under token 42, d completed
// under 43, b pending, c delayed an hour, e cancelled; zz does not exist.
// Tokens are random: the claim's are written over with 42 and 43 (as a
// lease taken under the old counter holds a token of its own), so that
// the seeds can name them.
func (r *fuzzRig) fzJobs(t *testing.T) string {
	t.Helper()
	q := r.reset(t)
	r.h.enqueueBatch(t, q, `{"jobs":[{"id":"a","payload":1},{"id":"d","payload":4}]}`)
	held := r.h.claim(t, q, `{"count":2,"lease_ms":3600000}`)
	if len(held) != 2 || held[0].ID != "a" || held[1].ID != "d" {
		t.Fatalf("setup claimed %+v, want a and d", held)
	}
	for id, token := range map[string]int{"a": 42, "d": 43} {
		if err := r.h.rdb.HSet(context.Background(), r.h.key(q, "job:"+id), "token", token).Err(); err != nil {
			t.Fatal(err)
		}
	}
	must[jobView](t, r.h.do(t, "POST", jobPath(q, "d", "complete"), `{"token":43}`), http.StatusOK)
	r.h.enqueueBatch(t, q, `{"jobs":[{"id":"b","payload":2},{"id":"c","payload":3,"delay_ms":3600000},{"id":"e","payload":5}]}`)
	must[jobView](t, r.h.do(t, "POST", jobPath(q, "e", "cancel"), `{}`), http.StatusOK)
	return q
}

// fzStateOf reads job id's state straight from its row.
func (r *fuzzRig) fzStateOf(t *testing.T, q, id string) string {
	t.Helper()
	return r.h.rdb.HGet(context.Background(), r.h.key(q, "job:"+id), "state").Val()
}

// Seeds shared by the targets: bodies every decoder must refuse cleanly.
var fzCommonSeeds = []string{
	``, ` `, "\t\r\n ", `{}`, `null`, `[]`, `"x"`, `0`, `{`, `}`, `{"a":}`, `{}{}`, `{} x`, `{}]`,
	`{"token":12345678901234567890}`, `{"token":-1}`, `{"token":1e3}`, `{"token":"42"}`, `{"token":42.5}`,
	`{"unknown":1}`, `{"token":42,"token":43}`, "{\"token\":42}\x00", "\xef\xbb\xbf{}", `[[[[[[[[[[]]]]]]]]]]`,
	"{\"token\":42,\"x\":\"\xff\"}", `{"Token":42}`, `{"TOKEN":42,"token":42}`, `{"token":42,"":1,"":2}`,
	`{"jobs":null}`, `{"jobs":[null]}`, `{"jobs":{}}`, `{"payload":1e400}`, `{"lease_ms":1e400}`,
}

func fzAddSeeds(f *testing.F, seeds ...string) {
	for _, s := range append(slices.Clone(fzCommonSeeds), seeds...) {
		f.Add([]byte(s))
	}
}

// fzAddPickSeeds adds the common seeds, each on one job, and the target's
// seeds on every job of fzPick.
func fzAddPickSeeds(f *testing.F, seeds ...string) {
	for i, s := range fzCommonSeeds {
		f.Add(uint8(i), []byte(s))
	}
	for _, s := range seeds {
		for i := range fzPick {
			f.Add(uint8(i), []byte(s))
		}
	}
}

func FuzzEnqueue(f *testing.F) {
	fzAddSeeds(f, `{"payload":{"to":"ada@example.com"}}`, `{"id":"a","payload":2}`, `{"id":"batch","payload":1}`,
		`{"id":"x:y.z-_1","payload":12345678901234567890,"priority":9,"delay_ms":1,"max_attempts":1000}`,
		`{"payload":null}`, `{"payload":"\u2028\ud800 é 日本"}`, `{"payload":[[[[1]]]],"priority":10}`,
		`{"payload":1,"delay_ms":31536000001}`, `{"payload":1,"max_attempts":0}`, `{"id":"","payload":1}`,
		`{"payload":1,"backoff":{"type":"fixed","delay_ms":5,"max_delay_ms":4}}`,
		`{"payload":1,"backoff":{"type":"exponential","delay_ms":1000,"max_delay_ms":604800000}}`,
		`{"payload":"`+strings.Repeat("x", fzValueBytes)+`"}`, `{"PAYLOAD":1,"Id":"up"}`,
		`{"payload":{"x":1,"x":2},"payload":3}`, `{"id":"{q}","payload":1}`, `{"id":"a b","payload":1}`,
		"{\"payload\":[\"\xed\xa0\x80\"]}", `{"payload":"\udfff\ud800"}`, `{"payload":{"a":1,"A":2,"b":{"a":1}}}`,
		"{\"payload\":1,\"dedupe\":{\"key\":\"\xc3\",\"mode\":\"until_done\"}}", `{"payload":1,"Dedupe":{"key":"k","mode":"until_done"}}`,
		`{"payload":1,"run_at":"2030-01-01T00:00:00Z"}`, `{"payload":1,"run_at":"2000-01-01T00:00:00.5+14:00","delay_ms":0}`,
		`{"payload":1,"run_at":"1969-12-31T23:59:59Z"}`, `{"payload":1,"run_at":"9999-12-31T23:59:59.999Z","depends_on":["a"]}`)
	r := newFuzzRig(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		q := r.reset(t)
		r.h.enqueue(t, q, `{"id":"a","payload":{"id":"a"}}`)
		rep := r.post(t, jobsPath(q), body)
		if rep.Status != http.StatusOK && rep.Status != http.StatusCreated {
			return
		}
		req := fzLenient[struct {
			ID        string          `json:"id"`
			Payload   json.RawMessage `json:"payload"`
			DependsOn []string        `json:"depends_on"`
		}](t, body)
		j := decode[jobView](t, rep)
		if rep.Status == http.StatusOK {
			if req.ID != "a" || j.ID != "a" || !fzSame(j.Payload, []byte(`{"id":"a"}`)) {
				t.Fatalf("200 for id %q: %s, want only for the existing a, answered as it is", req.ID, rep)
			}
			return
		}
		if (req.ID != "" && j.ID != req.ID) || !fzJobID.MatchString(j.ID) || j.ID == "a" || j.Queue != q ||
			!fzNewState(j.State, req.DependsOn) || !fzSame(j.Payload, req.Payload) {
			t.Fatalf("201 for %q: %s, want a new waiting job with the payload sent", body, rep)
		}
		if got := r.fzStateOf(t, q, j.ID); got != j.State {
			t.Fatalf("201 answered %s, the row says %q", j.State, got)
		}
	})
}

func FuzzEnqueueBatch(f *testing.F) {
	fzAddSeeds(f, `{"jobs":[{"payload":1},{"id":"a","payload":2},{"id":"n","payload":3},{"id":"n","payload":4}]}`,
		`{"jobs":[]}`, `{"jobs":[{"payload":1,"priority":-1}]}`, `{"jobs":[{}]}`,
		`{"jobs":[{"id":"x","payload":"`+strings.Repeat("y", fzValueBytes)+`"}]}`,
		`{"jobs":[{"payload":1}],"jobs":[{"payload":2},{"payload":3}]}`, `{"jobs":[{"payload":1,"delay_ms":5}]}`,
		`{"jobs":[{"payload":1},{"payload":1,"Priority":2}]}`, `{"jobs":[{"payload":{"k":[{"a":1,"a":1}]}}]}`)
	r := newFuzzRig(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		q := r.reset(t)
		r.h.enqueue(t, q, `{"id":"a","payload":{"id":"a"}}`)
		rep := r.post(t, jobsPath(q)+"/batch", body)
		if rep.Status != http.StatusOK {
			return
		}
		req := fzLenient[struct {
			Jobs []struct {
				ID        string          `json:"id"`
				Payload   json.RawMessage `json:"payload"`
				DependsOn []string        `json:"depends_on"`
			} `json:"jobs"`
		}](t, body)
		got := decode[jobList](t, rep).Jobs
		if len(got) != len(req.Jobs) {
			t.Fatalf("%d jobs answered for %d sent: %s", len(got), len(req.Jobs), rep)
		}
		first := map[string]json.RawMessage{"a": json.RawMessage(`{"id":"a"}`)}
		for i, sent := range req.Jobs {
			want := sent.Payload
			if p, seen := first[sent.ID]; seen {
				want = p // the job exists: answered as it is
			} else if sent.ID != "" {
				first[sent.ID] = sent.Payload
			}
			j := got[i]
			if (sent.ID != "" && j.ID != sent.ID) || !fzNewState(j.State, sent.DependsOn) || !fzSame(j.Payload, want) {
				t.Fatalf("job %d: answered %+v for %s, want id %q with payload %s", i, j, sent.Payload, sent.ID, want)
			}
			if row := r.fzStateOf(t, q, j.ID); row != j.State {
				t.Fatalf("job %d answered %s, the row says %q", i, j.State, row)
			}
		}
	})
}

// fzNewState reports whether a new job (or one answered as it is: pending
// a of the rig) may be in state: pending or delayed, or waiting for the
// dependencies it names (the only one, a, is pending).
func fzNewState(state string, dependsOn []string) bool {
	return state == "pending" || state == "delayed" || (len(dependsOn) > 0 && state == "waiting")
}

// FuzzCreateBatch: a batch the service accepts has exactly the jobs it
// answers as new, each carrying its id, and reads back as it answered.
func FuzzCreateBatch(f *testing.F) {
	fzAddSeeds(f, `{"jobs":[{"payload":1},{"id":"a","payload":2}]}`, `{"id":"b1","open":true}`,
		`{"id":"b1","jobs":[{"id":"x","payload":1},{"id":"y","payload":2,"depends_on":["x","a"]}],"callback":{"queue":"other","payload":{"k":[1]},"when":"success"}}`,
		`{"jobs":[{"id":"x","payload":1,"depends_on":["x"]}]}`, `{"jobs":[{"payload":1,"depends_on":["nope"]}]}`,
		`{"id":"`+strings.Repeat("b", 123)+`","jobs":[]}`, `{"callback":{"queue":"a:b"}}`, `{"open":"yes"}`)
	r := newFuzzRig(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		q := r.reset(t)
		r.h.enqueue(t, q, `{"id":"a","payload":{"id":"a"}}`)
		rep := r.post(t, "/queues/"+q+"/batches", body)
		if rep.Status != http.StatusCreated {
			return
		}
		b := decode[batchView](t, rep)
		created := int64(0)
		for _, j := range b.Jobs {
			if j.BatchID == b.ID {
				created++
			} else if j.ID != "a" {
				t.Fatalf("job %s answered without the batch's id: %s", j.ID, rep)
			}
		}
		if b.Total != created || !validBatch(b) {
			t.Fatalf("the batch has total %d, %d of its jobs are new: %s", b.Total, created, rep)
		}
		got := must[batchView](t, r.h.do(t, "GET", "/queues/"+q+"/batches/"+b.ID, nil), http.StatusOK)
		if got.Total != b.Total || got.State != b.State {
			t.Fatalf("read back %+v, created %+v", got, b)
		}
	})
}

// validBatch reports whether b's state agrees with its counts.
func validBatch(b batchView) bool {
	var sum int64
	for _, n := range b.Counts {
		sum += n
	}
	return sum <= b.Total && (b.State == "open" || b.State == "running" || (b.State == "done" && sum == b.Total))
}

func FuzzClaim(f *testing.F) {
	fzAddSeeds(f, `{"count":2,"lease_ms":100}`, `{"count":100,"lease_ms":86400000,"wait_ms":30000,"worker":"w-1"}`,
		`{"count":0}`, `{"count":101}`, `{"lease_ms":99}`, `{"lease_ms":86400001}`, `{"wait_ms":-1}`,
		`{"count":null,"lease_ms":null}`, `{"worker":"`+strings.Repeat("é", 201)+`"}`, `{"wait_ms":1}`)
	r := newFuzzRig(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		q := r.reset(t)
		r.h.add(t, q, "a", "b")
		rep := r.post(t, "/queues/"+q+"/claim", body)
		if fzRefused(rep) {
			return
		}
		fzWant(t, "claim", rep, http.StatusOK, "")
		req := fzLenient[struct {
			Count   *int   `json:"count"`
			LeaseMs *int64 `json:"lease_ms"`
		}](t, body)
		count, leaseMs := 1, int64(30_000)
		if req.Count != nil {
			count = *req.Count
		}
		if req.LeaseMs != nil {
			leaseMs = *req.LeaseMs
		}
		got := decode[jobList](t, rep).Jobs
		if len(got) != min(count, 2) {
			t.Fatalf("claimed %d jobs of 2 for count %d: %s", len(got), count, rep)
		}
		for i, j := range got {
			// One call's tokens: a random first one below 2^53, then the next up.
			lease := parseStamp(t, j.LeaseExpiresAt).Sub(parseStamp(t, j.StartedAt)).Milliseconds()
			if j.ID != []string{"a", "b"}[i] || j.Token != got[0].Token+int64(i) || j.Token <= 0 || j.Token >= 1<<53 ||
				j.State != "active" || j.Attempts != 1 || lease != leaseMs {
				t.Fatalf("job %d: %+v, want %s active under token %d + %d (below 2^53) for %d ms", i, j, []string{"a", "b"}[i], got[0].Token, i, leaseMs)
			}
		}
	})
}

func FuzzExtend(f *testing.F) {
	fzAddPickSeeds(f, `{"token":42,"lease_ms":60000}`, `{"token":42,"lease_ms":100,"progress":{"done":12345678901234567890}}`,
		`{"token":43,"lease_ms":1000}`, `{"token":42}`, `{"token":42,"lease_ms":1000,"progress":null}`,
		`{"token":42,"lease_ms":1000,"progress":"`+strings.Repeat("p", fzValueBytes)+`"}`)
	r := newFuzzRig(f)
	f.Fuzz(func(t *testing.T, pick uint8, body []byte) {
		q, id := r.fzJobs(t), fzPick[int(pick)%len(fzPick)]
		rep := r.post(t, jobPath(q, id, "lease"), body)
		if fzRefused(rep) {
			return
		}
		req := fzLenient[struct {
			Token int64 `json:"token"`
		}](t, body)
		what := fmt.Sprintf("extend %s with token %d", id, req.Token)
		switch {
		case id == "zz":
			fzWant(t, what, rep, http.StatusNotFound, "EMQGONE")
		case id == "a" && req.Token == 42:
			fzWant(t, what, rep, http.StatusOK, "")
			ext := decode[struct {
				LeaseExpiresAt  string `json:"lease_expires_at"`
				CancelRequested bool   `json:"cancel_requested"`
			}](t, rep)
			if parseStamp(t, ext.LeaseExpiresAt); ext.CancelRequested || r.fzStateOf(t, q, "a") != "active" {
				t.Fatalf("%s: %s, want a still active and no cancel", what, rep)
			}
		default: // the fence
			fzWant(t, what, rep, http.StatusConflict, "EMQSTALE")
		}
	})
}

func FuzzComplete(f *testing.F) {
	fzAddPickSeeds(f, `{"token":42,"result":{"ok":true}}`, `{"token":43}`, `{"token":42,"claim":{"count":5,"lease_ms":100}}`,
		`{"token":42,"claim":{}}`, `{"token":42,"claim":{"count":0}}`, `{"token":42,"claim":null,"result":null}`,
		`{"token":42,"result":"`+strings.Repeat("r", fzValueBytes)+`"}`, `{"token":44}`,
		`{"token":42,"result":{"ok":true,"ok":false}}`, "{\"token\":42,\"result\":\"\xf0\x9f\x98\"}",
		`{"token":42,"claim":{"count":1,"Count":5}}`, `{"token":42,"result":"\ud83d\ude00"}`)
	r := newFuzzRig(f)
	f.Fuzz(func(t *testing.T, pick uint8, body []byte) {
		q, id := r.fzJobs(t), fzPick[int(pick)%len(fzPick)]
		rep := r.post(t, jobPath(q, id, "complete"), body)
		if fzRefused(rep) {
			return
		}
		req := fzLenient[struct {
			Token int64            `json:"token"`
			Claim *json.RawMessage `json:"claim"`
		}](t, body)
		what := fmt.Sprintf("complete %s with token %d", id, req.Token)
		switch {
		case id == "zz":
			fzWant(t, what, rep, http.StatusNotFound, "EMQGONE")
		case id == "a" && req.Token == 42, id == "d" && req.Token == 43: // d: a repeat of its complete
			fzWant(t, what, rep, http.StatusOK, "")
			got := decode[struct {
				jobView
				Next *[]jobView `json:"next"`
			}](t, rep)
			wantNext := -1 // no claim asked: no next
			if req.Claim != nil && string(*req.Claim) != "null" {
				wantNext = 0 // a repeat claims nothing
				if id == "a" {
					wantNext = 1 // b, the one pending job
				}
			}
			if got.ID != id || got.State != "completed" || r.fzStateOf(t, q, id) != "completed" ||
				(got.Next == nil) != (wantNext < 0) || got.Next != nil && (len(*got.Next) != wantNext || wantNext == 1 && (*got.Next)[0].ID != "b") {
				t.Fatalf("%s: %s, want %s completed and %d next", what, rep, id, wantNext)
			}
		default:
			fzWant(t, what, rep, http.StatusConflict, "EMQSTALE")
		}
	})
}

func FuzzCompleteBatch(f *testing.F) {
	fzAddSeeds(f, `{"jobs":[{"id":"a","token":42},{"id":"a","token":42},{"id":"d","token":43},{"id":"b","token":42},{"id":"zz","token":1}]}`,
		`{"jobs":[{"id":"a","token":42,"result":[1,2]}],"claim":{"count":1}}`, `{"jobs":[{"id":"batch","token":1}]}`,
		`{"jobs":[{"id":"a","token":0}]}`, `{"jobs":[{"id":"a","token":43},{"id":"e","token":42},{"id":"c","token":42}]}`,
		`{"jobs":[{"id":"a","token":42,"result":"`+strings.Repeat("r", fzValueBytes)+`"}]}`, `{"jobs":[{"token":42}]}`)
	r := newFuzzRig(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		q := r.fzJobs(t)
		rep := r.post(t, "/queues/"+q+"/complete", body)
		if fzRefused(rep) {
			return
		}
		fzWant(t, "batch complete", rep, http.StatusOK, "")
		req := fzLenient[struct {
			Jobs []struct {
				ID    string `json:"id"`
				Token int64  `json:"token"`
			} `json:"jobs"`
			Claim *json.RawMessage `json:"claim"`
		}](t, body)
		got := decode[struct {
			Results []map[string]json.RawMessage `json:"results"`
			Next    *[]jobView                   `json:"next"`
		}](t, rep)
		if len(got.Results) != len(req.Jobs) {
			t.Fatalf("%d results for %d jobs: %s", len(got.Results), len(req.Jobs), rep)
		}
		// A batch that repeats a complete made before it (d under 43) claims
		// nothing next; a stale-only one still does.
		repeated := false
		for i, item := range req.Jobs {
			repeated = repeated || item.ID == "d" && item.Token == 43
			want := `"EMQSTALE"`
			switch {
			case !slices.Contains(fzPick[:5], item.ID):
				want = `"EMQGONE"`
			case item.ID == "a" && item.Token == 42, item.ID == "d" && item.Token == 43: // a twice: a repeat
				want = `"completed"`
			}
			res := got.Results[i]
			if have := res["code"]; want != `"completed"` && string(have) != want {
				t.Fatalf("result %d (%s token %d) = %v, want %s", i, item.ID, item.Token, res, want)
			}
			if have := res["state"]; want == `"completed"` && (string(have) != want || string(res["id"]) != `"`+item.ID+`"`) {
				t.Fatalf("result %d (%s token %d) = %v, want the job completed", i, item.ID, item.Token, res)
			}
		}
		if req.Claim == nil || string(*req.Claim) == "null" {
			if got.Next != nil {
				t.Fatalf("no claim asked, but next answered: %s", rep)
			}
		} else if got.Next == nil || len(*got.Next) != fzCount(!repeated) || !repeated && (*got.Next)[0].ID != "b" {
			t.Fatalf("claim next answered %s, want b (the one pending job) unless the batch repeats d's complete (%v)", rep, repeated)
		}
	})
}

func FuzzFail(f *testing.F) {
	fzAddPickSeeds(f, `{"token":42,"error":"boom"}`, `{"token":42,"error":"x","fatal":true}`,
		`{"token":42,"error":"x","retry_in_ms":0}`, `{"token":42,"error":"x","retry_in_ms":31536000000}`,
		`{"token":42,"error":""}`, `{"token":42}`, `{"token":42,"error":null}`, `{"token":43,"error":"late"}`,
		`{"token":42,"error":"`+strings.Repeat("é", 3000)+`"}`, `{"token":42,"error":"x","retry_in_ms":-1}`,
		`{"token":42,"error":"x`+strings.Repeat("é", 3000)+`"}`, "{\"token\":42,\"error\":\"\xff\"}", `{"token":42,"error":"\ud800"}`)
	r := newFuzzRig(f)
	f.Fuzz(func(t *testing.T, pick uint8, body []byte) {
		q, id := r.fzJobs(t), fzPick[int(pick)%len(fzPick)]
		rep := r.post(t, jobPath(q, id, "fail"), body)
		if fzRefused(rep) {
			return
		}
		req := fzLenient[struct {
			Token     int64  `json:"token"`
			RetryInMs *int64 `json:"retry_in_ms"`
			Fatal     bool   `json:"fatal"`
		}](t, body)
		what := fmt.Sprintf("fail %s with token %d", id, req.Token)
		switch {
		case id == "zz":
			fzWant(t, what, rep, http.StatusNotFound, "EMQGONE")
		case id == "a" && req.Token == 42:
			fzWant(t, what, rep, http.StatusOK, "")
			want := "delayed" // the default backoff: a second
			switch {
			case req.Fatal:
				want = "dead"
			case req.RetryInMs != nil && *req.RetryInMs == 0:
				want = "pending"
			}
			if j := decode[jobView](t, rep); j.State != want || r.fzStateOf(t, q, "a") != want {
				t.Fatalf("%s: %s, want %s", what, rep, want)
			}
		default:
			fzWant(t, what, rep, http.StatusConflict, "EMQSTALE")
		}
	})
}

func FuzzCancel(f *testing.F) {
	fzAddPickSeeds(f, `{"reason":"customer asked"}`, `{"token":42,"reason":"x"}`, `{"token":43}`, `{"token":0}`,
		`{"reason":"`+strings.Repeat("r", 4097)+`"}`, `{"token":null,"reason":null}`, `{"reason":"\u0000\n"}`)
	r := newFuzzRig(f)
	f.Fuzz(func(t *testing.T, pick uint8, body []byte) {
		q, id := r.fzJobs(t), fzPick[int(pick)%len(fzPick)]
		rep := r.post(t, jobPath(q, id, "cancel"), body)
		if fzRefused(rep) {
			return
		}
		req := fzLenient[struct {
			Token *int64 `json:"token"`
		}](t, body)
		what := fmt.Sprintf("cancel %s with token %v", id, req.Token)
		switch {
		case id == "zz":
			fzWant(t, what, rep, http.StatusNotFound, "EMQGONE")
		case id == "d":
			fzWant(t, what, rep, http.StatusConflict, "EMQSTATE")
		case id == "e":
			fzWant(t, what, rep, http.StatusOK, "")
		case req.Token != nil && (id != "a" || *req.Token != 42):
			fzWant(t, what, rep, http.StatusConflict, "EMQSTALE")
		case id == "a":
			fzWant(t, what, rep, http.StatusAccepted, "")
			if j := decode[jobView](t, rep); j.State != "active" || !j.CancelRequested {
				t.Fatalf("%s: %s, want a cancel requested of the active job", what, rep)
			}
		default:
			fzWant(t, what, rep, http.StatusOK, "")
			if j := decode[jobView](t, rep); j.State != "cancelled" || r.fzStateOf(t, q, id) != "cancelled" {
				t.Fatalf("%s: %s, want it cancelled", what, rep)
			}
		}
	})
}

func FuzzSweep(f *testing.F) {
	fzAddSeeds(f, `{"max_stalled":1}`, `{"max_stalled":3,"limit":1}`, `{"max_stalled":1000,"limit":10000}`,
		`{"max_stalled":-1}`, `{"limit":10001}`, `{"max_stalled":1001}`, `{"max_stalled":null}`)
	r := newFuzzRig(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		q := r.reset(t)
		r.h.add(t, q, "a", "b")
		r.h.claim(t, q, `{"count":2,"lease_ms":3600000}`)
		// a's holder went quiet: its lease lapsed; b's runs an hour.
		if err := r.h.rdb.ZAddXX(context.Background(), r.h.key(q, "active"), redis.Z{Score: 0, Member: "a"}).Err(); err != nil {
			t.Fatal(err)
		}
		rep := r.post(t, "/queues/"+q+"/sweep", body)
		if fzRefused(rep) {
			return
		}
		fzWant(t, "sweep", rep, http.StatusOK, "")
		req := fzLenient[struct {
			MaxStalled int `json:"max_stalled"`
		}](t, body)
		got := decode[swept](t, rep)
		want := swept{Recovered: []string{"a"}, Dead: []string{}, Cancelled: []string{}}
		if req.MaxStalled == 1 { // the first stall reaches the threshold
			want.Recovered, want.Dead = want.Dead, want.Recovered
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("sweep with max_stalled %d moved %+v, want %+v", req.MaxStalled, got, want)
		}
	})
}

func fzCount(b bool) int {
	if b {
		return 1
	}
	return 0
}

// fzMethods and the route shapes of FuzzPath.
var (
	fzMethods      = []string{http.MethodGet, http.MethodPost, http.MethodDelete, http.MethodPut}
	fzContentTypes = []string{"application/json", "", "text/plain", "application/merge-patch+json; charset=utf-8"}
	fzJobVerbs     = []string{"lease", "complete", "fail", "cancel", "cancellation", "retry", "promote", ""}
	fzQueueVerbs   = []string{"claim", "complete", "sweep", "pause", "resume", "drain", "events", "jobs/batch", "jobs"}
)

// fzPath builds FuzzPath's request path and query from a shape and the
// fuzzed queue name and job id.
func fzPath(shape uint8, q, id string) (path, query string) {
	switch shape % 8 {
	case 0:
		return "/queues/" + q, "force=" + id
	case 1:
		return "/queues/" + q + "/jobs", "state=" + id + "&limit=2"
	case 2:
		return "/queues/" + q + "/jobs/" + id, "force=true"
	case 3:
		return "/queues/" + q + "/jobs/" + id + "/" + fzJobVerbs[int(shape/8)%len(fzJobVerbs)], "token=42"
	case 4:
		return "/queues/" + q + "/" + fzQueueVerbs[int(shape/8)%len(fzQueueVerbs)], ""
	case 5:
		return "/queues/" + q + "/jobs", "state=pending&cursor=" + id
	case 6:
		return "/queues", "cursor=" + id + "&limit=" + q
	default:
		return "/" + q, ""
	}
}

// FuzzPath sends random queue names and job ids in the URL path, raw (as a
// router sees a decoded path) or percent-encoded, with any of the methods.
// Besides what every answer must be, no key may be made from a name that is
// not valid, and a queue name or job id outside docs/design.md's alphabet never
// gets past validation to a service (on a Cluster a "{" in a key would move
// it to another slot).
func FuzzPath(f *testing.F) {
	for i, s := range []struct{ q, id, body string }{
		{"emails", "job-1", `{"payload":1}`}, {"a{b}", "x", `{}`}, {"a:b", "c", ""}, {"..", ".", ""},
		{"q", "batch", `{"token":42,"lease_ms":1000}`}, {"q", "a:b", `{"reason":"x"}`}, {"q/../x", "%7B", ""},
		{"q q", "\x00", ""}, {"é", "日本", ""}, {strings.Repeat("q", 101), strings.Repeat("i", 129), ""},
		{"q", "j{1}", `{"id":"j","payload":1}`}, {"q\r\nx", "j\n", ""}, {"q*", "?x", ""}, {"q", "j", `{"jobs":[{"payload":1}]}`},
	} {
		for shape := 0; shape < 8; shape++ {
			f.Add(uint8(i+shape), uint8(shape+8*i), s.q, s.id, []byte(s.body))
		}
	}
	r := newFuzzRig(f)
	routes, ok := r.h.handler.(chi.Routes)
	if !ok {
		f.Fatalf("the handler is a %T, not a chi router: FuzzPath cannot read the route parameters", r.h.handler)
	}
	f.Fuzz(func(t *testing.T, mode, shape uint8, q, id string, body []byte) {
		r.reset(t)
		path, query := fzPath(shape, q, id)
		req := httptest.NewRequest(fzMethods[int(mode)%len(fzMethods)], "/", strings.NewReader(string(body)))
		if mode/16%2 == 1 { // as a client sends it: percent-encoded
			u, err := url.Parse("http://x" + fzEscape(path) + "?" + url.PathEscape(query))
			if err != nil {
				return
			}
			req.URL = u
		} else {
			req.URL.Path, req.URL.RawQuery = path, query
		}
		if ct := fzContentTypes[int(mode/4)%len(fzContentTypes)]; ct != "" {
			req.Header.Set("Content-Type", ct)
		}
		rep := r.exec(t, req)
		if fzRefused(rep) || rep.Status == http.StatusNotFound && decode[problem](t, rep).Code == "EMQNOTFOUND" ||
			rep.Status == http.StatusMethodNotAllowed {
			return
		}
		rctx, routePath := chi.NewRouteContext(), cmp.Or(req.URL.RawPath, req.URL.Path)
		if !routes.Match(rctx, req.Method, routePath) {
			return
		}
		if name := rctx.URLParam("queue"); name != "" && !fzQueueName.MatchString(name) {
			t.Fatalf("queue name %q reached the service: %s %q answered %s", name, req.Method, routePath, rep)
		}
		if jobID := rctx.URLParam("id"); jobID != "" && (!fzJobID.MatchString(jobID) || jobID == "batch") {
			t.Fatalf("job id %q reached the service: %s %q answered %s", jobID, req.Method, routePath, rep)
		}
	})
}

// fzEscape percent-encodes each segment of path.
func fzEscape(path string) string {
	segs := strings.Split(path, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}
