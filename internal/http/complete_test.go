package http_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/echo-mq/echo_mq/internal/redistest"
)

// completed is a complete's answer: the job, and the next jobs claimed.
type completed struct {
	jobView
	Next *[]jobView `json:"next"`
}

// batchResult is one outcome of a batch complete: a job, or a problem
// with the id of the job it refused.
type batchResult struct {
	jobView
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail"`
	Code   string `json:"code"`
}

type batchResults struct {
	Results []batchResult `json:"results"`
	Next    *[]jobView    `json:"next"`
}

// complete completes job id of q with body (token added).
func (h *harness) complete(tb testing.TB, q, id string, token int64, extra string) reply {
	tb.Helper()
	return h.do(tb, "POST", jobPath(q, id, "complete"), fmt.Sprintf(`{"token":%d%s}`, token, extra))
}

func TestComplete(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.add(t, q, "a")
		c := h.claimOne(t, q, "a", 30_000)
		result := `{"ok":true,"n":12345678901234567890,"s":"✓"}`
		r := h.complete(t, q, "a", c.Token, `,"result":`+result)
		done := must[completed](t, r, http.StatusOK)
		if done.ID != "a" || done.State != "completed" || !stampRE.MatchString(done.FinishedAt) || done.LeaseExpiresAt != "" {
			t.Errorf("got %+v, want a completed, finished_at set, no lease", done.jobView)
		}
		sameJSON(t, "result", done.Result, []byte(result))
		if strings.Contains(string(r.Body), `"token"`) || done.Next != nil {
			t.Errorf("complete without claim answered %s, want no token and no next", r.Body)
		}
		sameJSON(t, "result by GET", h.wantState(t, q, "a", "completed").Result, []byte(result))

		again := must[completed](t, h.complete(t, q, "a", c.Token, `,"result":{"other":1}`), http.StatusOK)
		if again.State != "completed" || again.FinishedAt != done.FinishedAt {
			t.Errorf("repeat got %+v, want the first answer %+v", again.jobView, done.jobView)
		}
		sameJSON(t, "result after a repeat", again.Result, []byte(result))
		wantProblem(t, h.complete(t, q, "a", c.Token+1, ""), 409, "EMQSTALE")
		wantProblem(t, h.complete(t, q, "nope", c.Token, ""), 404, "EMQGONE")
	})
}

// TestCompleteLapsedNotSwept: a lapsed lease that no sweep has recovered
// still completes: the token proves nobody else holds the job.
func TestCompleteLapsedNotSwept(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.add(t, q, "a")
		c := h.claimOne(t, q, "a", 100)
		waitPast(t, c.LeaseExpiresAt)
		if j := must[jobView](t, h.complete(t, q, "a", c.Token, `,"result":1`), http.StatusOK); j.State != "completed" {
			t.Errorf("got %+v, want completed", j)
		}
		h.wantState(t, q, "a", "completed")
		if s := h.sweep(t, q, nil); len(s.all()) != 0 {
			t.Errorf("sweep after the complete moved %+v", s)
		}
	})
}

func TestCompleteRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		lose  func(t *testing.T, h *harness, q string, c jobView)
		token func(c jobView) int64
		code  string
		state string
	}{
		{"wrong token", func(*testing.T, *harness, string, jobView) {}, func(c jobView) int64 { return c.Token + 1 }, "EMQSTALE", "active"},
		{"swept", func(t *testing.T, h *harness, q string, c jobView) {
			h.sweepUntil(t, q, nil, "a")
		}, func(c jobView) int64 { return c.Token }, "EMQSTALE", "pending"},
		{"swept and claimed again", func(t *testing.T, h *harness, q string, c jobView) {
			h.sweepUntil(t, q, nil, "a")
			h.claimOne(t, q, "a", 30_000)
		}, func(c jobView) int64 { return c.Token }, "EMQSTALE", "active"},
		{"failed", func(t *testing.T, h *harness, q string, c jobView) {
			must[jobView](t, h.do(t, "POST", jobPath(q, "a", "fail"), fmt.Sprintf(`{"token":%d,"error":"x","fatal":true}`, c.Token)), 200)
		}, func(c jobView) int64 { return c.Token }, "EMQSTALE", "dead"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			forEachBackend(t, func(t *testing.T, h *harness) {
				q := redistest.Queue(t)
				h.add(t, q, "a")
				c := h.claimOne(t, q, "a", 100)
				tc.lose(t, h, q, c)
				wantProblem(t, h.complete(t, q, "a", tc.token(c), `,"result":"late"`), 409, tc.code)
				if j := h.wantState(t, q, "a", tc.state); j.Result != nil {
					t.Errorf("the refused complete stored result %s", j.Result)
				}
			})
		})
	}
}

