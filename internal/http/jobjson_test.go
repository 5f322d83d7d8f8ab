package http

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/echo-mq/echo_mq/internal/job"
	"github.com/echo-mq/echo_mq/internal/lease"
)

// awkward holds what encoding/json escapes or replaces in a string, and
// non-ASCII it keeps: quotes, backslash, control bytes, DEL, HTML
// characters (kept: HTML escaping is off), U+2028 and U+2029, invalid UTF-8
// (a lone continuation byte, a cut sequence, a surrogate, 0xff).
const awkward = "\"\\/\b\f\n\r\t\x00\x1f\x7f<>& é日本😀\u2028\u2029\ufffd \x80\xe2\x80\xed\xa0\x80\xff"

// TestJobJSON: each writer sends what writeJSON sends for the DTO, for
// values stored compact (fast: copied as they are), with whitespace
// (compacted) or not JSON at all (null).
func TestJobJSON(t *testing.T) {
	at := time.Date(2026, 11, 29, 19, 6, 37, 123_999_999, time.FixedZone("", -5*3600))
	full := job.Job{ID: "order-1234", Queue: "emails", State: "active",
		Payload: json.RawMessage(`{"to":"ada@example.com","n":[1,2.5e3,null,true]}`),
		Result:  json.RawMessage(`{"ok":true}`), Progress: json.RawMessage(`0.5`),
		Priority: 9, Attempts: 2, MaxAttempts: 1000, Stalled: 1, LastError: "SMTP timeout",
		CancelRequested: true, CancelReason: "customer asked", Worker: "worker-1", Group: "tenant-42", Token: 42,
		DedupeKey: "user-42:digest", ExpiresAt: at.Add(time.Minute), Timeout: 30 * time.Second,
		CreatedAt: at, RunAt: at.Add(time.Millisecond), StartedAt: time.UnixMilli(0).UTC(),
		LeaseExpiresAt: at.Add(time.Hour), FinishedAt: at.Add(-time.Hour),
		Traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		BatchID:     "import-7", DependsOn: []string{"a", "b:c"}, RunOnFailure: true, LogLines: 1000}
	for _, c := range []struct {
		name string
		j    job.Job
		fast bool
	}{
		{"zero job", job.Job{}, true},
		{"every field", full, true},
		{"awkward strings", job.Job{ID: awkward, Queue: awkward, State: awkward, LastError: awkward,
			CancelReason: awkward, Worker: awkward, Payload: json.RawMessage(strconv.Quote("x"))}, true},
		{"literal U+2028 and invalid UTF-8 in a value", job.Job{
			Payload: json.RawMessage("\"\u2028<>&\xff\""), Result: json.RawMessage(`"\u2028"`)}, true},
		{"negative numbers", job.Job{Payload: json.RawMessage(`-1e-7`), Priority: -1, Attempts: math.MinInt,
			MaxAttempts: math.MaxInt, Token: -1}, true},
		{"far times", job.Job{CreatedAt: time.UnixMilli(math.MaxInt64), RunAt: time.UnixMilli(math.MinInt64),
			StartedAt: time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC), FinishedAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}, true},
		{"edge years", job.Job{CreatedAt: time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC),
			RunAt: time.Date(9999, 12, 31, 23, 59, 59, 999_999_999, time.UTC)}, true},
		{"empty result", job.Job{Payload: json.RawMessage(`1`), Result: json.RawMessage{}}, false},
		{"payload with spaces", job.Job{Payload: json.RawMessage(`{ "a": [1, 2] }`)}, false},
		{"invalid progress", job.Job{Payload: json.RawMessage(`1`), Progress: json.RawMessage(`{"a":`)}, false},
		{"empty payload", job.Job{Payload: json.RawMessage{}}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			checkJobJSON(t, []job.Job{c.j, full, c.j}, []error{nil, fmt.Errorf("%w: x", job.ErrStale), nil})
			checkJobJSON(t, []job.Job{c.j}, nil)
		})
	}
}

