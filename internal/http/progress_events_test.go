package http_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/echo-mq/echo_mq/internal/redistest"
)

// progressEvent is what a progress event's data says of the progress.
type progressEvent struct {
	Kind      string          `json:"kind"`
	JobID     string          `json:"job_id"`
	Progress  json.RawMessage `json:"progress"`
	Truncated bool            `json:"progress_truncated"`
}

// progressEvents are the progress events of queue q among evs.
func progressEvents(tb testing.TB, evs []mergedEvent, q string) []progressEvent {
	tb.Helper()
	var out []progressEvent
	for _, ev := range evs {
		if ev.Event.Queue != q || ev.Event.Kind != "progress" {
			continue
		}
		var p progressEvent
		if err := json.Unmarshal([]byte(ev.Data), &p); err != nil {
			tb.Fatalf("progress event %q: %v", ev.Data, err)
		}
		out = append(out, p)
	}
	return out
}

// jsonString is a JSON string whose text is n bytes long, quotes included.
func jsonString(n int) string { return `"` + strings.Repeat("x", n-2) + `"` }

// TestProgressInEvents: a checkpoint's progress rides in its progress
// event, on the queue's stream and on /events, while its JSON is at most
// 1024 bytes; a larger one sends progress_truncated: true and no value
// (the job holds it); a checkpoint of the lease alone sends no event.
func TestProgressInEvents(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		h.add(t, q, "p")
		all := openAllEvents(t, h, "", nil)
		all.wantOpen(t)
		c := h.claimOne(t, q, "p", 30_000)
		small, edge, big := `{"pct":50,"note":"<ünïcode>"}`, jsonString(1024), jsonString(1025)
		for _, progress := range []string{small, "", edge, big} {
			must[extended](t, h.extend(t, q, "p", c.Token, 30_000, progress), http.StatusOK)
		}
		if j := h.get(t, q, "p"); string(j.Progress) != big {
			t.Fatalf("the job holds progress of %d bytes, want the last, %d", len(j.Progress), len(big))
		}
		queue := openLive(t, h, "/queues/"+q+"/events?from=0", nil)
		queue.wantOpen(t)
		for name, st := range map[string]*liveStream{"the queue's stream": queue, "/events": all} {
			evs := st.waitFor(t, "3 progress events", func(evs []mergedEvent) bool {
				return len(progressEvents(t, evs, q)) >= 3
			})
			got := progressEvents(t, evs, q)
			if len(got) != 3 {
				t.Fatalf("%s sent %d progress events, want 3 (none for the lease alone): %+v", name, len(got), got)
			}
			for i, want := range []string{small, edge} {
				if got[i].JobID != "p" || string(got[i].Progress) != want || got[i].Truncated {
					t.Errorf("%s: progress event %d %+v, want the progress %s", name, i, got[i], want)
				}
			}
			if last := got[2]; last.Progress != nil || !last.Truncated {
				t.Errorf("%s: the event of 1025 bytes %+v, want no progress and progress_truncated", name, last)
			}
		}
		h.stop()
		all.end(t)
		queue.end(t)
	})
}
