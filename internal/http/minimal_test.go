package http_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/echo-mq/echo_mq/internal/redistest"
)

// preferMinimal asks for minimal answers.
var preferMinimal = http.Header{"Prefer": {"return=minimal"}}

// preferences are Prefer headers, and whether each asks for a minimal
// answer.
var preferences = []struct {
	name    string
	header  http.Header
	minimal bool
}{
	{"no Prefer", nil, false},
	{"return=representation", http.Header{"Prefer": {"return=representation"}}, false},
	{"return=minimal", preferMinimal, true},
	{"among other preferences", http.Header{"Prefer": {`respond-async, wait=10, return=minimal; foo="a,b"`}}, true},
	{"in a second header, any case, quoted", http.Header{"Prefer": {"respond-async", `RETURN = "minimal"`}}, true},
	{"the first of two holds", http.Header{"Prefer": {"return=representation, return=minimal"}}, false},
}

// bigPayload is a payload a minimal answer leaves out.
var bigPayload = map[string]string{"blob": strings.Repeat("x", 16<<10)}

// members are the members of a JSON object.
type members map[string]json.RawMessage

// finishing is a route that finishes jobs, and how to read the finished
// jobs of its answer.
type finishing struct {
	name  string
	state string // of a job it finished
	// finish finishes held, with header, and a result when the route
	// takes one.
	finish func(tb testing.TB, h *harness, q string, held jobView, header http.Header) reply
	jobs   func(tb testing.TB, r reply) []members
}

var finishings = []finishing{
	{"complete", "completed", func(tb testing.TB, h *harness, q string, held jobView, header http.Header) reply {
		tb.Helper()
		return h.sendWith(tb, "POST", jobPath(q, held.ID, "complete"), header,
			fmt.Sprintf(`{"token":%d,"result":{"done":%q}}`, held.Token, held.ID))
	}, oneJob},
	{"fail", "delayed", func(tb testing.TB, h *harness, q string, held jobView, header http.Header) reply {
		tb.Helper()
		// Retried in an hour: a job failed earlier must not come due (the
		// default backoff's first second) and be claimed before the next.
		return h.sendWith(tb, "POST", jobPath(q, held.ID, "fail"), header,
			fmt.Sprintf(`{"token":%d,"error":"boom","retry_in_ms":3600000}`, held.Token))
	}, oneJob},
	{"batch complete", "completed", func(tb testing.TB, h *harness, q string, held jobView, header http.Header) reply {
		tb.Helper()
		return h.sendWith(tb, "POST", "/queues/"+q+"/complete", header,
			fmt.Sprintf(`{"jobs":[{"id":%q,"token":%d,"result":{"done":%q}}]}`, held.ID, held.Token, held.ID))
	}, func(tb testing.TB, r reply) []members {
		tb.Helper()
		return must[struct{ Results []members }](tb, r, http.StatusOK).Results
	}},
}

// oneJob is the job a complete or a fail answered.
func oneJob(tb testing.TB, r reply) []members {
	tb.Helper()
	return []members{must[members](tb, r, http.StatusOK)}
}

// TestFinishedJobsMinimal: complete, fail and batch complete answer the
// jobs they finished without payload and result when the request prefers
// return=minimal, however the Prefer headers say it, and say so in
// Preference-Applied; whole otherwise. Every answer varies with Prefer,
// and the job keeps its payload and result.
func TestFinishedJobsMinimal(t *testing.T) {
	t.Parallel()
	for _, f := range finishings {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			forEachBackend(t, func(t *testing.T, h *harness) {
				q := redistest.Queue(t)
				for i, p := range preferences {
					t.Run(p.name, func(t *testing.T) {
						id := fmt.Sprintf("j%d", i)
						h.enqueue(t, q, map[string]any{"id": id, "payload": bigPayload})
						r := f.finish(t, h, q, h.claimOne(t, q, id, 30_000), p.header)
						wantPreference(t, r, p.minimal)
						jobs := f.jobs(t, r)
						if len(jobs) != 1 {
							t.Fatalf("got %s, want one job", r)
						}
						wantJobMembers(t, jobs[0], id, f.state, p.minimal)
						if p.minimal && len(r.Body) > 4<<10 {
							t.Errorf("a minimal answer took %d bytes, want far fewer than its payload's 16 KiB", len(r.Body))
						}
						if j := h.wantState(t, q, id, f.state); len(j.Payload) < 16<<10 {
							t.Errorf("%s lost the job's payload: %.100s", f.name, j.Payload)
						}
					})
				}
			})
		})
	}
}

// wantJobMembers fails tb unless m is job id in state, with payload and
// result when whole (a fail stores no result), without when minimal.
func wantJobMembers(tb testing.TB, m members, id, state string, minimal bool) {
	tb.Helper()
	if string(m["id"]) != fmt.Sprintf("%q", id) || string(m["state"]) != fmt.Sprintf("%q", state) {
		tb.Fatalf("got job %s in state %s, want %s %s", m["id"], m["state"], id, state)
	}
	for _, name := range []string{"queue", "attempts", "max_attempts", "created_at", "started_at"} {
		if _, ok := m[name]; !ok {
			tb.Errorf("the answer leaves out %s: %v", name, slices.Sorted(maps.Keys(m)))
		}
	}
	_, payload := m["payload"]
	_, result := m["result"]
	switch {
	case minimal && (payload || result):
		tb.Errorf("a minimal answer holds payload (%v) or result (%v)", payload, result)
	case !minimal && (!payload || !result && state == "completed"):
		tb.Errorf("a whole answer lacks payload (%v) or result (%v)", payload, result)
	}
}

