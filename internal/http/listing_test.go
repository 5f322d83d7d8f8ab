package http_test

import (
	"encoding/base64"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/echo-mq/echo_mq/internal/redistest"
)

// listPage reads one page of q's jobs in state; cursor "" is the first page.
func (h *harness) listPage(tb testing.TB, q, state string, limit int, cursor string) jobPage {
	tb.Helper()
	v := url.Values{"state": {state}}
	if limit > 0 {
		v.Set("limit", fmt.Sprint(limit))
	}
	if cursor != "" {
		v.Set("cursor", cursor)
	}
	return must[jobPage](tb, h.do(tb, "GET", jobsPath(q)+"?"+v.Encode(), nil), http.StatusOK)
}

// listAll pages through q's jobs in state, limit at a time, until
// next_cursor is null, calling between (if set) after each page; it returns
// the ids in the order given and the number of pages.
func (h *harness) listAll(tb testing.TB, q, state string, limit int, between func()) (got []string, pages int) {
	tb.Helper()
	cursor := ""
	for {
		page := h.listPage(tb, q, state, limit, cursor)
		pages++
		if len(page.Jobs) > limit {
			tb.Fatalf("page %d has %d jobs, over the limit %d", pages, len(page.Jobs), limit)
		}
		for _, j := range page.Jobs {
			if j.State != state || j.Queue != q {
				tb.Errorf("listing %s of %s gave %+v", state, q, j)
			}
			got = append(got, j.ID)
		}
		if page.NextCursor == nil {
			return got, pages
		}
		if *page.NextCursor == "" || pages > 10_000 {
			tb.Fatalf("page %d: next_cursor %q, want a cursor or null", pages, *page.NextCursor)
		}
		cursor = *page.NextCursor
		if between != nil {
			between()
		}
	}
}

// idRange is prefix+from ... prefix+(to-1), as batchOf names them; reversed
// when desc.
func idRange(prefix string, from, to int, desc bool) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprintf("%s%05d", prefix, i))
	}
	if desc {
		slices.Reverse(out)
	}
	return out
}

// wantOnce fails the test if an id comes twice in got.
func wantOnce(tb testing.TB, got []string) map[string]bool {
	tb.Helper()
	seen := map[string]bool{}
	for _, id := range got {
		if seen[id] {
			tb.Errorf("job %s listed twice", id)
		}
		seen[id] = true
	}
	return seen
}

func TestListEachStateInItsOrder(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.add(t, q, "a1", "a2", "a3")
		for _, lease := range []int{60_000, 30_000, 45_000} { // a1, a2, a3
			h.claim(t, q, fmt.Sprintf(`{"lease_ms":%d}`, lease))
		}
		h.add(t, q, "c1", "c2", "c3", "k1", "k2", "k3", "x1", "x2", "x3")
		for _, id := range []string{"c1", "c2", "c3"} {
			must[jobView](t, h.complete(t, q, id, h.claimOne(t, q, id, 30_000).Token, ""), http.StatusOK)
		}
		for _, id := range []string{"k1", "k2", "k3"} {
			must[jobView](t, h.cancel(t, q, id, nil), http.StatusOK)
		}
		for _, id := range []string{"x1", "x2", "x3"} {
			c := h.claimOne(t, q, id, 30_000)
			must[jobView](t, h.fail(t, q, id, c.Token, `,"error":"x","fatal":true`), http.StatusOK)
		}
		h.add(t, q, "r")
		h.claimOne(t, q, "r", 100)
		h.sweepUntil(t, q, `{"max_stalled":5}`, "r") // back to the front of pending
		for _, j := range []string{`"id":"p5","priority":5`, `"id":"y","priority":0`, `"id":"z","priority":0`,
			`"id":"p9","priority":9`, `"id":"p1","priority":1`} {
			h.enqueue(t, q, "{"+j+`,"payload":1}`)
		}
		for id, delay := range map[string]int{"d1": 3_000_000, "d2": 1_000_000, "d3": 2_000_000} {
			h.enqueue(t, q, fmt.Sprintf(`{"id":%q,"payload":1,"delay_ms":%d}`, id, delay))
		}

		for state, want := range map[string][]string{
			"active":    {"a2", "a3", "a1"},
			"completed": {"c3", "c2", "c1"},
			"cancelled": {"k3", "k2", "k1"},
			"dead":      {"x3", "x2", "x1"},
			"delayed":   {"d2", "d3", "d1"},
			"pending":   {"r", "y", "z", "p1", "p5", "p9"},
		} {
			page := h.listPage(t, q, state, 50, "")
			if got := ids(page.Jobs); !slices.Equal(got, want) || page.NextCursor != nil {
				t.Errorf("%s listing = %v (next %v), want %v and no next page", state, got, page.NextCursor, want)
			}
		}
		pending := ids(h.listPage(t, q, "pending", 50, "").Jobs)
		if claimed := ids(h.claim(t, q, `{"count":100}`)); !slices.Equal(claimed, pending) {
			t.Errorf("claims took %v, the pending listing said %v: want claim order", claimed, pending)
		}
	})
}

