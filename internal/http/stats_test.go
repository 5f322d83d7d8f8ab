package http_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/echo-mq/echo_mq/internal/redistest"
)

type statsView struct {
	Queue              string `json:"queue"`
	OldestPendingAgeMs int64  `json:"oldest_pending_age_ms"`
	Minutes            []struct {
		At         string  `json:"at"`
		Enqueued   int64   `json:"enqueued"`
		Started    int64   `json:"started"`
		Completed  int64   `json:"completed"`
		Failed     int64   `json:"failed"`
		Dead       int64   `json:"dead"`
		Cancelled  int64   `json:"cancelled"`
		WaitMsMean float64 `json:"wait_ms_mean"`
		RunMsMean  float64 `json:"run_ms_mean"`
	} `json:"minutes"`
}

func (h *harness) stats(tb testing.TB, q string, minutes int) statsView {
	tb.Helper()
	return must[statsView](tb, h.do(tb, "GET", fmt.Sprintf("/queues/%s/stats?minutes=%d", q, minutes), nil), http.StatusOK)
}

// The history counts known traffic exactly, one entry per minute, and
// its means are the jobs' own waits and runs, as their rows record them.
func TestStatsCountKnownTraffic(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		began := time.Now()
		h.add(t, q, "a", "b", "c", "d", "e", "f")
		time.Sleep(50 * time.Millisecond) // every wait at least 50 ms
		held := h.claim(t, q, map[string]any{"count": 4, "lease_ms": 30000})
		if len(held) != 4 {
			t.Fatalf("claimed %v", ids(held))
		}
		time.Sleep(100 * time.Millisecond) // every run at least 100 ms
		for _, j := range held[:2] {
			must[jobView](t, h.do(t, "POST", jobPath(q, j.ID, "complete"), fmt.Sprintf(`{"token":%d}`, j.Token)), http.StatusOK)
		}
		must[jobView](t, h.do(t, "POST", jobPath(q, held[2].ID, "fail"), fmt.Sprintf(`{"token":%d,"error":"x","retry_in_ms":0}`, held[2].Token)), http.StatusOK)
		must[jobView](t, h.do(t, "POST", jobPath(q, held[3].ID, "fail"), fmt.Sprintf(`{"token":%d,"error":"x","fatal":true}`, held[3].Token)), http.StatusOK)
		must[jobView](t, h.do(t, "POST", jobPath(q, "e", "cancel"), `{}`), http.StatusOK)
		elapsed := float64(time.Since(began).Milliseconds()) + 1

		st := h.stats(t, q, 3)
		if st.Queue != q || len(st.Minutes) != 3 {
			t.Fatalf("stats: queue %q, %d minutes", st.Queue, len(st.Minutes))
		}
		var enq, started, completed, failed, dead, cancelled int64
		var waited, ran float64
		busy := 0
		for i, m := range st.Minutes {
			at := parseStamp(t, m.At)
			if at.Second() != 0 || at.Nanosecond() != 0 {
				t.Errorf("minute %d starts at %s", i, m.At)
			}
			if i > 0 && at.Sub(parseStamp(t, st.Minutes[i-1].At)) != time.Minute {
				t.Errorf("minutes %s and %s are not one apart", st.Minutes[i-1].At, m.At)
			}
			enq, started, completed = enq+m.Enqueued, started+m.Started, completed+m.Completed
			failed, dead, cancelled = failed+m.Failed, dead+m.Dead, cancelled+m.Cancelled
			waited += m.WaitMsMean * float64(m.Started)
			ran += m.RunMsMean * float64(m.Completed+m.Failed+m.Dead)
			if m.Enqueued+m.Started+m.Completed+m.Failed+m.Dead+m.Cancelled > 0 {
				busy++
			}
		}
		if last := parseStamp(t, st.Minutes[2].At); time.Since(last) > time.Minute+5*time.Second || time.Since(last) < -5*time.Second {
			t.Errorf("the last minute is %s, want the current one", st.Minutes[2].At)
		}
		if enq != 6 || started != 4 || completed != 2 || failed != 1 || dead != 1 || cancelled != 1 {
			t.Fatalf("counted enqueued %d started %d completed %d failed %d dead %d cancelled %d, want 6 4 2 1 1 1",
				enq, started, completed, failed, dead, cancelled)
		}
		if mean := waited / 4; mean < 50 || mean > elapsed {
			t.Errorf("mean wait %.1f ms, want 50 to %.0f", mean, elapsed)
		}
		if mean := ran / 4; mean < 100 || mean > elapsed {
			t.Errorf("mean run %.1f ms, want 100 to %.0f", mean, elapsed)
		}
		if busy == 1 {
			// All in one minute: the mean wait is exactly the rows' own.
			var sum int64
			for _, j := range held {
				row := h.get(t, q, j.ID)
				sum += parseStamp(t, row.StartedAt).Sub(parseStamp(t, row.CreatedAt)).Milliseconds()
			}
			for _, m := range st.Minutes {
				if m.Started > 0 && m.WaitMsMean != float64(sum)/4 {
					t.Errorf("wait_ms_mean %v, want %v (the rows' waits)", m.WaitMsMean, float64(sum)/4)
				}
			}
		}
		// c (failed, pending again) and f wait; f since the enqueue.
		if st.OldestPendingAgeMs < 150 || float64(st.OldestPendingAgeMs) > elapsed+1000 {
			t.Errorf("oldest_pending_age_ms %d, want f's wait (150 to %.0f)", st.OldestPendingAgeMs, elapsed)
		}
	})
}

