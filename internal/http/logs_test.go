package http_test

// Job logs (docs/workers.md#logs): a worker appends lines to the job it
// holds, fenced by its token; readers page through them and tail them
// with a cursor; a job keeps its last 1,000 lines, and its log goes with
// it wherever the job is deleted.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/echo-mq/echo_mq/internal/auth"
	emqhttp "github.com/echo-mq/echo_mq/internal/http"
	"github.com/echo-mq/echo_mq/internal/lease"
	"github.com/echo-mq/echo_mq/internal/redistest"
)

type loggedView struct {
	Appended int `json:"appended"`
	Total    int `json:"total"`
}

type logPageView struct {
	Lines []struct {
		At   string `json:"at"`
		Line string `json:"line"`
	} `json:"lines"`
	NextCursor string `json:"next_cursor"`
}

// texts are the page's lines without their times.
func (p logPageView) texts() []string {
	out := make([]string, len(p.Lines))
	for i, l := range p.Lines {
		out[i] = l.Line
	}
	return out
}

func logsPath(q, id string) string { return jobPath(q, id, "logs") }

// appendLog appends lines to the log of held, a job of q, and wants 200.
func (h *harness) appendLog(tb testing.TB, q string, held jobView, lines ...string) loggedView {
	tb.Helper()
	body := map[string]any{"token": held.Token, "lines": lines}
	return must[loggedView](tb, h.do(tb, "POST", logsPath(q, held.ID), body), http.StatusOK)
}

// readLog reads a page of job id's log, after cursor ("": from the oldest
// line kept), of limit lines (0: the default), and wants 200.
func (h *harness) readLog(tb testing.TB, q, id, cursor string, limit int) logPageView {
	tb.Helper()
	query := url.Values{}
	if cursor != "" {
		query.Set("cursor", cursor)
	}
	if limit > 0 {
		query.Set("limit", fmt.Sprint(limit))
	}
	path := logsPath(q, id)
	if len(query) > 0 {
		path += "?" + query.Encode()
	}
	r := h.do(tb, "GET", path, nil)
	if r.Status == http.StatusOK && !bytes.Contains(r.Body, []byte(`"lines":[`)) {
		tb.Errorf("GET %s: lines is not a list: %s", path, r.Body)
	}
	return must[logPageView](tb, r, http.StatusOK)
}

// logLines is the log_lines job id answers with: 0 when it leaves it out.
func (h *harness) logLines(tb testing.TB, q, id string) int {
	tb.Helper()
	return must[struct {
		LogLines int `json:"log_lines"`
	}](tb, h.do(tb, "GET", jobPath(q, id), nil), http.StatusOK).LogLines
}

// numbered are the lines "line 0000" on, n of them from first.
func numbered(first, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("line %04d", first+i)
	}
	return out
}

// report completes (or with fail's body, fails) held, a job of q, and
// wants 200.
func (h *harness) report(tb testing.TB, q string, held jobView, verb string, extra map[string]any) {
	tb.Helper()
	body := map[string]any{"token": held.Token}
	for k, v := range extra {
		body[k] = v
	}
	must[jobView](tb, h.do(tb, "POST", jobPath(q, held.ID, verb), body), http.StatusOK)
}

