package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/echo-mq/echo_mq/internal/redistest"
	"github.com/echo-mq/echo_mq/lua"
)

// TestRedisDownAndBack runs the service (through run) on a redis-server of
// its own, stops that server and starts it again, and checks that:
//
//   - while Redis is down every route answers 503 EMQUNAVAILABLE with
//     Retry-After, /readyz is 503 and /healthz 200;
//   - the service recovers by itself once Redis is back, and every
//     script-backed route works on a Redis that has neither the scripts'
//     library nor their EVAL cache: after the restart, and after a
//     FUNCTION FLUSH and SCRIPT FLUSH before each route (a missing function
//     falls back to EVALSHA, then EVAL on NOSCRIPT, and loads the library
//     again).
func TestRedisDownAndBack(t *testing.T) {
	t.Parallel()
	server, rdb, base := serviceOnOwnRedis(t)
	q := redistest.Queue(t)
	mustCall(t, "POST", base+"/queues/"+q+"/jobs", `{"id":"before","payload":1}`, 201, nil)

	server.Stop()
	allRoutesUnavailable(t, base, q)

	server.Restart(t)
	waitReady(t, base)
	if loaded := loadedScripts(t, rdb); len(loaded) > 0 || libraryLoaded(t, rdb) {
		t.Fatalf("scripts %v (or the library) are loaded right after a restart; Redis should have neither", loaded)
	}
	t.Run("after the restart", func(t *testing.T) { exerciseScripts(t, base, rdb, q+"-restart", false) })
	t.Run("after SCRIPT FLUSH", func(t *testing.T) { exerciseScripts(t, base, rdb, q+"-flush", true) })
}

// TestLongPollWokenAfterRedisRestart checks that a claim long-polling
// across a Redis restart (with requests failing meanwhile, as in any
// outage) is answered with the job an enqueue makes once Redis is back and
// the wake hub has subscribed again.
func TestLongPollWokenAfterRedisRestart(t *testing.T) {
	t.Parallel()
	server, rdb, base := serviceOnOwnRedis(t)
	q := redistest.Queue(t)
	polled := longPoll(t, base, q)
	server.Stop()
	var wg sync.WaitGroup
	for range 30 { // the outage's traffic: clients that keep trying
		wg.Add(1)
		go func() {
			defer wg.Done()
			if a, err := call(context.Background(), "GET", base+"/readyz", ""); err != nil || a.Status != 503 {
				t.Errorf("GET /readyz with Redis down: %v %v, want 503", a, err)
			}
		}()
	}
	wg.Wait()
	restarted := time.Now()
	server.Restart(t)
	eventually(t, 15*time.Second, "the wake hub subscribed again", func() bool {
		return rdb.PubSubNumPat(context.Background()).Val() >= 1
	})
	waitReady(t, base)
	mustCall(t, "POST", base+"/queues/"+q+"/jobs", `{"id":"wake","payload":1}`, 201, nil)
	select {
	case got := <-polled:
		if got.Status != 200 {
			t.Fatalf("the long poll waiting across the Redis restart was answered %s, %v after Redis was back, "+
				"want the job enqueued after it", got, got.at.Sub(restarted).Round(time.Millisecond))
		}
		var jobs heldJobs
		if err := json.Unmarshal(got.Body, &jobs); err != nil || len(jobs.Jobs) != 1 || jobs.Jobs[0].ID != "wake" {
			t.Fatalf("the long poll across the restart got %s, want job wake", got)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the long poll waiting across the Redis restart was not woken by an enqueue after it")
	}
}

// serviceOnOwnRedis starts a redis-server of the test's own and the service
// on it (through run), with no reaper pass during the test (it would load
// the sweep scripts and blur which route loaded what). It returns the
// server, a client of it and the service's base URL.
func serviceOnOwnRedis(t *testing.T) (*redistest.Server, *redis.Client, string) {
	t.Helper()
	server := redistest.StartServer(t)
	rdb := redis.NewClient(&redis.Options{Addr: server.Addr})
	t.Cleanup(func() { rdb.Close() })
	base, logs, stop := startService(t, map[string]string{
		"EMQ_REDIS_URL": "redis://" + server.Addr, "EMQ_PREFIX": "rel", "EMQ_SWEEP_INTERVAL": "1h"})
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("run returned %v", err)
		}
		if t.Failed() {
			t.Logf("service log:\n%s", logs)
		}
	})
	return server, rdb, base
}

// waitReady waits until /readyz answers 200.
func waitReady(t *testing.T, base string) {
	t.Helper()
	eventually(t, 15*time.Second, "/readyz 200 after Redis came back", func() bool {
		a, err := call(context.Background(), "GET", base+"/readyz", "")
		return err == nil && a.Status == 200
	})
}

