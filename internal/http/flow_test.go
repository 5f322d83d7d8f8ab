package http_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/echo-mq/echo_mq/internal/redistest"
)

type settingsView struct {
	Concurrency      *int      `json:"concurrency"`
	RateLimit        *rateView `json:"rate_limit"`
	GroupConcurrency *int      `json:"group_concurrency"`
	GroupRateLimit   *rateView `json:"group_rate_limit"`
	GroupOrder       *string   `json:"group_order"`
}

type rateView struct {
	Limit    int   `json:"limit"`
	WindowMs int64 `json:"window_ms"`
}

type claimView struct {
	Jobs         []jobView `json:"jobs"`
	RetryAfterMs *int64    `json:"retry_after_ms"`
	HeldBy       string    `json:"held_by"`
}

type groupView struct {
	Name   string           `json:"name"`
	Paused bool             `json:"paused"`
	Counts map[string]int64 `json:"counts"`
}

type groupPage struct {
	Groups     []groupView `json:"groups"`
	NextCursor *string     `json:"next_cursor"`
}

func settingsPath(q string) string { return "/queues/" + q + "/settings" }

// claimAnswer claims on q with body and answers the whole ClaimResponse:
// the jobs, and what held the claim back.
func (h *harness) claimAnswer(tb testing.TB, q string, body any) claimView {
	tb.Helper()
	return must[claimView](tb, h.do(tb, "POST", "/queues/"+q+"/claim", body), http.StatusOK)
}

func (h *harness) putSettings(tb testing.TB, q, body string) settingsView {
	tb.Helper()
	return must[settingsView](tb, h.do(tb, "PUT", settingsPath(q), body), http.StatusOK)
}

// addIn enqueues jobs with the given ids in group g.
func (h *harness) addIn(tb testing.TB, q, g string, ids ...string) {
	tb.Helper()
	for _, id := range ids {
		must[jobView](tb, h.do(tb, "POST", jobsPath(q), fmt.Sprintf(`{"id":%q,"payload":{},"group":%q}`, id, g)), http.StatusCreated)
	}
}

func TestSettingsArePutWholeAndReadBack(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		if got := h.do(t, "GET", settingsPath(q), nil); got.Status != http.StatusOK || string(got.Body) != "{}\n" {
			t.Fatalf("a queue without settings answered %s, want {}", got)
		}
		full := `{"concurrency":20,"rate_limit":{"limit":100,"window_ms":1000},"group_concurrency":2,` +
			`"group_rate_limit":{"limit":10,"window_ms":60000},"group_order":"fifo"}`
		put := h.putSettings(t, q, full)
		got := must[settingsView](t, h.do(t, "GET", settingsPath(q), nil), http.StatusOK)
		for _, s := range []settingsView{put, got} {
			if *s.Concurrency != 20 || *s.RateLimit != (rateView{100, 1000}) || *s.GroupConcurrency != 2 ||
				*s.GroupRateLimit != (rateView{10, 60000}) || *s.GroupOrder != "fifo" {
				t.Fatalf("settings answered %+v", s)
			}
		}
		// Put whole: what is left out is no limit.
		if s := h.putSettings(t, q, `{"concurrency":5}`); s.RateLimit != nil || s.GroupOrder != nil || *s.Concurrency != 5 {
			t.Fatalf("a second put answered %+v, want concurrency 5 alone", s)
		}
		entries := entriesOf(h.streamEntries(t, q), "settings", "")
		if len(entries) != 2 || entries[1]["settings"] != `{"concurrency":5}` {
			t.Fatalf("settings events %v, want two, the last with {\"concurrency\":5}", entries)
		}
		wantActor(t, entries[0])
		if s := h.putSettings(t, q, `{}`); s != (settingsView{}) {
			t.Fatalf("put {} answered %+v, want no limits", s)
		}
	})
}