// TestJobLogsAppendReadAndTail: lines come back in order with the server's
// time of their append, a page at a time; the cursor at the end answers no
// lines and itself, and later the lines appended since (a tail). An
// append writes no event, and the job says how many lines it has.
func TestJobLogsAppendReadAndTail(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.add(t, q, "j1", "quiet")
		held := h.claimOne(t, q, "j1", 30_000)
		events := len(h.streamEntries(t, q))
		want := []string{"first", "", "third: ünïcödé <b>\nand a newline"}
		if got := h.appendLog(t, q, held, want...); got != (loggedView{Appended: 3, Total: 3}) {
			t.Errorf("first append answered %+v, want 3 appended, 3 in all", got)
		}
		if got := h.appendLog(t, q, held, "fourth"); got != (loggedView{Appended: 1, Total: 4}) {
			t.Errorf("second append answered %+v, want 1 appended, 4 in all", got)
		}
		want = append(want, "fourth")
		if n := len(h.streamEntries(t, q)); n != events {
			t.Errorf("the appends wrote %d events, want none", n-events)
		}

		all := h.readLog(t, q, "j1", "", 0)
		if !slices.Equal(all.texts(), want) {
			t.Fatalf("log = %q, want %q", all.texts(), want)
		}
		prev := parseStamp(t, all.Lines[0].At)
		for i, l := range all.Lines {
			at := parseStamp(t, l.At)
			if at.Before(prev) || (i < 3 && !at.Equal(prev)) {
				t.Errorf("line %d at %s after %s: want one time per append, never earlier", i, l.At, prev)
			}
			prev = at
		}

		first := h.readLog(t, q, "j1", "", 3)
		second := h.readLog(t, q, "j1", first.NextCursor, 3)
		if got := append(first.texts(), second.texts()...); !slices.Equal(got, want) || second.NextCursor != all.NextCursor {
			t.Errorf("pages of 3 = %q then cursor %q, want %q then %q", got, second.NextCursor, want, all.NextCursor)
		}
		end := h.readLog(t, q, "j1", all.NextCursor, 0)
		if len(end.Lines) != 0 || end.NextCursor != all.NextCursor {
			t.Errorf("at the end: %q and cursor %q, want no lines and the same cursor %q", end.texts(), end.NextCursor, all.NextCursor)
		}
		h.appendLog(t, q, held, "fifth")
		tail := h.readLog(t, q, "j1", all.NextCursor, 0)
		if !slices.Equal(tail.texts(), []string{"fifth"}) || tail.NextCursor == all.NextCursor {
			t.Errorf("tail from the end = %q, cursor %q: want the new line and a new cursor", tail.texts(), tail.NextCursor)
		}

		if n := h.logLines(t, q, "j1"); n != 5 {
			t.Errorf("job log_lines = %d, want 5", n)
		}
		if r := h.do(t, "GET", jobPath(q, "quiet"), nil); bytes.Contains(r.Body, []byte("log_lines")) {
			t.Errorf("a job without a log answers log_lines: %s", r.Body)
		}
		empty := h.readLog(t, q, "quiet", "", 0)
		if len(empty.Lines) != 0 || empty.NextCursor == "" {
			t.Errorf("log of a job without one = %q, cursor %q: want no lines and a cursor", empty.texts(), empty.NextCursor)
		}
	})
}

// TestJobLogsKeepTheLastThousandLines: past 1,000 lines the oldest are
// dropped; line numbers stay, so a cursor at the end still reads exactly
// the lines appended after it, and one whose lines were dropped reads
// from the oldest kept.
func TestJobLogsKeepTheLastThousandLines(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.add(t, q, "j1")
		held := h.claimOne(t, q, "j1", 30_000)
		if got := h.appendLog(t, q, held, numbered(0, 1000)...); got != (loggedView{Appended: 1000, Total: 1000}) {
			t.Fatalf("1000 lines answered %+v", got)
		}
		early := h.readLog(t, q, "j1", "", 2)
		end := h.readLog(t, q, "j1", "", 1000)
		if !slices.Equal(end.texts(), numbered(0, 1000)) {
			t.Fatalf("the log holds %d lines, want the 1000 appended", len(end.Lines))
		}
		if got := h.appendLog(t, q, held, numbered(1000, 5)...); got != (loggedView{Appended: 5, Total: 1000}) {
			t.Errorf("5 more lines answered %+v, want 5 appended, 1000 kept", got)
		}
		if kept := h.readLog(t, q, "j1", "", 1000).texts(); !slices.Equal(kept, numbered(5, 1000)) {
			t.Errorf("the log keeps %d lines from %q to %q, want line 0005 to line 1004", len(kept), kept[0], kept[len(kept)-1])
		}
		if got := h.readLog(t, q, "j1", end.NextCursor, 0).texts(); !slices.Equal(got, numbered(1000, 5)) {
			t.Errorf("from the old end: %q, want the 5 lines appended since", got)
		}
		if got := h.readLog(t, q, "j1", early.NextCursor, 3).texts(); !slices.Equal(got, numbered(5, 3)) {
			t.Errorf("from a cursor at dropped lines: %q, want the oldest kept, line 0005 on", got)
		}
		if n := h.rdb.LLen(context.Background(), h.key(q, "logs:j1")).Val(); n != 1000 {
			t.Errorf("the log's list holds %d items, want 1000", n)
		}
		if n := h.logLines(t, q, "j1"); n != 1000 {
			t.Errorf("job log_lines = %d, want 1000", n)
		}
	})
}

