package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/echo-mq/echo_mq/internal/redistest"
)

// TestBatchCallbackOnceAcrossCrash runs two service processes on one
// redis-server, fills a batch of 4,000 jobs (open, four adds of 1,000,
// then a commit) whose callback goes to another queue, and has workers
// claim through both replicas and complete each job, or fail it fatally
// for one job in ten. When a third of the jobs have ended it SIGKILLs one
// replica and starts it again 1.5 s later. The batch must end done with
// exactly the counts the workers made, and exactly one callback job must
// be enqueued, carrying them.
func TestBatchCallbackOnceAcrossCrash(t *testing.T) {
	t.Parallel()
	const jobs, workers = 4000, 8
	bin := buildService(t)
	server := redistest.StartServer(t)
	var bases [2]string
	var envs [2][]string
	var procs [2]*serviceProc
	for i := range bases {
		addr := fmt.Sprintf("127.0.0.1:%d", loopbackPort(t))
		bases[i] = "http://" + addr
		envs[i] = []string{"EMQ_ADDR=" + addr, "EMQ_REDIS_URL=redis://" + server.Addr, "EMQ_PREFIX=bcrash",
			"EMQ_SWEEP_INTERVAL=200ms", "EMQ_MAX_STALLED=10", "EMQ_LOG_LEVEL=warn"}
		procs[i] = startBinary(t, bin, envs[i], bases[i])
	}
	q, cbq := redistest.Queue(t), "batch-callbacks"
	batchURL := bases[0] + "/queues/" + q + "/batches"
	mustCall(t, "POST", batchURL, `{"id":"big","open":true,"jobs":[],"callback":{"queue":"`+cbq+`","payload":{"report":7}}}`, 201, nil)
	for from := 0; from < jobs; from += 1000 {
		mustCall(t, "POST", batchURL+"/big/jobs", crashBatch(from, 1000), 200, nil)
	}
	mustCall(t, "POST", batchURL+"/big/commit", "", 200, nil)

	ctx, stopWorkers := context.WithTimeout(context.Background(), 90*time.Second)
	var ended atomic.Int64
	var wg sync.WaitGroup
	defer func() { stopWorkers(); wg.Wait() }()
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			batchWorker(ctx, t, bases[w%2]+"/queues/"+q, &ended)
		}()
	}
	eventually(t, 60*time.Second, "a third of the batch ended before the crash", func() bool {
		return ended.Load() >= jobs/3
	})
	procs[0].kill()
	time.Sleep(1500 * time.Millisecond)
	procs[0] = startBinary(t, bin, envs[0], bases[0])

	var b struct {
		State         string           `json:"state"`
		Total         int64            `json:"total"`
		Counts        map[string]int64 `json:"counts"`
		CallbackJobID string           `json:"callback_job_id"`
	}
	eventually(t, 60*time.Second, "the batch done and its callback enqueued", func() bool {
		a, err := call(ctx, "GET", bases[1]+"/queues/"+q+"/batches/big", "")
		return err == nil && a.Status == 200 && json.Unmarshal(a.Body, &b) == nil && b.CallbackJobID != ""
	})
	stopWorkers()
	wg.Wait()
	dead := int64(jobs / 10)
	if b.State != "done" || b.Total != jobs || b.Counts["completed"] != jobs-dead || b.Counts["dead"] != dead ||
		b.Counts["cancelled"] != 0 || b.CallbackJobID != "batch:big" {
		t.Fatalf("the batch at its end: %+v, want done with %d completed and %d dead", b, jobs-dead, dead)
	}
	time.Sleep(time.Second) // several dispatcher rounds on both replicas
	var counts queueCounts
	mustCall(t, "GET", bases[0]+"/queues/"+cbq, "", 200, &counts)
	if counts.Counts["pending"] != 1 || counts.Counts["active"]+counts.Counts["completed"] != 0 {
		t.Errorf("the callback queue holds %v, want exactly one job", counts.Counts)
	}
	var cb struct {
		Payload struct {
			Batch struct {
				Counts map[string]int64 `json:"counts"`
			} `json:"batch"`
			Payload map[string]int `json:"payload"`
		} `json:"payload"`
	}
	mustCall(t, "GET", bases[1]+"/queues/"+cbq+"/jobs/batch:big", "", 200, &cb)
	if p := cb.Payload; p.Batch.Counts["dead"] != dead || p.Batch.Counts["completed"] != jobs-dead || p.Payload["report"] != 7 {
		t.Errorf("the callback's payload %+v", p)
	}
	for _, p := range procs {
		p.kill()
	}
}

// batchWorker claims up to ten jobs at a time through queueURL and ends
// each: completed, or failed fatally for job ids ending in 3 (one in ten),
// counting each first answer 200 in ended. A connection error or a 503 is
// retried with the same token; a 409 or 404 drops the job (another claim
// has it since its lease lapsed).
func batchWorker(ctx context.Context, t *testing.T, queueURL string, ended *atomic.Int64) {
	for ctx.Err() == nil {
		a, err := call(ctx, "POST", queueURL+"/claim", `{"lease_ms":2000,"count":10,"wait_ms":500}`)
		if ctx.Err() != nil {
			return
		}
		var got heldJobs
		if err != nil || a.Status == 503 || json.Unmarshal(a.Body, &got) != nil {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		for _, j := range got.Jobs {
			verb, body := "complete", fmt.Sprintf(`{"token":%d}`, j.Token)
			if strings.HasSuffix(j.ID, "3") {
				verb, body = "fail", fmt.Sprintf(`{"token":%d,"error":"poison","fatal":true}`, j.Token)
			}
			for ctx.Err() == nil {
				a, err := call(ctx, "POST", queueURL+"/jobs/"+j.ID+"/"+verb, body)
				if err != nil || a.Status == 503 {
					time.Sleep(20 * time.Millisecond)
					continue
				}
				if a.Status == 200 {
					ended.Add(1)
				} else if a.Status != 409 && a.Status != 404 {
					t.Errorf("%s %s: got %s", verb, j.ID, a)
				}
				break
			}
		}
	}
}