func TestBadSettingsAreRefusedAndChangeNothing(t *testing.T) {
	t.Parallel()
	h := newHarness(t, redistest.Client(t))
	q := redistest.Queue(t)
	h.putSettings(t, q, `{"concurrency":3}`)
	for body, field := range map[string]string{
		`{"concurrency":0}`:                                "concurrency",
		`{"concurrency":100001}`:                           "concurrency",
		`{"rate_limit":{"limit":0,"window_ms":1000}}`:      "rate_limit.limit",
		`{"rate_limit":{"limit":5,"window_ms":9}}`:         "rate_limit.window_ms",
		`{"rate_limit":{"limit":5}}`:                       "rate_limit.window_ms",
		`{"group_rate_limit":{"limit":5,"window_ms":1e9}}`: "group_rate_limit.window_ms",
		`{"group_concurrency":-1}`:                         "group_concurrency",
		`{"group_order":"lifo"}`:                           "group_order",
	} {
		p := wantProblem(t, h.do(t, "PUT", settingsPath(q), body), http.StatusBadRequest, "EMQINVALID")
		wantField(t, p, field)
	}
	wantProblem(t, h.do(t, "PUT", settingsPath(q), `{"concurency":3}`), http.StatusBadRequest, "EMQINVALID")
	if s := must[settingsView](t, h.do(t, "GET", settingsPath(q), nil), http.StatusOK); *s.Concurrency != 3 || s.RateLimit != nil {
		t.Fatalf("after refused puts the settings are %+v, want concurrency 3 alone", s)
	}
}

func TestAClaimALimitHoldsBackSaysWhichAndWhen(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.putSettings(t, q, `{"concurrency":1}`)
		h.add(t, q, "a", "b")
		c := h.claimAnswer(t, q, `{"count":2}`)
		if len(c.Jobs) != 1 || c.Jobs[0].ID != "a" || c.HeldBy != "concurrency" || c.RetryAfterMs == nil || *c.RetryAfterMs < 1 || *c.RetryAfterMs > 1000 {
			t.Fatalf("claim answered %+v, want a alone, held by concurrency, retry within a second", c)
		}
		// Claim-next obeys the limit too: completing a frees its slot for b.
		done := h.complete(t, q, "a", c.Jobs[0].Token, `,"claim":{"count":5}`)
		if next := must[struct{ Next []jobView }](t, done, http.StatusOK).Next; len(next) != 1 || next[0].ID != "b" {
			t.Fatalf("complete with claim-next answered %s, want b alone", done.Body)
		}
		h.add(t, q, "c")
		c = h.claimAnswer(t, q, nil)
		if len(c.Jobs) != 0 || c.HeldBy != "concurrency" {
			t.Fatalf("a claim at the limit answered %+v", c)
		}
	})
}

func TestALongPollWaitsForAFreeSlot(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.putSettings(t, q, `{"concurrency":1}`)
		h.add(t, q, "a", "b")
		a := h.claimOne(t, q, "a", 30_000)
		poll := h.pollAsync(t, q, `{"wait_ms":15000}`)
		stillWaiting(t, poll)
		must[jobView](t, h.complete(t, q, "a", a.Token, ""), http.StatusOK)
		got := await(t, poll, 5*time.Second)
		if jobs := must[jobList](t, got.reply, http.StatusOK).Jobs; len(jobs) != 1 || jobs[0].ID != "b" {
			t.Fatalf("the waiting poll got %s, want b", got.reply)
		}
	})
}

func TestALongPollWaitsForTheRateWindow(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.putSettings(t, q, `{"rate_limit":{"limit":1,"window_ms":500}}`)
		h.add(t, q, "a", "b")
		first := h.claimOne(t, q, "a", 30_000)
		got := await(t, h.pollAsync(t, q, `{"wait_ms":5000}`), 5*time.Second)
		jobs := must[jobList](t, got.reply, http.StatusOK).Jobs
		if len(jobs) != 1 || jobs[0].ID != "b" {
			t.Fatalf("the waiting poll got %s, want b", got.reply)
		}
		if gap := parseStamp(t, jobs[0].StartedAt).Sub(parseStamp(t, first.StartedAt)); gap < 500*time.Millisecond {
			t.Fatalf("b started %v after a, within the 500 ms window", gap)
		}
	})
}