// The queue's latency is its oldest pending job's wait, whatever its
// priority, and a job retried at once waits from its retry; an empty
// queue has none and answers zeros.
func TestStatsLatencyIsTheOldestWait(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, h *harness) {
		q := redistest.Queue(t)
		st := h.stats(t, q, 5)
		if len(st.Minutes) != 5 || st.OldestPendingAgeMs != 0 {
			t.Fatalf("an unused queue: %+v", st)
		}
		for _, m := range st.Minutes {
			if m.Enqueued+m.Started+m.Completed+m.Failed+m.Dead+m.Cancelled != 0 || m.WaitMsMean != 0 || m.RunMsMean != 0 {
				t.Fatalf("an unused queue counted %+v", m)
			}
		}
		if st := h.stats(t, q, 1440); len(st.Minutes) != 1440 {
			t.Errorf("minutes=1440 answered %d", len(st.Minutes))
		}
		if st := must[statsView](t, h.do(t, "GET", "/queues/"+q+"/stats", nil), http.StatusOK); len(st.Minutes) != 60 {
			t.Errorf("the default answered %d minutes, want 60", len(st.Minutes))
		}

		h.enqueue(t, q, `{"id":"low","payload":{},"priority":9}`)
		time.Sleep(300 * time.Millisecond)
		h.enqueue(t, q, `{"id":"high","payload":{}}`)
		if age := h.stats(t, q, 1).OldestPendingAgeMs; age < 300 || age > 5000 {
			t.Errorf("latency %d ms, want the low priority job's wait (300 ms or more)", age)
		}
		held := h.claim(t, q, map[string]any{"count": 2})
		if len(held) != 2 {
			t.Fatalf("claimed %v", ids(held))
		}
		if age := h.stats(t, q, 1).OldestPendingAgeMs; age != 0 {
			t.Errorf("latency %d ms with nothing pending", age)
		}
		time.Sleep(200 * time.Millisecond)
		for _, j := range held {
			must[jobView](t, h.do(t, "POST", jobPath(q, j.ID, "fail"), fmt.Sprintf(`{"token":%d,"error":"x","retry_in_ms":0}`, j.Token)), http.StatusOK)
		}
		if age := h.stats(t, q, 1).OldestPendingAgeMs; age > 150 {
			t.Errorf("latency %d ms just after a retry, want the wait since the retry", age)
		}
	})
}

// minutes out of range, or not a number, is a 400 naming it.
func TestStatsRefusesBadMinutes(t *testing.T) {
	t.Parallel()
	h := newHarness(t, redistest.Client(t))
	for _, v := range []string{"0", "1441", "-1", "x", "1.5"} {
		p := wantProblem(t, h.do(t, "GET", "/queues/q/stats?minutes="+v, nil), http.StatusBadRequest, "EMQINVALID")
		if len(p.Errors) != 1 || p.Errors[0].Field != "minutes" {
			t.Errorf("minutes=%s: errors %+v, want one on minutes", v, p.Errors)
		}
	}
	wantProblem(t, h.do(t, "GET", "/queues/a:b/stats", nil), http.StatusBadRequest, "EMQINVALID")
}