// wantPreference fails tb unless r is a 200 that varies with Prefer and
// says Preference-Applied: return=minimal exactly when minimal.
func wantPreference(tb testing.TB, r reply, minimal bool) {
	tb.Helper()
	if r.Status != http.StatusOK {
		tb.Fatalf("got %s, want 200", r)
	}
	if !listHas(r.Header, "Vary", "Prefer") {
		tb.Errorf("Vary = %q, want Prefer in it", r.Header.Values("Vary"))
	}
	var want []string
	if minimal {
		want = []string{"return=minimal"}
	}
	if got := r.Header.Values("Preference-Applied"); !slices.Equal(got, want) {
		tb.Errorf("Preference-Applied = %q, want %q", got, want)
	}
}

// listHas reports whether h's comma-separated list header name holds
// value, in any case.
func listHas(h http.Header, name, value string) bool {
	for _, line := range h.Values(name) {
		for v := range strings.SplitSeq(line, ",") {
			if strings.EqualFold(strings.TrimSpace(v), value) {
				return true
			}
		}
	}
	return false
}

// TestCompleteMinimalRepeat: a complete repeated with its token answers
// as the first time, minimal when asked; whole, the same job with its
// payload and result, when not. A refused complete is the same problem
// whatever it prefers.
func TestCompleteMinimalRepeat(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.enqueue(t, q, map[string]any{"id": "a", "payload": bigPayload})
		held := h.claimOne(t, q, "a", 30_000)
		complete := finishings[0].finish
		first := complete(t, h, q, held, preferMinimal)
		wantPreference(t, first, true)
		again := complete(t, h, q, held, preferMinimal)
		wantPreference(t, again, true)
		if !maps.EqualFunc(decode[members](t, again), decode[members](t, first), jsonEqual) {
			t.Errorf("the repeat answered %s, want the first answer %s", again.Body, first.Body)
		}
		whole := complete(t, h, q, held, nil)
		wantPreference(t, whole, false)
		full := decode[members](t, whole)
		want, _ := json.Marshal(bigPayload)
		sameJSON(t, "payload", full["payload"], want)
		sameJSON(t, "result", full["result"], []byte(`{"done":"a"}`))
		delete(full, "payload")
		delete(full, "result")
		if !maps.EqualFunc(full, decode[members](t, first), jsonEqual) {
			t.Errorf("the whole answer but payload and result is %v, the minimal one %s", full, first.Body)
		}

		stale := held
		stale.Token++
		r := complete(t, h, q, stale, preferMinimal)
		wantProblem(t, r, http.StatusConflict, "EMQSTALE")
		if got := r.Header.Values("Preference-Applied"); len(got) > 0 {
			t.Errorf("a problem says Preference-Applied %q", got)
		}
	})
}

func jsonEqual(a, b json.RawMessage) bool { return string(a) == string(b) }

// TestCompleteMinimalClaimNext: with claim-next, a minimal complete or
// batch complete still answers the jobs it claimed whole, payload and
// token included; a job the batch refused is its whole problem.
func TestCompleteMinimalClaimNext(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.add(t, q, "a", "b", "c", "d")
		a := h.claimOne(t, q, "a", 30_000)
		r := h.sendWith(t, "POST", jobPath(q, "a", "complete"), preferMinimal,
			fmt.Sprintf(`{"token":%d,"result":1,"claim":{"count":2}}`, a.Token))
		wantPreference(t, r, true)
		wantJobMembers(t, decode[members](t, r), "a", "completed", true)
		next := decode[struct {
			Next []jobView `json:"next"`
		}](t, r).Next
		wantNextWhole(t, next, "b", "c")

		r = h.sendWith(t, "POST", "/queues/"+q+"/complete", preferMinimal, fmt.Sprintf(
			`{"jobs":[{"id":"b","token":%d,"result":2},{"id":"gone","token":1},{"id":"c","token":%d}],"claim":{"count":5}}`,
			next[0].Token, next[1].Token))
		wantPreference(t, r, true)
		batch := decode[struct {
			Results []members `json:"results"`
			Next    []jobView `json:"next"`
		}](t, r)
		if len(batch.Results) != 3 {
			t.Fatalf("got %s, want 3 results", r.Body)
		}
		wantJobMembers(t, batch.Results[0], "b", "completed", true)
		wantJobMembers(t, batch.Results[2], "c", "completed", true)
		var gone problem
		if err := json.Unmarshal(batch.Results[1]["code"], &gone.Code); err != nil || gone.Code != "EMQGONE" ||
			len(batch.Results[1]["type"]) == 0 || len(batch.Results[1]["title"]) == 0 || len(batch.Results[1]["detail"]) == 0 {
			t.Errorf("the refused job's result is %v, want the whole EMQGONE problem", batch.Results[1])
		}
		wantNextWhole(t, batch.Next, "d")
	})
}

// wantNextWhole fails tb unless next are the jobs ids, active, each with
// its payload ({"id": id}, as add enqueues it) and a token.
func wantNextWhole(tb testing.TB, next []jobView, ids ...string) {
	tb.Helper()
	if len(next) != len(ids) {
		tb.Fatalf("next holds %v, want %v", next, ids)
	}
	for i, j := range next {
		if j.ID != ids[i] || j.State != "active" || j.Token <= 0 {
			tb.Errorf("next job %d is %+v, want %s active with a token", i, j, ids[i])
		}
		sameJSON(tb, "next job's payload", j.Payload, fmt.Appendf(nil, `{"id":%q}`, ids[i]))
	}
}