// TestValidCompact: validCompact agrees with json.Valid and isCompact on
// values near the edges of JSON's grammar, and leaves deep nesting to
// encoding/json.
func TestValidCompact(t *testing.T) {
	for _, v := range []string{
		``, ` `, `0`, `-0`, `01`, `-`, `1.`, `1.5`, `.5`, `1e`, `1e+`, `1E-7`, `-0.0e+00`, `1.e3`, `+1`, `0x1`,
		`true`, `tru`, `truex`, `false`, `null`, `nul`, `nulll`, `""`, `"`, `"\"`, `"\\"`, `"\/"`, `"\x"`,
		`"\u12aF"`, `"\u12G4"`, `"\u123"`, "\"\x1f\"", "\"\x7f\xff\u2028\"", `[]`, `[1,]`, `[,1]`, `[1 ]`, `[[]]`,
		`{}`, `{"a"}`, `{"a":}`, `{"a":1,}`, `{"a":1,"b":[{}]}`, `{1:2}`, `{"a" :1}`, `[1][2]`, `1 `, `{"a":1}x`,
	} {
		if got, want := validCompact([]byte(v)), json.Valid([]byte(v)) && isCompact([]byte(v)); got != want {
			t.Errorf("validCompact(%q) = %v, want %v", v, got, want)
		}
	}
	deep := strings.Repeat("[", maxRawDepth+1) + strings.Repeat("]", maxRawDepth+1)
	if validCompact([]byte(deep)) || !validCompact([]byte(deep[1:len(deep)-1])) {
		t.Errorf("validCompact takes nesting up to %d deep, and no deeper", maxRawDepth)
	}
}

// FuzzJobJSON builds jobs of every field from the fuzzer's bytes and checks
// each writer against writeJSON.
func FuzzJobJSON(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("\x03\x0aorder-1234\x06emails\x06active\x06\x02\x07\x05\x04\x03\x02\x01\xf3\xf4\xfa"))
	f.Add([]byte("\x02\xff\xf0\xf1\x22\x5c\x00\x1f\x7f\xe2\x80\xa8\xed\xa0\x80\x05\x05\x05\x06\x07\x01\x01\x01\x01\x01"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s := &jobSource{data: data}
		jobs := make([]job.Job, 1+s.next()%4)
		errs := make([]error, len(jobs))
		for i := range jobs {
			jobs[i] = s.job()
			switch s.next() % 8 {
			case 0:
				errs[i] = fmt.Errorf("%w: %s", job.ErrStale, jobs[i].ID)
			case 1:
				errs[i] = job.ErrGone
			}
		}
		checkJobJSON(t, jobs, errs)
	})
}