func TestGroupsAreListedPausedAndResumed(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.addIn(t, q, "tenant-1", "a1", "a2")
		h.addIn(t, q, "tenant-2", "b1")
		if j := h.get(t, q, "a1"); j.Group != "tenant-1" {
			t.Fatalf("job a1 answered group %q", j.Group)
		}
		paused := must[groupView](t, h.do(t, "POST", "/queues/"+q+"/groups/tenant-1/pause", nil), http.StatusOK)
		if !paused.Paused || paused.Counts["pending"] != 2 {
			t.Fatalf("pause answered %+v", paused)
		}
		c := h.claimAnswer(t, q, `{"count":5}`)
		if len(c.Jobs) != 1 || c.Jobs[0].ID != "b1" || c.Jobs[0].Group != "tenant-2" || c.HeldBy != "group_paused" {
			t.Fatalf("claim with tenant-1 paused answered %+v", c)
		}
		page := must[groupPage](t, h.do(t, "GET", "/queues/"+q+"/groups?limit=1", nil), http.StatusOK)
		if len(page.Groups) != 1 || page.Groups[0].Name != "tenant-1" || page.NextCursor == nil {
			t.Fatalf("first page %+v", page)
		}
		page = must[groupPage](t, h.do(t, "GET", "/queues/"+q+"/groups?limit=1&cursor="+*page.NextCursor, nil), http.StatusOK)
		if len(page.Groups) != 1 || page.Groups[0].Name != "tenant-2" || page.Groups[0].Counts["active"] != 1 || page.NextCursor != nil {
			t.Fatalf("second page %+v", page)
		}
		must[groupView](t, h.do(t, "POST", "/queues/"+q+"/groups/tenant-1/resume", nil), http.StatusOK)
		if jobs := h.claim(t, q, `{"count":5}`); len(jobs) != 2 {
			t.Fatalf("after resume a claim got %v, want tenant-1's two", ids(jobs))
		}
		entries := h.streamEntries(t, q)
		wantActor(t, onlyEntry(t, entriesOf(entries, "group_paused", ""), "a pause"))
		if e := onlyEntry(t, entriesOf(entries, "group_resumed", ""), "a resume"); e["group"] != "tenant-1" {
			t.Fatalf("group_resumed event %v", e)
		}
	})
}

func TestBadGroupNamesAreRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, redistest.Client(t))
	q := redistest.Queue(t)
	for _, g := range []string{"", "a b", "..", "x{y}", strings.Repeat("a", 129)} {
		body := fmt.Sprintf(`{"payload":1,"group":%q}`, g)
		p := wantProblem(t, h.do(t, "POST", jobsPath(q), body), http.StatusBadRequest, "EMQINVALID")
		wantField(t, p, "group")
	}
	wantProblem(t, h.do(t, "POST", "/queues/"+q+"/groups/a%20b/pause", nil), http.StatusBadRequest, "EMQINVALID")
	wantProblem(t, h.do(t, "GET", "/queues/"+q+"/groups?cursor=a%20b", nil), http.StatusBadRequest, "EMQINVALID")
	if n, _ := h.rdb.Exists(t.Context(), h.key(q, "meta"), h.key(q, "groups"), h.key(q, "flow")).Result(); n != 0 {
		t.Fatalf("refused requests left %d keys", n)
	}
}

// The groups listing refuses a cursor it did not give out, as the jobs
// listing does: 400 EMQINVALID naming cursor, not a page that starts
// wherever a made-up name would sort. A group's name is not a cursor.
func TestAGroupCursorNotGivenOutIsRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, redistest.Client(t))
	q := redistest.Queue(t)
	h.addIn(t, q, "tenant-1", "a1")
	h.addIn(t, q, "tenant-2", "b1")
	for _, cursor := range []string{"zzz", "tenant-1", "a%20b", "%2E%2E", "dGVuYW50LTE="} {
		p := wantProblem(t, h.do(t, "GET", "/queues/"+q+"/groups?cursor="+cursor, nil), http.StatusBadRequest, "EMQINVALID")
		wantMessage(t, p, "cursor", "is not a cursor this service gave out")
	}
	page := must[groupPage](t, h.do(t, "GET", "/queues/"+q+"/groups?limit=1", nil), http.StatusOK)
	if page.NextCursor == nil || *page.NextCursor == "tenant-1" {
		t.Fatalf("first page %+v, want a cursor that is not the name", page)
	}
	page = must[groupPage](t, h.do(t, "GET", "/queues/"+q+"/groups?limit=1&cursor="+*page.NextCursor, nil), http.StatusOK)
	if len(page.Groups) != 1 || page.Groups[0].Name != "tenant-2" || page.NextCursor != nil {
		t.Fatalf("second page %+v, want tenant-2 and no more", page)
	}
}

