package http_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
)

// TestANewerLayoutIsLeftAlone: a queue whose meta says a newer release wrote
// it (layout 2) is refused 503 EMQUNAVAILABLE, naming the version, by every
// call that would write to it, and nothing of it changes; a queue this
// release wrote is stamped with its own layout, 1 (docs/design.md#layout).
func TestANewerLayoutIsLeftAlone(t *testing.T) {
	forEachBackend(t, func(t *testing.T, h *harness) {
		ctx := context.Background()
		q := "layout"
		held := h.do(t, "POST", "/queues/"+q+"/jobs", `{"id":"a","payload":{"n":1}}`)
		if held.Status != 201 {
			t.Fatalf("enqueue: %s", held)
		}
		if got := h.rdb.HGet(ctx, h.key(q, "meta"), "layout").Val(); got != "1" {
			t.Fatalf("meta layout = %q after the first enqueue, want 1", got)
		}
		token := strconv.FormatInt(h.claimOne(t, q, "a", 60_000).Token, 10)
		if err := h.rdb.HSet(ctx, h.key(q, "meta"), "layout", "2").Err(); err != nil {
			t.Fatal(err)
		}
		before := h.rdb.HGetAll(ctx, h.key(q, "job:a")).Val()
		for _, call := range []struct{ method, path, body string }{
			{"POST", "/queues/" + q + "/jobs", `{"id":"b","payload":1}`},
			{"POST", "/queues/" + q + "/claim", `{"count":1,"lease_ms":60000}`},
			{"POST", "/queues/" + q + "/jobs/a/lease", `{"token":` + token + `,"lease_ms":60000}`},
			{"POST", "/queues/" + q + "/jobs/a/complete", `{"token":` + token + `}`},
			{"POST", "/queues/" + q + "/jobs/a/fail", `{"token":` + token + `,"error":"x"}`},
			{"POST", "/queues/" + q + "/jobs/a/cancel", `{}`},
			{"DELETE", "/queues/" + q + "/jobs/a?force=true", ``},
			{"PUT", "/queues/" + q + "/schedules/nightly", `{"cron":"* * * * *","job":{"payload":1}}`},
		} {
			r := h.do(t, call.method, call.path, call.body)
			if r.Status != 503 || !strings.Contains(string(r.Body), "EMQUNAVAILABLE") || !strings.Contains(string(r.Body), "version 2") {
				t.Errorf("%s %s on a queue of layout 2: %s, want 503 EMQUNAVAILABLE naming version 2", call.method, call.path, r)
			}
		}
		if after := h.rdb.HGetAll(ctx, h.key(q, "job:a")).Val(); !equalMaps(before, after) {
			t.Fatalf("the job changed under a newer layout: %v, was %v", after, before)
		}
		if n := h.rdb.Exists(ctx, h.key(q, "job:b")).Val(); n != 0 {
			t.Fatal("job b was enqueued into a queue of a newer layout")
		}
	})
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