// checkJobJSON checks every writer against writeJSON of its DTO: each job
// alone (whole, and minimal), as enqueued and as claimed lists, the first
// completed with the others as next (and without next), and all of them
// completed in one batch, job i refused with errs[i] when there is one;
// the completed ones whole, and minimal. When every stored
// value is strict JSON, as decode lets only such values in, each
// answer is too, and UTF-8, whatever bytes the strings of a row hold.
func checkJobJSON(t testing.TB, jobs []job.Job, errs []error) {
	t.Helper()
	strict := strictValues(jobs)
	check := func(name string, got, want func(w http.ResponseWriter)) {
		t.Helper()
		if body := same(t, name, got, want); strict && (!utf8.Valid(body) || !jsontext.Value(body).IsValid()) {
			t.Fatalf("%s answered %q: not strict JSON, though every stored value is", name, body)
		}
	}
	for _, j := range jobs {
		for _, v := range []json.RawMessage{j.Payload, j.Result, j.Progress} {
			if got, want := validCompact(v), json.Valid(v) && isCompact(v); got != want {
				t.Fatalf("validCompact(%q) = %v, json.Valid and isCompact say %v", v, got, want)
			}
		}
		check("job", func(w http.ResponseWriter) { writeJob(w, http.StatusCreated, j) },
			func(w http.ResponseWriter) { writeJSON(w, http.StatusCreated, jobOf(j)) })
		check("minimal job", func(w http.ResponseWriter) { writeJobAs(w, http.StatusOK, j, minimal) },
			func(w http.ResponseWriter) { writeJSON(w, http.StatusOK, viewOf(j, minimal)) })
		want := httptest.NewRecorder()
		writeJSON(want, http.StatusOK, claimedOf([]job.Job{j})[0])
		if got := string(appendJob(nil, j, claimed)) + "\n"; got != want.Body.String() {
			t.Fatalf("appendJob wrote\n%q\nencoding/json\n%q", got, want.Body)
		}
	}
	check("list", func(w http.ResponseWriter) { writeJobList(w, jobs) },
		func(w http.ResponseWriter) { writeJSON(w, http.StatusOK, jobListOf(jobs, false)) })
	check("claimed", func(w http.ResponseWriter) { writeClaimed(w, lease.Claimed{Jobs: jobs, RetryAfter: -1}) },
		func(w http.ResponseWriter) { writeJSON(w, http.StatusOK, jobListOf(jobs, true)) })
	held := lease.Claimed{Jobs: jobs, Held: "rate_limit", RetryAfter: 250 * time.Millisecond}
	check("claimed, held", func(w http.ResponseWriter) { writeClaimed(w, held) },
		func(w http.ResponseWriter) {
			writeJSON(w, http.StatusOK, ClaimResponse{Jobs: claimedOf(jobs), RetryAfterMs: 250, HeldBy: "rate_limit"})
		})
	for _, next := range []string{"", "42", awkward} {
		check("page", func(w http.ResponseWriter) { writeJobPage(w, jobs, next) },
			func(w http.ResponseWriter) { writeJSON(w, http.StatusOK, jobPageOf(jobs, next)) })
	}
	outcomes, batch := make([]lease.Completed, len(jobs)), make([]lease.Completion, len(jobs))
	for i, j := range jobs {
		outcomes[i].Job, batch[i].ID = j, j.ID
		if i < len(errs) {
			outcomes[i].Err = errs[i]
		}
	}
	for _, v := range []view{whole, minimal} {
		for _, withNext := range []bool{false, true} {
			check("complete", func(w http.ResponseWriter) { writeCompleted(w, jobs[0], v, jobs[1:], withNext) },
				func(w http.ResponseWriter) { writeJSON(w, http.StatusOK, completedOf(jobs[0], v, jobs[1:], withNext)) })
			check("batch complete", func(w http.ResponseWriter) { writeCompleteBatch(w, "/q", batch, outcomes, v, jobs, withNext) },
				func(w http.ResponseWriter) {
					writeJSON(w, http.StatusOK, completeBatchOf("/q", batch, outcomes, v, jobs, withNext))
				})
		}
	}
}

// strictValues reports whether each payload, result and progress of jobs
// is strict JSON (no member name twice, UTF-8, no lone surrogate escape),
// not JSON at all (answered null), or absent: none is JSON that only
// encoding/json v1 would take.
func strictValues(jobs []job.Job) bool {
	for _, j := range jobs {
		for _, v := range []json.RawMessage{j.Payload, j.Result, j.Progress} {
			if json.Valid(v) && !jsontext.Value(v).IsValid() {
				return false
			}
		}
	}
	return true
}

// The oracle: the DTOs that define the spec, as encoding/json writes them.
// A stored value that is not JSON is null in them, as the writers answer it.