// longPoll starts a claim on queue that waits up to 25 s, and gives its
// answer on the returned channel; it returns once the claim is waiting.
func longPoll(t *testing.T, base, queue string) <-chan polledAnswer {
	t.Helper()
	polled := make(chan polledAnswer, 1)
	go func() {
		a, err := call(context.Background(), "POST", base+"/queues/"+queue+"/claim", `{"wait_ms":25000,"lease_ms":5000}`)
		if err != nil {
			a = answer{Body: []byte(err.Error())}
		}
		polled <- polledAnswer{a, time.Now()}
	}()
	time.Sleep(300 * time.Millisecond) // let the claim look, find nothing and wait
	return polled
}

// polledAnswer is a long poll's answer and when it came.
type polledAnswer struct {
	answer
	at time.Time
}

// allRoutesUnavailable checks, Redis being down, that every route of the
// API answers 503 EMQUNAVAILABLE with Retry-After, /readyz too, and that
// /healthz answers 200.
func allRoutesUnavailable(t *testing.T, base, q string) {
	t.Helper()
	qp, jp := "/queues/"+q, "/queues/"+q+"/jobs/a"
	routes := []struct{ method, path, body string }{
		{"GET", "/queues", ""},
		{"GET", qp, ""},
		{"GET", qp + "/jobs?state=completed", ""},
		{"GET", qp + "/events", ""},
		{"GET", jp, ""},
		{"POST", qp + "/jobs", `{"payload":1}`},
		{"POST", qp + "/jobs/batch", `{"jobs":[{"payload":1}]}`},
		{"POST", qp + "/claim", `{}`},
		{"POST", qp + "/claim", `{"wait_ms":5000}`},
		{"POST", qp + "/complete", `{"jobs":[{"id":"a","token":1}]}`},
		{"POST", jp + "/lease", `{"token":1,"lease_ms":1000}`},
		{"POST", jp + "/complete", `{"token":1,"claim":{"count":1}}`},
		{"POST", jp + "/fail", `{"token":1,"error":"x"}`},
		{"GET", jp + "/cancellation?token=1", ""},
		{"POST", jp + "/cancel", `{}`},
		{"POST", qp + "/sweep", `{}`},
		{"POST", qp + "/pause", ""},
		{"POST", qp + "/resume", ""},
		{"POST", qp + "/drain", ""},
		{"DELETE", qp + "?force=true", ""},
		{"POST", jp + "/retry", ""},
		{"POST", jp + "/promote", ""},
		{"DELETE", jp + "?force=true", ""},
		{"GET", "/readyz", ""},
	}
	var wg sync.WaitGroup
	for _, rt := range routes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			a, err := call(ctx, rt.method, base+rt.path, rt.body)
			var p struct{ Code string }
			switch {
			case err != nil:
				t.Errorf("%s %s with Redis down: %v", rt.method, rt.path, err)
			case a.Status != http.StatusServiceUnavailable || json.Unmarshal(a.Body, &p) != nil || p.Code != "EMQUNAVAILABLE":
				t.Errorf("%s %s with Redis down: got %s, want 503 EMQUNAVAILABLE", rt.method, rt.path, a)
			case a.Header.Get("Retry-After") == "":
				t.Errorf("%s %s with Redis down: 503 with no Retry-After", rt.method, rt.path)
			case !strings.HasPrefix(a.Header.Get("Content-Type"), "application/problem+json"):
				t.Errorf("%s %s with Redis down: Content-Type %q, want problem+json", rt.method, rt.path, a.Header.Get("Content-Type"))
			}
		}()
	}
	wg.Wait()
	mustCall(t, "GET", base+"/healthz", "", 200, nil)
}

// libraryLoaded reports whether Redis has the scripts' Functions library.
func libraryLoaded(t *testing.T, rdb *redis.Client) bool {
	t.Helper()
	libs, err := rdb.FunctionList(context.Background(), redis.FunctionListQuery{LibraryNamePattern: lua.LibraryName()}).Result()
	if err != nil {
		t.Fatal(err)
	}
	return len(libs) == 1
}

// loadedScripts names the scripts of lua.All that Redis has in its cache.
func loadedScripts(t *testing.T, rdb *redis.Client) []string {
	t.Helper()
	hashes := make([]string, len(lua.All))
	for i, s := range lua.All {
		hashes[i] = s.Hash()
	}
	exists, err := rdb.ScriptExists(context.Background(), hashes...).Result()
	if err != nil {
		t.Fatal(err)
	}
	var loaded []string
	for i, ok := range exists {
		if ok {
			loaded = append(loaded, hashes[i][:8])
		}
	}
	return loaded
}

// scriptStep is one route call and the script it runs.
type scriptStep struct {
	name         string
	method, path string
	body         func() string
	status       int
	script       *lua.Script
	check        func(t *testing.T, a answer)
}