func TestListPaging(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.enqueueBatch(t, q, batchOf("j", 0, 23, ""))
		got, pages := h.listAll(t, q, "pending", 5, nil)
		if want := idRange("j", 0, 23, false); !slices.Equal(got, want) || pages != 5 {
			t.Errorf("paging by 5 gave %v in %d pages, want %v in 5", got, pages, want)
		}
		if got, _ := h.listAll(t, q, "pending", 500, nil); len(got) != 23 {
			t.Errorf("limit 500 gave %d jobs, want 23", len(got))
		}
		h.enqueueBatch(t, q, batchOf("j", 23, 37, ""))
		first := h.listPage(t, q, "pending", 0, "")
		if len(first.Jobs) != 50 || first.NextCursor == nil {
			t.Errorf("the default page has %d jobs (next %v), want 50 and a next page", len(first.Jobs), first.NextCursor)
		}
		if got := h.listPage(t, q, "dead", 10, ""); len(got.Jobs) != 0 || got.NextCursor != nil {
			t.Errorf("an empty state listed %+v, want no jobs and no next page", got)
		}
	})
}

// TestListTies: jobs that finish in one batch share their score, and pages
// cut through the middle of the tie still give each exactly once.
func TestListTies(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.enqueueBatch(t, q, batchOf("c", 0, 300, ""))
		var held []jobView
		for range 3 {
			held = append(held, h.claim(t, q, `{"count":100}`)...)
		}
		h.completeBatch(t, q, held, "")
		stamps := map[string]bool{}
		for _, j := range h.listPage(t, q, "completed", 500, "").Jobs {
			stamps[j.FinishedAt] = true
		}
		if len(stamps) != 1 {
			t.Fatalf("a batch complete gave %d finish times, want 1 (a tie)", len(stamps))
		}
		got, pages := h.listAll(t, q, "completed", 7, nil)
		wantOnce(t, got)
		if want := idRange("c", 0, 300, true); !slices.Equal(got, want) {
			t.Errorf("paging a tie by 7 gave %d jobs %v..., want the 300 in id order, newest (highest) first", len(got), got[:min(10, len(got))])
		}
		if pages != 43 {
			t.Errorf("300 jobs by 7 came in %d pages, want 43", pages)
		}
	})
}

// TestListPendingWhileEnqueueing: jobs enqueued while a client pages
// through pending never make it see a job twice or miss one that was there.
func TestListPendingWhileEnqueueing(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.enqueueBatch(t, q, batchOf("old", 0, 300, ""))
		stop, done := make(chan struct{}), make(chan struct{})
		var added atomic.Int64
		started := make(chan struct{})
		go func() {
			defer close(done)
			for i := 0; ; i++ {
				r := h.do(t, "POST", jobsPath(q)+"/batch", batchOf(fmt.Sprintf("new%d-", i), 0, 5, `,"priority":0`))
				if r.Status != http.StatusOK {
					t.Errorf("enqueue while paging: %s", r)
					return
				}
				if added.Add(5) == 5 {
					close(started)
				}
				select {
				case <-stop:
					return
				default:
				}
			}
		}()
		<-started
		got, _ := h.listAll(t, q, "pending", 7, nil)
		close(stop)
		<-done
		seen := wantOnce(t, got)
		for _, id := range idRange("old", 0, 300, false) {
			if !seen[id] {
				t.Errorf("job %s, pending all along, was not listed", id)
			}
		}
		t.Logf("%d jobs listed while %d were enqueued", len(got), added.Load())
	})
}

