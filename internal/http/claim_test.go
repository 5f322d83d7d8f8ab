package http_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/echo-mq/echo_mq/internal/redistest"
)

func TestClaimEmpty(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		for _, body := range []any{nil, `{}`, `{"count":5}`} {
			r := h.do(t, "POST", "/queues/"+q+"/claim", body)
			if r.Status != http.StatusOK || strings.TrimSpace(string(r.Body)) != `{"jobs":[]}` {
				t.Errorf("claim %v of an empty queue got %s, want 200 {\"jobs\":[]}", body, r)
			}
		}
	})
}

func TestClaimPriorityThenFIFO(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		for i, p := range []int{5, 0, 9, 5, 0, 1} {
			h.enqueue(t, q, fmt.Sprintf(`{"id":"j%d-p%d","payload":%d,"priority":%d}`, i, p, i, p))
		}
		var got []string
		for _, count := range []int{2, 3, 100} {
			got = append(got, ids(h.claim(t, q, map[string]int{"count": count}))...)
		}
		want := "[j1-p0 j4-p0 j5-p1 j0-p5 j3-p5 j2-p9]"
		if fmt.Sprint(got) != want {
			t.Errorf("claim order %v, want %s", got, want)
		}
	})
}

func TestClaimLeaseAndToken(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.add(t, q, "a", "b", "c")
		r := h.do(t, "POST", "/queues/"+q+"/claim", `{"count":2,"lease_ms":120000,"worker":"w-1"}`)
		jobs := must[jobList](t, r, http.StatusOK).Jobs
		if len(jobs) != 2 {
			t.Fatalf("got %v, want 2 jobs", ids(jobs))
		}
		var raw struct{ Jobs []map[string]json.RawMessage }
		_ = json.Unmarshal(r.Body, &raw)
		seen := map[int64]bool{}
		for i, j := range jobs {
			if j.State != "active" || j.Attempts != 1 || j.Token <= 0 || seen[j.Token] {
				t.Errorf("claimed %+v, want active, attempts 1 and a fresh positive token", j)
			}
			seen[j.Token] = true
			if tok := string(raw.Jobs[i]["token"]); tok != fmt.Sprint(j.Token) {
				t.Errorf("token is %s in JSON, want the integer %d", tok, j.Token)
			}
			lease := parseStamp(t, j.LeaseExpiresAt).Sub(parseStamp(t, j.StartedAt))
			if lease != 120*time.Second {
				t.Errorf("lease_expires_at - started_at = %v, want the 120s asked", lease)
			}
			h.wantState(t, q, j.ID, "active")
		}
		dflt := h.claim(t, q, nil)
		if len(dflt) != 1 || dflt[0].ID != "c" {
			t.Fatalf("default claim got %v, want [c]", ids(dflt))
		}
		if lease := parseStamp(t, dflt[0].LeaseExpiresAt).Sub(parseStamp(t, dflt[0].StartedAt)); lease != 30*time.Second {
			t.Errorf("default lease = %v, want 30s", lease)
		}
		for _, id := range []string{"a", "b", "c"} {
			if g := h.do(t, "GET", jobPath(q, id), nil); strings.Contains(string(g.Body), `"token"`) {
				t.Errorf("GET %s shows a token: %s", id, g.Body)
			}
		}
	})
}

// TestClaimTokensAreUnguessable: six claims one after another give tokens
// drawn apart (docs/design.md#fencing), not a counter's next values: none
// is the one before plus one, and they span more than 2^40.
func TestClaimTokensAreUnguessable(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.add(t, q, "a", "b", "c", "d", "e", "f")
		var tokens []int64
		for range 6 {
			jobs := h.claim(t, q, nil)
			if len(jobs) != 1 {
				t.Fatalf("claim got %v, want one job", ids(jobs))
			}
			tokens = append(tokens, jobs[0].Token)
		}
		lo, hi := slices.Min(tokens), slices.Max(tokens)
		for i, tok := range tokens {
			if tok <= 0 || tok >= 1<<53 || (i > 0 && tok == tokens[i-1]+1) {
				t.Errorf("tokens %v: want each in [1, 2^53) and none the one before plus one", tokens)
				break
			}
		}
		if hi-lo < 1<<40 {
			t.Errorf("tokens %v span %d, want more than 2^40: random, not counted", tokens, hi-lo)
		}
	})
}

func TestClaimPaused(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.add(t, q, "a")
		h.pause(t, q)
		if jobs := h.claim(t, q, nil); len(jobs) != 0 {
			t.Errorf("claim of a paused queue got %v, want none", ids(jobs))
		}
		h.wantState(t, q, "a", "pending")
	})
}

func TestClaimDueDelayedWithoutReaper(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		d := h.enqueue(t, q, `{"id":"later","payload":1,"delay_ms":200}`)
		h.add(t, q, "now")
		if got := ids(h.claim(t, q, `{"count":10}`)); fmt.Sprint(got) != "[now]" {
			t.Fatalf("claim before the delay got %v, want [now]", got)
		}
		waitPast(t, d.RunAt)
		got := h.claim(t, q, `{"count":10}`)
		if len(got) != 1 || got[0].ID != "later" || got[0].State != "active" {
			t.Fatalf("claim after the delay got %v, want [later] at once", ids(got))
		}
		h.wantState(t, q, "later", "active")
	})
}