// exerciseScripts calls every script-backed route once on a fresh queue,
// in an order that gives each one a job in the right state. With flush, it
// empties the script cache before each call. After each call it checks the
// route's script is in the cache: the route ran it, by EVAL after NOSCRIPT.
func exerciseScripts(t *testing.T, base string, rdb *redis.Client, q string, flush bool) {
	qp := base + "/queues/" + q
	tokens := map[string]int64{}
	token := func(id, extra string) func() string {
		return func() string { return fmt.Sprintf(`{"token":%d%s}`, tokens[id], extra) }
	}
	fixed := func(s string) func() string { return func() string { return s } }
	wantState := func(state string) func(*testing.T, answer) {
		return func(t *testing.T, a answer) {
			var j heldJob
			if json.Unmarshal(a.Body, &j) != nil || j.State != state {
				t.Errorf("got %s, want a job %s", a, state)
			}
		}
	}
	steps := []scriptStep{
		{"enqueue", "POST", "/jobs", fixed(`{"id":"a","payload":1}`), 201, lua.EnqueueLater, nil},
		{"enqueue batch", "POST", "/jobs/batch", fixed(`{"jobs":[{"id":"b","payload":2},{"id":"c","payload":3},{"id":"d","payload":4},{"id":"e","payload":5},{"id":"f","payload":6}]}`), 200, lua.Enqueue, nil},
		{"claim", "POST", "/claim", fixed(`{"count":4,"lease_ms":30000}`), 200, lua.Claim, func(t *testing.T, a answer) {
			var got heldJobs
			if json.Unmarshal(a.Body, &got) != nil || len(got.Jobs) != 4 {
				t.Fatalf("claim got %s, want 4 jobs", a)
			}
			for _, j := range got.Jobs {
				tokens[j.ID] = j.Token
			}
		}},
		{"extend", "POST", "/jobs/a/lease", token("a", `,"lease_ms":30000`), 200, lua.Extend, nil},
		{"cancellation", "GET", "/jobs/d/cancellation?token=", nil, 200, lua.Cancellation, nil},
		{"complete", "POST", "/jobs/a/complete", token("a", ""), 200, lua.Complete, wantState("completed")},
		{"complete batch", "POST", "/complete", func() string {
			return fmt.Sprintf(`{"jobs":[{"id":"b","token":%d}]}`, tokens["b"])
		}, 200, lua.CompleteBatch, nil},
		{"fail", "POST", "/jobs/c/fail", func() string {
			return fmt.Sprintf(`{"token":%d,"error":"boom","fatal":true}`, tokens["c"])
		}, 200, lua.Fail, wantState("dead")},
		{"cancel", "POST", "/jobs/e/cancel", fixed(`{"reason":"no"}`), 200, lua.Cancel, wantState("cancelled")},
		{"retry", "POST", "/jobs/c/retry", fixed(""), 200, lua.Retry, wantState("pending")},
		{"enqueue delayed", "POST", "/jobs", fixed(`{"id":"g","payload":7,"delay_ms":600000}`), 201, lua.EnqueueLater, nil},
		{"promote", "POST", "/jobs/g/promote", fixed(""), 200, lua.Promote, wantState("pending")},
		{"remove", "DELETE", "/jobs/f", nil, 200, lua.Remove, nil},
		{"sweep", "POST", "/sweep", fixed(`{}`), 200, lua.Sweep, nil},
		{"pause", "POST", "/pause", fixed(""), 200, lua.Pause, nil},
		{"resume", "POST", "/resume", fixed(""), 200, lua.Pause, nil},
		{"list", "GET", "/jobs?state=completed", nil, 200, lua.List, func(t *testing.T, a answer) {
			var got heldJobs
			if json.Unmarshal(a.Body, &got) != nil || len(got.Jobs) != 2 {
				t.Errorf("list of completed jobs got %s, want a and b", a)
			}
		}},
		{"drain", "POST", "/drain", fixed(""), 200, lua.Drain, func(t *testing.T, a answer) {
			if !strings.Contains(string(a.Body), `"removed":2`) {
				t.Errorf("drain got %s, want c and g removed", a)
			}
		}},
		{"obliterate", "DELETE", "?force=true", nil, 200, lua.Obliterate, nil},
	}
	ctx := context.Background()
	for _, st := range steps {
		if flush {
			if err := rdb.ScriptFlush(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			if err := rdb.FunctionFlush(ctx).Err(); err != nil {
				t.Fatal(err)
			}
		}
		path := qp + st.path
		if st.name == "cancellation" {
			path += fmt.Sprint(tokens["d"])
		}
		body := ""
		if st.body != nil {
			body = st.body()
		}
		a := mustCall(t, st.method, path, body, st.status, nil)
		if st.check != nil {
			st.check(t, a)
		}
		loaded, err := rdb.ScriptExists(ctx, st.script.Hash()).Result()
		if err != nil || (!loaded[0] && !libraryLoaded(t, rdb)) {
			t.Errorf("%s: neither its script nor the library is in Redis after the call (%v): it did not run it", st.name, err)
		}
	}
}