func TestCompleteClaimNext(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.add(t, q, "a", "b", "c")
		ca := h.claimOne(t, q, "a", 30_000)
		r := h.complete(t, q, "a", ca.Token, `,"claim":{"count":2,"lease_ms":5000}`)
		done := must[completed](t, r, http.StatusOK)
		if done.State != "completed" || done.Next == nil || fmt.Sprint(ids(*done.Next)) != "[b c]" {
			t.Fatalf("got %s, want a completed and next [b c]", r.Body)
		}
		for _, n := range *done.Next {
			lease := parseStamp(t, n.LeaseExpiresAt).Sub(parseStamp(t, n.StartedAt))
			if n.Token <= 0 || n.Token == ca.Token || n.State != "active" || lease != 5*time.Second {
				t.Errorf("next job %+v, want active with a fresh token and a 5s lease", n)
			}
			h.wantState(t, q, n.ID, "active")
		}
		cb := (*done.Next)[0]
		wantEmptyNext(t, h.complete(t, q, "b", cb.Token, `,"claim":{"count":1}`), "an empty queue")

		h.add(t, q, "d")
		h.pause(t, q)
		wantEmptyNext(t, h.complete(t, q, "c", (*done.Next)[1].Token, `,"claim":{"count":1}`), "a paused queue")
		h.wantState(t, q, "d", "pending")
	})
}

// wantEmptyNext fails the test unless r is a 200 complete whose next is [].
func wantEmptyNext(tb testing.TB, r reply, what string) {
	tb.Helper()
	if r.Status != http.StatusOK {
		tb.Fatalf("complete with claim-next on %s got %s, want 200", what, r)
	}
	var raw map[string]json.RawMessage
	_ = json.Unmarshal(r.Body, &raw)
	if next, ok := raw["next"]; !ok || string(next) != "[]" {
		tb.Errorf("complete with claim-next on %s answered next = %s (present: %v), want next: []", what, next, ok)
	}
}

func TestCompleteBatch(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.add(t, q, "a", "b", "c", "d")
		held := map[string]int64{}
		for _, j := range h.claim(t, q, `{"count":3}`) {
			held[j.ID] = j.Token
		}
		body := fmt.Sprintf(`{"jobs":[
			{"id":"a","token":%d,"result":{"n":12345678901234567890}},
			{"id":"b","token":%d},
			{"id":"nope","token":1},
			{"id":"c","token":%d},
			{"id":"a","token":%d,"result":"again"}],
			"claim":{"count":5,"lease_ms":2000}}`, held["a"], held["b"]+100, held["c"], held["a"])
		r := h.do(t, "POST", "/queues/"+q+"/complete", body)
		got := must[batchResults](t, r, http.StatusOK)
		if len(got.Results) != 5 {
			t.Fatalf("got %s, want 5 results", r.Body)
		}
		want := []struct{ id, state, code string }{
			{"a", "completed", ""}, {"b", "", "EMQSTALE"}, {"nope", "", "EMQGONE"}, {"c", "completed", ""}, {"a", "completed", ""},
		}
		status := map[string]int{"EMQSTALE": 409, "EMQGONE": 404}
		for i, w := range want {
			g := got.Results[i]
			if g.ID != w.id || g.State != w.state || g.Code != w.code || (w.code != "" && (g.Status != status[w.code] || g.Type == "" || g.Title == "")) {
				t.Errorf("result %d = %+v, want id %q state %q code %q", i, g, w.id, w.state, w.code)
			}
		}
		var raw struct{ Results []map[string]any }
		_ = json.Unmarshal(r.Body, &raw)
		for i, res := range raw.Results {
			if _, ok := res["token"]; ok {
				t.Errorf("result %d shows a token: %v", i, res)
			}
		}
		sameJSON(t, "a's result", got.Results[0].Result, []byte(`{"n":12345678901234567890}`))
		sameJSON(t, "a's result after the repeat", got.Results[4].Result, []byte(`{"n":12345678901234567890}`))
		if got.Next == nil || len(*got.Next) != 1 || (*got.Next)[0].ID != "d" || (*got.Next)[0].Token <= 0 {
			t.Fatalf("next = %v, want [d] with a token", got.Next)
		}
		h.wantState(t, q, "b", "active")
		h.wantState(t, q, "d", "active")
		body = fmt.Sprintf(`{"jobs":[{"id":"d","token":%d}],"claim":{"count":1}}`, (*got.Next)[0].Token)
		wantEmptyNext(t, h.do(t, "POST", "/queues/"+q+"/complete", body), "an empty queue (batch)")
	})
}