// TestListCompletedWhileCompleting: newest-first pages stay stable while
// other jobs keep finishing ahead of the cursor.
func TestListCompletedWhileCompleting(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.enqueueBatch(t, q, batchOf("old", 0, 100, ""))
		h.completeBatch(t, q, h.claim(t, q, `{"count":100}`), "")
		h.enqueueBatch(t, q, batchOf("new", 0, 1000, ""))
		between := func() { // more jobs finish between any two pages
			h.completeBatch(t, q, h.claim(t, q, `{"count":3}`), "")
		}
		got, _ := h.listAll(t, q, "completed", 7, between)
		seen := wantOnce(t, got)
		for _, id := range idRange("old", 0, 100, false) {
			if !seen[id] {
				t.Errorf("job %s, completed all along, was not listed", id)
			}
		}
	})
}

func TestListRefused(t *testing.T) {
	t.Parallel()
	cursor := func(raw string) string { return base64.RawURLEncoding.EncodeToString([]byte(raw)) }
	var cases []refusal
	for _, state := range []string{"", "bogus", "PENDING", "all"} {
		cases = append(cases, refusal{name: "state " + state, method: "GET", path: "/queues/Q/jobs?state=" + state,
			status: 400, code: "EMQINVALID", field: "state"})
	}
	for _, limit := range []string{"0", "501", "-1", "x", "1e2"} {
		cases = append(cases, refusal{name: "limit " + limit, method: "GET", path: "/queues/Q/jobs?state=pending&limit=" + limit,
			status: 400, code: "EMQINVALID", field: "limit"})
	}
	for name, c := range map[string]string{
		"not base64":       "!!!",
		"no separator":     cursor("12345"),
		"score not number": cursor("abc/x"),
		"empty id":         cursor("1/"),
		"bad id":           cursor("1/a{b}"),
		"score 1e":         cursor("1e/x"),
		"score --1":        cursor("--1/x"),
		"score 1.2.3":      cursor("1.2.3/x"),
	} {
		cases = append(cases, refusal{name: "cursor " + name, method: "GET", path: "/queues/Q/jobs?state=completed&cursor=" + url.QueryEscape(c),
			status: 400, code: "EMQINVALID", field: "cursor"})
	}
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.add(t, q, "x")
		must[jobView](t, h.complete(t, q, "x", h.claimOne(t, q, "x", 30_000).Token, ""), http.StatusOK)
		runRefusals(t, h, q, cases)
	})
}

func TestQueueListPaging(t *testing.T) {
	t.Parallel()
	const n = 250
	forEachBackend(t, func(t *testing.T, h *harness) {
		want := map[string]bool{}
		for i := range n {
			q := fmt.Sprintf("q%03d", i)
			want[q] = true
			must[queueView](t, h.operate(t, q, "pause"), http.StatusOK)
		}
		seen := map[string]int{}
		pages, cursor := 0, ""
		for {
			path := "/queues?limit=100"
			if cursor != "" {
				path += "&cursor=" + cursor
			}
			page := must[queuePage](t, h.do(t, "GET", path, nil), http.StatusOK)
			pages++
			for _, q := range page.Queues {
				seen[q.Name]++
				if !q.Paused || !maps.Equal(q.Counts, counts(nil)) {
					t.Errorf("queue %+v, want paused with every count zero", q)
				}
			}
			if page.NextCursor == nil {
				break
			}
			if *page.NextCursor == "" || pages > n {
				t.Fatalf("page %d: next_cursor %q, want a cursor or null", pages, *page.NextCursor)
			}
			cursor = *page.NextCursor
		}
		for q, k := range seen {
			if k != 1 || !want[q] {
				t.Errorf("queue %q listed %d times, want once (known: %v)", q, k, want[q])
			}
		}
		if len(seen) != n {
			t.Errorf("paging listed %d queues, want %d", len(seen), n)
		}
		if pages < 2 {
			t.Errorf("250 queues at limit=100 came in %d page(s), want several", pages)
		}
	})
}

func TestQueueListRefused(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		must[queueView](t, h.operate(t, redistest.Queue(t), "pause"), http.StatusOK)
		for _, limit := range []string{"0", "1001", "-1", "x", "1.5"} {
			p := wantProblem(t, h.do(t, "GET", "/queues?limit="+limit, nil), 400, "EMQINVALID")
			wantField(t, p, "limit")
		}
		p := wantProblem(t, h.do(t, "GET", "/queues?cursor=a:b", nil), 400, "EMQINVALID")
		wantField(t, p, "cursor")
	})
}