func TestGroupLimitsHoldOnEveryBackend(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.putSettings(t, q, `{"group_concurrency":1,"group_rate_limit":{"limit":2,"window_ms":60000}}`)
		h.addIn(t, q, "a", "a1", "a2", "a3")
		h.addIn(t, q, "b", "b1")
		c := h.claimAnswer(t, q, `{"count":5}`)
		if got := ids(c.Jobs); fmt.Sprint(got) != "[a1 b1]" || c.HeldBy != "group_concurrency" {
			t.Fatalf("claim answered %v held by %q, want [a1 b1] held by group_concurrency", got, c.HeldBy)
		}
		must[jobView](t, h.complete(t, q, "a1", c.Jobs[0].Token, ""), http.StatusOK)
		a2 := h.claimAnswer(t, q, `{"count":5}`)
		if got := ids(a2.Jobs); fmt.Sprint(got) != "[a2]" {
			t.Fatalf("after a1 completed a claim got %v, want [a2]", got)
		}
		must[jobView](t, h.complete(t, q, "a2", a2.Jobs[0].Token, ""), http.StatusOK)
		// Two of group a started in the minute: a3 waits for the window.
		held := h.claimAnswer(t, q, `{"count":5}`)
		if len(held.Jobs) != 0 || held.HeldBy != "group_rate_limit" || held.RetryAfterMs == nil || *held.RetryAfterMs < 50_000 {
			t.Fatalf("a claim over group a's rate answered %+v, want none, held by group_rate_limit for about a minute", held)
		}
	}, withMetrics())
}

func TestFIFOGroupsRunInOrderOnEveryBackend(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.putSettings(t, q, `{"group_order":"fifo"}`)
		h.addIn(t, q, "a", "a1", "a2")
		h.addIn(t, q, "b", "b1", "b2")
		c := h.claimAnswer(t, q, `{"count":4}`)
		if got := ids(c.Jobs); fmt.Sprint(got) != "[a1 b1]" || c.HeldBy != "group_order" {
			t.Fatalf("claim answered %v held by %q, want [a1 b1] held by group_order", got, c.HeldBy)
		}
		// a1 fails to a retry: it keeps group a's head, a2 waits.
		failed := must[jobView](t, h.fail(t, q, "a1", c.Jobs[0].Token, `,"error":"x","retry_in_ms":0`), http.StatusOK)
		if failed.State != "pending" {
			t.Fatalf("a1 after its fail: %+v", failed)
		}
		next := h.claimAnswer(t, q, `{"count":4}`)
		if got := ids(next.Jobs); fmt.Sprint(got) != "[a1]" {
			t.Fatalf("after a1's fail a claim got %v, want a1 again", got)
		}
		must[jobView](t, h.complete(t, q, "a1", next.Jobs[0].Token, ""), http.StatusOK)
		if got := ids(h.claim(t, q, `{"count":4}`)); fmt.Sprint(got) != "[a2]" {
			t.Fatalf("after a1 completed a claim got %v, want a2", got)
		}
		held := metricSeries(h.scrapeMetrics(t), "emq_claims_held_total")
		if held["queue="+q+",reason=group_order"] < 1 {
			t.Fatalf("emq_claims_held_total = %v, want a group_order series for %s", held, q)
		}
	}, withMetrics())
}

func TestASmallGroupStartsAmongTheFirstClaimsOnEveryBackend(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		for batch := 0; batch < 10; batch++ {
			items := make([]string, 1000)
			for i := range items {
				items[i] = fmt.Sprintf(`{"id":"a-%d","payload":{},"group":"A"}`, batch*1000+i)
			}
			must[jobList](t, h.do(t, "POST", jobsPath(q)+"/batch", `{"jobs":[`+strings.Join(items, ",")+`]}`), http.StatusOK)
		}
		for i := 0; i < 10; i++ {
			h.addIn(t, q, "B", fmt.Sprintf("b-%d", i))
		}
		fromB := 0
		for i := 0; i < 30; i++ {
			for _, j := range h.claim(t, q, nil) {
				if j.Group == "B" {
					fromB++
				}
			}
		}
		if fromB != 10 {
			t.Fatalf("%d of group B's 10 jobs started among the first 30 claims, behind group A's 10,000", fromB)
		}
	})
}