// TestJobLogsRefusals: an append is fenced as an extend is, and a bad
// body is refused naming its field; none of them writes anything.
func TestJobLogsRefusals(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.add(t, q, "done", "active", "pending")
		done := h.claimOne(t, q, "done", 30_000)
		h.report(t, q, done, "complete", nil)
		held := h.claimOne(t, q, "active", 30_000)
		h.appendLog(t, q, held, "kept")
		before := h.snapshot(t)
		line := []string{"x"}
		for _, c := range []struct {
			name   string
			id     string
			body   any
			status int
			code   string
			field  string
		}{
			{"a token that does not hold the job", "active", map[string]any{"token": held.Token + 1, "lines": line}, 409, "EMQSTALE", ""},
			{"a job that is not active", "pending", map[string]any{"token": held.Token, "lines": line}, 409, "EMQSTALE", ""},
			{"a job completed under the token", "done", map[string]any{"token": done.Token, "lines": line}, 409, "EMQSTALE", ""},
			{"no such job", "nope", map[string]any{"token": held.Token, "lines": line}, 404, "EMQGONE", ""},
			{"no token", "active", map[string]any{"lines": line}, 400, "EMQINVALID", "token"},
			{"no lines", "active", map[string]any{"token": held.Token}, 400, "EMQINVALID", "lines"},
			{"an empty list", "active", map[string]any{"token": held.Token, "lines": []string{}}, 400, "EMQINVALID", "lines"},
			{"1001 lines", "active", map[string]any{"token": held.Token, "lines": numbered(0, 1001)}, 400, "EMQINVALID", "lines"},
			{"a line of 2049 bytes in 683 characters", "active",
				map[string]any{"token": held.Token, "lines": []string{"ok", strings.Repeat("€", 683)}}, 400, "EMQINVALID", "lines[1]"},
			{"a line that is no string", "active", fmt.Sprintf(`{"token":%d,"lines":[1]}`, held.Token), 400, "EMQINVALID", ""},
			{"an unknown field", "active", map[string]any{"token": held.Token, "lines": line, "level": "info"}, 400, "EMQINVALID", "level"},
		} {
			p := wantProblem(t, h.do(t, "POST", logsPath(q, c.id), c.body), c.status, c.code)
			if c.field != "" {
				wantField(t, p, c.field)
			}
		}
		h.unchanged(t, before, "refused appends")

		if got := h.appendLog(t, q, held, strings.Repeat("é", 1024)); got.Appended != 1 {
			t.Errorf("a line of 2048 bytes in 1024 characters: %+v, want it appended", got)
		}
		wantProblem(t, h.do(t, "GET", logsPath(q, "nope"), nil), 404, "EMQGONE")
		for query, field := range map[string]string{"cursor=bm90LWEtY3Vyc29y": "cursor", "cursor=%21": "cursor",
			"limit=0": "limit", "limit=1001": "limit"} {
			wantField(t, wantProblem(t, h.do(t, "GET", logsPath(q, "active")+"?"+query, nil), 400, "EMQINVALID"), field)
		}
	})
}

// TestJobLogsRoles: a reader key reads a log but may not append to it.
func TestJobLogsRoles(t *testing.T) {
	t.Parallel()
	const reader, worker = "reader-key-logs-0123456789", "worker-key-logs-0123456789"
	keys, err := auth.ParseKeys("reader:" + reader + ",worker:" + worker)
	if err != nil {
		t.Fatal(err)
	}
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		must[jobView](t, h.as(t, worker, "POST", jobsPath(q), map[string]any{"id": "j1", "payload": 1}), http.StatusCreated)
		held := must[jobList](t, h.as(t, worker, "POST", "/queues/"+q+"/claim", map[string]any{}), http.StatusOK).Jobs[0]
		body := map[string]any{"token": held.Token, "lines": []string{"from the worker"}}
		before := h.snapshot(t)
		wantProblem(t, h.as(t, reader, "POST", logsPath(q, "j1"), body), http.StatusForbidden, "EMQFORBIDDEN")
		h.unchanged(t, before, "a reader's append")
		must[loggedView](t, h.as(t, worker, "POST", logsPath(q, "j1"), body), http.StatusOK)
		page := must[logPageView](t, h.as(t, reader, "GET", logsPath(q, "j1"), nil), http.StatusOK)
		if !slices.Equal(page.texts(), []string{"from the worker"}) {
			t.Errorf("a reader reads %q, want the worker's line", page.texts())
		}
	}, withConfig(func(c *emqhttp.Config) { c.Keys = keys }))
}

// as sends a request with key as its bearer token; body nil for none.
func (h *harness) as(tb testing.TB, key, method, path string, body any) reply {
	tb.Helper()
	var raw []byte
	if body != nil {
		var err error
		if raw, err = json.Marshal(body); err != nil {
			tb.Fatal(err)
		}
	}
	req := httptest.NewRequest(method, path, bytes.NewReader(raw))
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+key)
	return h.serve(tb, req, raw)
}