// jobOf is the API view of j, without its token.
func jobOf(j job.Job) Job {
	return Job{
		ID: j.ID, Queue: j.Queue, State: j.State,
		Payload: orNull(j.Payload), Result: valueOrNull(j.Result), Progress: valueOrNull(j.Progress),
		Priority: j.Priority, Attempts: j.Attempts, MaxAttempts: j.MaxAttempts, Stalled: j.Stalled,
		LastError: j.LastError, CancelRequested: j.CancelRequested, CancelReason: j.CancelReason,
		Worker: j.Worker,
		Group:  j.Group, DedupeKey: j.DedupeKey, ExpiresAt: stamp(j.ExpiresAt), TimeoutMs: j.Timeout.Milliseconds(),
		Traceparent: j.Traceparent, BatchID: j.BatchID, DependsOn: j.DependsOn,
		OnDependencyFailure: dependencyFailureOf(j),
		CreatedAt:           stamp(j.CreatedAt), RunAt: stamp(j.RunAt), StartedAt: stamp(j.StartedAt),
		LeaseExpiresAt: stamp(j.LeaseExpiresAt), FinishedAt: stamp(j.FinishedAt),
		LogLines: j.LogLines,
	}
}

// dependencyFailureOf is j's on_dependency_failure: only with depends_on.
func dependencyFailureOf(j job.Job) string {
	if len(j.DependsOn) == 0 {
		return ""
	}
	return job.OnDependencyFailure(j.RunOnFailure)
}

// orNull is v, or null when v is empty or not JSON.
func orNull(v json.RawMessage) json.RawMessage {
	if len(v) == 0 || !json.Valid(v) {
		return json.RawMessage("null")
	}
	return v
}

// valueOrNull is v, empty (omitted) when empty, null when not JSON.
func valueOrNull(v json.RawMessage) json.RawMessage {
	if len(v) == 0 {
		return nil
	}
	return orNull(v)
}

// viewOf is the API view of j as v shows it: minimal leaves out payload
// and result.
func viewOf(j job.Job, v view) Job {
	out := jobOf(j)
	if v == minimal {
		out.Payload, out.Result = nil, nil
	}
	return out
}

// claimedOf is the API view of jobs just claimed: with their tokens.
func claimedOf(jobs []job.Job) []Job {
	out := make([]Job, len(jobs))
	for i, j := range jobs {
		out[i] = jobOf(j)
		out[i].Token = j.Token
	}
	return out
}

func jobListOf(jobs []job.Job, claimed bool) JobList {
	if claimed {
		return JobList{Jobs: claimedOf(jobs)}
	}
	list := JobList{Jobs: make([]Job, len(jobs))}
	for i, j := range jobs {
		list.Jobs[i] = jobOf(j)
	}
	return list
}

func jobPageOf(jobs []job.Job, next string) JobPage {
	page := JobPage{Jobs: make([]Job, len(jobs)), NextCursor: nextCursor(next)}
	for i, j := range jobs {
		page.Jobs[i] = jobOf(j)
	}
	return page
}

func completedOf(done job.Job, v view, next []job.Job, withNext bool) CompleteResponse {
	resp := CompleteResponse{Job: viewOf(done, v)}
	if withNext {
		resp.Next = claimedOf(next)
	}
	return resp
}

func completeBatchOf(instance string, batch []lease.Completion, outcomes []lease.Completed, v view, next []job.Job, withNext bool) CompleteBatchResponse {
	resp := CompleteBatchResponse{Results: make([]CompleteResult, len(outcomes))}
	for i, o := range outcomes {
		if o.Err != nil {
			p := newProblem(codeOf(o.Err), o.Err.Error())
			p.Instance = instance
			resp.Results[i].CompleteRefusal = &CompleteRefusal{ID: batch[i].ID, Problem: p}
			continue
		}
		j := viewOf(o.Job, v)
		resp.Results[i].Job = &j
	}
	if withNext {
		resp.Next = claimedOf(next)
	}
	return resp
}

