package http_test

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/echo-mq/echo_mq/internal/keyspace"
)

// TestQueueQuota: at EMQ_MAX_QUEUES, every write that would make a queue
// is refused 409 EMQQUOTA naming the limit, and writes nothing; the
// queues there are go on; an obliterated queue frees its place.
func TestQueueQuota(t *testing.T) {
	t.Parallel()
	const limit = 3
	forEachBackend(t, func(t *testing.T, h *harness) {
		for i := range limit {
			h.add(t, fmt.Sprintf("q%d", i), "a")
		}
		before := h.snapshot(t)
		refusals := []struct {
			name, method, path string
			body               any
		}{
			{"enqueue", "POST", jobsPath("new"), `{"payload":1}`},
			{"enqueue batch", "POST", jobsPath("new") + "/batch", `{"jobs":[{"payload":1},{"payload":2}]}`},
			{"batch", "POST", batchesPath("new"), map[string]any{"id": "b1", "jobs": []any{depJob("j1")}}},
			{"batch callback", "POST", batchesPath("q0"), map[string]any{"id": "b1", "jobs": []any{depJob("j1")},
				"callback": map[string]any{"queue": "new"}}},
			{"pause", "POST", "/queues/new/pause", nil},
			{"resume", "POST", "/queues/new/resume", nil},
			{"settings", "PUT", settingsPath("new"), `{"concurrency":2}`},
			{"group pause", "POST", "/queues/new/groups/g/pause", nil},
			{"group resume", "POST", "/queues/new/groups/g/resume", nil},
			{"schedule", "PUT", schedulePath("new", "s"), `{"every_ms":60000,"job":{"payload":null}}`},
			{"push", "PUT", "/queues/new/push", `{"url":"http://127.0.0.1:9/"}`},
		}
		for _, c := range refusals {
			p := wantProblem(t, h.do(t, c.method, c.path, c.body), http.StatusConflict, "EMQQUOTA")
			if !strings.Contains(p.Detail, fmt.Sprint(limit)) || p.Title != "Too many queues" {
				t.Errorf("%s: problem %+v does not name the limit %d", c.name, p, limit)
			}
		}
		if after := h.snapshot(t); !maps.Equal(after, before) {
			t.Errorf("the refused writes changed keys: %v", changedKeys(before, after))
		}
		// The queues there are go on.
		h.add(t, "q1", "b")
		must[queueView](t, h.do(t, "POST", "/queues/q2/pause", nil), http.StatusOK)
		// An obliterated queue frees its place, once.
		must[map[string]int](t, h.do(t, "DELETE", "/queues/q0?force=true", nil), http.StatusOK)
		h.add(t, "new", "a")
		wantProblem(t, h.do(t, "POST", jobsPath("newer"), `{"payload":1}`), http.StatusConflict, "EMQQUOTA")
		list := must[queuePage](t, h.do(t, "GET", "/queues", nil), http.StatusOK)
		if got := list.names(); !slices.Equal(got, []string{"new", "q1", "q2"}) {
			t.Errorf("GET /queues lists %v, want [new q1 q2]", got)
		}
	}, withMaxQueues(limit), withPush("127.0.0.1"))
}

// TestQueueQuotaConcurrent: 32 clients making a queue each at once, with
// a limit of 10, make 10 and are refused the rest, on every replica.
func TestQueueQuotaConcurrent(t *testing.T) {
	t.Parallel()
	const creators, limit = 32, 10
	forEachBackend(t, func(t *testing.T, h *harness) {
		statuses := make([]int, creators)
		var wg sync.WaitGroup
		for i := range creators {
			wg.Add(1)
			go func() {
				defer wg.Done()
				statuses[i] = h.do(t, "POST", jobsPath(fmt.Sprintf("c%02d", i)), `{"payload":1}`).Status
			}()
		}
		wg.Wait()
		made := 0
		for i, status := range statuses {
			switch status {
			case http.StatusCreated:
				made++
			case http.StatusConflict:
			default:
				t.Errorf("creator %d: status %d", i, status)
			}
		}
		list := must[queuePage](t, h.do(t, "GET", "/queues?limit=1000", nil), http.StatusOK)
		var withKeys []string
		for i := range creators {
			q := fmt.Sprintf("c%02d", i)
			if n := len(scanKeys(t, h.rdb, h.prefix+":{"+q+"}:*")); n > 0 {
				withKeys = append(withKeys, q)
			}
		}
		if made != limit || len(list.Queues) != limit || len(withKeys) != limit {
			t.Errorf("made %d queues, listed %d, %d have keys; want %d each", made, len(list.Queues), len(withKeys), limit)
		}
	}, withMaxQueues(limit))
}

// TestQueueListPrefix: GET /queues pages by name, with a prefix or not,
// each queue once and in order; a bad prefix or cursor is 400.
func TestQueueListPrefix(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		var names []string
		for _, head := range []string{"mail", "mailer", "pay", "Pay", "m"} {
			for i := range 4 {
				names = append(names, fmt.Sprintf("%s-%d", head, i))
			}
		}
		for _, q := range names {
			h.add(t, q, "a")
		}
		// Queues the previous release made, known only to its set, are
		// listed once a replica starts (Migrate).
		if err := h.rdb.SAdd(t.Context(), keyspace.QueuesKey(h.prefix), "mail-old").Err(); err != nil {
			t.Fatal(err)
		}
		if _, err := keyspace.NewRegistry(h.rdb, h.prefix).Migrate(t.Context()); err != nil {
			t.Fatal(err)
		}
		names = append(names, "mail-old")
		for _, prefix := range []string{"", "mail", "mailer-", "p", "Pay", "zzz"} {
			var want []string
			for _, q := range names {
				if strings.HasPrefix(q, prefix) {
					want = append(want, q)
				}
			}
			slices.Sort(want)
			var got []string
			cursor := ""
			for pages := 0; ; pages++ {
				path := "/queues?limit=3&prefix=" + prefix
				if cursor != "" {
					path += "&cursor=" + cursor
				}
				page := must[queuePage](t, h.do(t, "GET", path, nil), http.StatusOK)
				got = append(got, page.names()...)
				if page.NextCursor == nil {
					break
				}
				if pages > len(names) {
					t.Fatal("the paging never ended")
				}
				cursor = *page.NextCursor
			}
			if !slices.Equal(got, want) {
				t.Errorf("prefix %q: listed %v, want %v", prefix, got, want)
			}
		}
		for _, bad := range []string{"prefix=a:b", "prefix=a%20b", "prefix=" + strings.Repeat("a", 101)} {
			wantField(t, wantProblem(t, h.do(t, "GET", "/queues?"+bad, nil), http.StatusBadRequest, "EMQINVALID"), "prefix")
		}
		wantField(t, wantProblem(t, h.do(t, "GET", "/queues?cursor=a:b", nil), http.StatusBadRequest, "EMQINVALID"), "cursor")
	})
}

// names are the names of the page's queues.
func (l queuePage) names() []string {
	out := make([]string, len(l.Queues))
	for i, q := range l.Queues {
		out[i] = q.Name
	}
	return out
}

// changedKeys names the keys that differ between two snapshots.
func changedKeys(before, after map[string]string) []string {
	var out []string
	for k, v := range after {
		if before[k] != v {
			out = append(out, k)
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}