// TestJobLogsRunAcrossRetries: a job's log runs on across its attempts
// (as BullMQ's does), a retry of a dead job included; an earlier
// attempt's token appends nothing more.
func TestJobLogsRunAcrossRetries(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.add(t, q, "j1")
		first := h.claimOne(t, q, "j1", 30_000)
		h.appendLog(t, q, first, "attempt 1")
		h.report(t, q, first, "fail", map[string]any{"error": "boom", "retry_in_ms": 0})
		second := h.claimOne(t, q, "j1", 30_000)
		h.appendLog(t, q, second, "attempt 2")
		wantProblem(t, h.do(t, "POST", logsPath(q, "j1"), map[string]any{"token": first.Token, "lines": []string{"late"}}),
			http.StatusConflict, "EMQSTALE")
		h.report(t, q, second, "fail", map[string]any{"error": "fatal", "fatal": true})
		h.wantState(t, q, "j1", "dead")
		must[jobView](t, h.do(t, "POST", jobPath(q, "j1", "retry"), nil), http.StatusOK)
		third := h.claimOne(t, q, "j1", 30_000)
		h.appendLog(t, q, third, "attempt 3")
		if got := h.readLog(t, q, "j1", "", 0).texts(); !slices.Equal(got, []string{"attempt 1", "attempt 2", "attempt 3"}) {
			t.Errorf("log across attempts = %q, want one line from each", got)
		}
		if n := h.logLines(t, q, "j1"); n != 3 {
			t.Errorf("job log_lines = %d, want 3", n)
		}
	})
}

// TestJobLogsGoWithTheJob: wherever a job is deleted, its log goes too:
// a removal (of an active job by force too), a drain, an obliterate; and
// a job made again under the id starts with none.
func TestJobLogsGoWithTheJob(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		logged := func(id string) jobView {
			h.add(t, q, id)
			held := h.claimOne(t, q, id, 30_000)
			h.appendLog(t, q, held, "from "+id)
			return held
		}
		gone := func(what, id string) {
			t.Helper()
			if keys := h.keysOf(t, q, ":logs:"+id); len(keys) != 0 {
				t.Errorf("%s: the log of %s is left: %v", what, id, keys)
			}
		}
		h.report(t, q, logged("removed"), "complete", nil)
		must[map[string]int](t, h.do(t, "DELETE", jobPath(q, "removed"), nil), http.StatusOK)
		gone("a removal", "removed")
		h.add(t, q, "removed")
		if got := h.readLog(t, q, "removed", "", 0); len(got.Lines) != 0 {
			t.Errorf("a job made again under a removed one's id reads %q, want no log", got.texts())
		}
		must[map[string]int](t, h.do(t, "DELETE", jobPath(q, "removed"), nil), http.StatusOK)

		logged("forced")
		must[map[string]int](t, h.do(t, "DELETE", jobPath(q, "forced")+"?force=true", nil), http.StatusOK)
		gone("a forced removal", "forced")

		h.report(t, q, logged("drained"), "fail", map[string]any{"error": "again", "retry_in_ms": 0})
		h.wantState(t, q, "drained", "pending")
		must[map[string]int](t, h.do(t, "POST", "/queues/"+q+"/drain", nil), http.StatusOK)
		gone("a drain", "drained")

		logged("active")
		h.report(t, q, logged("completed"), "complete", nil)
		if n := len(h.keysOf(t, q, ":logs:*")); n != 2 {
			t.Fatalf("%d logs before the obliterate, want 2", n)
		}
		must[map[string]int](t, h.do(t, "DELETE", "/queues/"+q+"?force=true", nil), http.StatusOK)
		if keys := h.keysOf(t, q, "*"); len(keys) != 0 {
			t.Errorf("keys left after an obliterate: %v", keys)
		}
	})
}

// TestJobLogsGoWithRetention: the completed jobs retention deletes take
// their logs with them, and those it keeps keep theirs.
func TestJobLogsGoWithRetention(t *testing.T) {
	t.Parallel()
	const keep, jobs = 3, 30
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		for i := range jobs {
			id := fmt.Sprintf("j%02d", i)
			h.add(t, q, id)
			held := h.claimOne(t, q, id, 30_000)
			h.appendLog(t, q, held, "done "+id)
			h.report(t, q, held, "complete", nil)
		}
		completed := h.zcard(t, q, "completed")
		if completed > keep+8 {
			t.Fatalf("%d completed jobs kept, want at most %d + 8", completed, keep)
		}
		rows, logs := len(h.keysOf(t, q, ":job:*")), len(h.keysOf(t, q, ":logs:*"))
		if int64(rows) != completed || int64(logs) != completed {
			t.Errorf("%d rows and %d logs for %d completed jobs: the trimmed jobs' logs must go with their rows", rows, logs, completed)
		}
		wantProblem(t, h.do(t, "GET", logsPath(q, "j00"), nil), 404, "EMQGONE")
		last := fmt.Sprintf("j%02d", jobs-1)
		if got := h.readLog(t, q, last, "", 0).texts(); !slices.Equal(got, []string{"done " + last}) {
			t.Errorf("the newest job's log = %q, want its line", got)
		}
	}, withLease(lease.KeepCompleted(keep)))
}