// same fails t unless got and want answer the same status, content type and
// body.
func same(t testing.TB, name string, got, want func(w http.ResponseWriter)) (body []byte) {
	t.Helper()
	answer := func(write func(http.ResponseWriter)) string {
		rec := httptest.NewRecorder()
		write(rec)
		body = rec.Body.Bytes()
		return fmt.Sprintf("%d %s\n%s", rec.Code, rec.Header().Get("Content-Type"), rec.Body)
	}
	if w, g := answer(want), answer(got); g != w {
		t.Fatalf("%s answered\n%q\nencoding/json\n%q", name, g, w)
	}
	return body
}

// jobSource makes job fields from a fuzzer's bytes. Each read takes the
// next bytes, zero once they run out, so that every input makes jobs.
type jobSource struct{ data []byte }

func (s *jobSource) next() byte {
	if len(s.data) == 0 {
		return 0
	}
	c := s.data[0]
	s.data = s.data[1:]
	return c
}

func (s *jobSource) job() job.Job {
	return job.Job{ID: s.string(), Queue: s.string(), State: s.string(),
		Payload: s.raw(), Result: s.raw(), Progress: s.raw(),
		Priority: int(s.int()), Attempts: int(s.int()), MaxAttempts: int(s.int()), Stalled: int(s.int()),
		LastError: s.string(), CancelRequested: s.next()%2 == 1, CancelReason: s.string(), Worker: s.string(), Group: s.string(),
		DedupeKey: s.string(), ExpiresAt: s.time(), Timeout: time.Duration(s.int()%1e9) * time.Millisecond,
		Token: s.int(), CreatedAt: s.time(), RunAt: s.time(), StartedAt: s.time(),
		LeaseExpiresAt: s.time(), FinishedAt: s.time(), Traceparent: s.string(),
		BatchID: s.string(), DependsOn: s.strings(), RunOnFailure: s.next()%2 == 1,
		LogLines: int(s.next()) * 4}
}

// strings is 0 to 3 strings.
func (s *jobSource) strings() []string {
	var out []string
	for range s.next() % 4 {
		out = append(out, s.string())
	}
	return out
}

// int is any int64, of 0 to 8 bytes.
func (s *jobSource) int() int64 {
	var v int64
	for range s.next() % 9 {
		v = v<<8 | int64(s.next())
	}
	return v
}

// pieces are what bytes from 0xf0 up stand for in a string: runes to
// escape or keep, and cut sequences.
var pieces = []string{"\u2028", "\u2029", "é", "日本", "😀", "\ufffd", "<>&", "\u00a0",
	"\xe2\x80", "\xed\xa0\x80", "\xf0\x9f\x98", `\"`, "\x7f", "\xc3", "\xef\xbf\xbd", "\u2027"}

// string is up to 23 bytes or pieces: any byte, valid UTF-8 or not.
func (s *jobSource) string() string {
	var b []byte
	for range s.next() % 24 {
		if c := s.next(); c >= 0xf0 {
			b = append(b, pieces[c-0xf0]...)
		} else {
			b = append(b, c)
		}
	}
	return string(b)
}

// time is the zero time, a time as job.Parse reads one, or any time in
// another zone, down to the nanosecond and past year 9999.
func (s *jobSource) time() time.Time {
	switch s.next() % 4 {
	case 0:
		return time.Time{}
	case 1:
		return time.UnixMilli(s.int()).UTC()
	case 2:
		return time.Unix(0, s.int()).In(time.FixedZone("", 5*3600+1800))
	default:
		return time.Unix(s.int(), s.int())
	}
}

// raw is nil, a string's bytes (seldom JSON), a valid compact JSON value,
// or one with a byte changed (often not JSON: the fallback).
func (s *jobSource) raw() json.RawMessage {
	switch s.next() % 6 {
	case 0:
		return nil
	case 1:
		return json.RawMessage(s.string())
	case 2:
		v := s.value(nil, 0)
		v[int(s.next())%len(v)] = s.next()
		return v
	default:
		return s.value(nil, 0)
	}
}

// value appends a valid compact JSON value, nested up to 3 deep.
func (s *jobSource) value(b []byte, depth int) []byte {
	switch k := s.next() % 8; {
	case k == 0:
		return append(b, "null"...)
	case k == 1:
		return strconv.AppendBool(b, s.next()%2 == 1)
	case k == 2:
		return strconv.AppendInt(b, s.int(), 10)
	case k == 3:
		return strconv.AppendFloat(b, float64(s.int())/1e3, 'g', -1, 64)
	case k == 4:
		quoted, _ := json.Marshal(s.string()) // escaped, HTML too
		return append(b, quoted...)
	case k == 5 || depth >= 3:
		return appendLiteral(b, s.string())
	case k == 6:
		b = append(b, '[')
		for i := range s.next() % 4 {
			if i > 0 {
				b = append(b, ',')
			}
			b = s.value(b, depth+1)
		}
		return append(b, ']')
	default:
		b = append(b, '{')
		for i := range s.next() % 4 {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(appendLiteral(b, s.string()), ':')
			b = s.value(b, depth+1)
		}
		return append(b, '}')
	}
}

// appendLiteral appends str as a JSON string escaping only what JSON
// requires: quote, backslash and control bytes. U+2028 and invalid UTF-8
// stay as they are, as a client may send them.
func appendLiteral(b []byte, str string) []byte {
	b = append(b, '"')
	for _, c := range []byte(str) {
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20:
			b = fmt.Appendf(b, `\u%04x`, c)
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

// BenchmarkJobJSON answers 16 claimed jobs with 100-byte payloads by hand
// and by encoding/json.
func BenchmarkJobJSON(b *testing.B) {
	jobs := make([]job.Job, 16)
	for i := range jobs {
		t := time.UnixMilli(1_795_000_000_000 + int64(i)).UTC()
		jobs[i] = job.Job{ID: fmt.Sprintf("0190f8a2-7c4e-7d2a-9b1e-3f5c2a1b0c%02d", i), Queue: "emails",
			State: "active", Payload: json.RawMessage(`{"to":"ada@example.com","template":"welcome","vars":{"name":"Ada","plan":"pro"},"n":1234567,"x":123}`),
			Attempts: 1, MaxAttempts: 3, Worker: "worker-1", Token: int64(i + 1),
			CreatedAt: t, StartedAt: t, LeaseExpiresAt: t.Add(time.Minute)}
	}
	w := discard{http.Header{}}
	b.Run("hand", func(b *testing.B) {
		for b.Loop() {
			writeClaimed(w, lease.Claimed{Jobs: jobs, RetryAfter: -1})
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			writeJSON(w, http.StatusOK, jobListOf(jobs, true))
		}
	})
}

// discard is a ResponseWriter that keeps nothing.
type discard struct{ h http.Header }

func (d discard) Header() http.Header         { return d.h }
func (d discard) Write(p []byte) (int, error) { return len(p), nil }
func (d discard) WriteHeader(int)             {}

// TestJobAnswersSayTheirLength: a hand-written answer carries the length of
// its body, so that a long list is not sent in chunks.
func TestJobAnswersSayTheirLength(t *testing.T) {
	jobs := make([]job.Job, 50)
	for i := range jobs {
		jobs[i] = job.Job{ID: fmt.Sprintf("j%d", i), Queue: "q", State: job.StateActive,
			Payload: json.RawMessage(`{"pad":"` + strings.Repeat("x", 100) + `"}`), Token: int64(i + 1)}
	}
	rec := httptest.NewRecorder()
	writeClaimed(rec, lease.Claimed{Jobs: jobs, RetryAfter: -1})
	if got := rec.Header().Get("Content-Length"); got != strconv.Itoa(rec.Body.Len()) || rec.Body.Len() < 5000 {
		t.Fatalf("Content-Length %q for a body of %d bytes", got, rec.Body.Len())
	}
}
