package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// previousRelease is the commit of the release before this tree: the
// upgrade test builds its binary from git. Move it on at each release.
const previousRelease = "132cbac2706a1d87223a6eef37b43dd063a62ae2"

// buildReleases builds the previous release's binary from this clone's
// history and this tree's binary, side by side, and returns their paths.
// It fails (never skips) when git or the commit is missing: CI runs on a
// full clone.
func buildReleases(t *testing.T) (prev, cur string) {
	t.Helper()
	root := gitOutput(t, "", "rev-parse", "--show-toplevel")
	hash := gitOutput(t, root, "rev-parse", "--verify", "--quiet", previousRelease+"^{commit}")
	dir := t.TempDir()
	var wg sync.WaitGroup
	var prevErr error
	var prevTook time.Duration
	wg.Add(1)
	go func() {
		defer wg.Done()
		start := time.Now()
		prevErr = buildRelease(root, hash, dir)
		prevTook = time.Since(start)
	}()
	defer wg.Wait() // a failed build below must not remove dir under the other
	start := time.Now()
	cur = buildService(t)
	curTook := time.Since(start)
	wg.Wait()
	if prevErr != nil {
		t.Fatalf("building the previous release %s: %v", hash, prevErr)
	}
	t.Logf("built the previous release %.12s in %v and this tree in %v, side by side",
		hash, prevTook.Round(time.Millisecond), curTook.Round(time.Millisecond))
	return filepath.Join(dir, "api-prev"), cur
}

// gitOutput runs git in dir ("" for the test's own) and returns its
// output, trimmed; it fails the test when git fails.
func gitOutput(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %s: %v %s\nthe upgrade test builds the previous release (%s) from this clone's history: "+
			"it needs git and a full clone (not a shallow one, not a source archive)",
			strings.Join(args, " "), err, stderr.Bytes(), previousRelease)
	}
	return strings.TrimSpace(string(out))
}

// buildRelease writes the tree of commit hash of the repository at root
// into dir/src with git archive (no worktree to register) and builds its
// cmd/api as dir/api-prev; -trimpath makes the compile independent of
// dir, so that Go's build cache serves the next run.
func buildRelease(root, hash, dir string) error {
	src, tarball := filepath.Join(dir, "src"), filepath.Join(dir, "release.tar")
	if err := os.Mkdir(src, 0o755); err != nil {
		return err
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	steps := [][]string{
		{"git", "-C", root, "archive", "--format=tar", "-o", tarball, hash},
		{"tar", "-xf", tarball, "-C", src},
		{goBin, "build", "-buildvcs=false", "-trimpath", "-o", filepath.Join(dir, "api-prev"), "./cmd/api"},
	}
	for _, step := range steps {
		cmd := exec.Command(step[0], step[1:]...)
		cmd.Dir = src
		cmd.Env = append(os.Environ(), "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%s: %v\n%s", strings.Join(step, " "), err, out)
		}
	}
	return nil
}

// terminate stops the service as an orchestrator does, with SIGTERM, and
// waits for it to exit; it is an error if it does not exit, or exits
// other than cleanly, within 30 s.
func (p *serviceProc) terminate() error {
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		p.kill()
		return errors.New("still running 30 s after SIGTERM")
	}
	if !p.cmd.ProcessState.Success() {
		return fmt.Errorf("exited with %v", p.cmd.ProcessState)
	}
	return nil
}

// launchBinary runs bin with env and waits until base/healthz answers; an
// error if it exits first or does not answer within 15 s, for a start that
// may not work (a downgrade). startBinary fails the test instead.
func launchBinary(t *testing.T, bin string, env []string, base string) (*serviceProc, error) {
	t.Helper()
	logFile, err := os.CreateTemp(t.TempDir(), "emq-*.log")
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	cmd := exec.Command(bin)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = dieWithTest()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &serviceProc{cmd: cmd, done: make(chan struct{}), log: logFile.Name()}
	go func() { cmd.Wait(); close(p.done) }()
	t.Cleanup(p.kill)
	deadline := time.Now().Add(15 * time.Second)
	for {
		if a, err := call(context.Background(), "GET", base+"/healthz", ""); err == nil && a.Status == 200 {
			return p, nil
		}
		select {
		case <-p.done:
			return nil, fmt.Errorf("exited before answering: %v\n%s", cmd.ProcessState, p.logText())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("no answer to /healthz within 15 s\n%s", p.logText())
		}
	}
}

// sseEvent is what the upgrade test reads of one Server-Sent Event.
type sseEvent struct {
	ID, Kind, JobID string
}

// readEvents reads queue's event stream on base, from from ("" for none)
// or after lastID ("" for none), until an event for which until is true,
// and returns the events read, that one last. It fails the test if the
// stream ends first or 20 s pass.
func readEvents(t *testing.T, base, queue, from, lastID string, until func(sseEvent) bool) []sseEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	url := base + "/queues/" + queue + "/events"
	if from != "" {
		url += "?from=" + from
	}
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: status %d", url, resp.StatusCode)
	}
	var read []sseEvent
	var e sseEvent
	lines := bufio.NewScanner(resp.Body)
	for lines.Scan() {
		field, value, _ := strings.Cut(lines.Text(), ": ")
		switch field {
		case "":
			if e.Kind == "" {
				continue // a comment (": ping") ends no event
			}
			if read = append(read, e); until(e) {
				return read
			}
			e = sseEvent{}
		case "id":
			e.ID = value
		case "event":
			e.Kind = value
		case "data":
			var data struct {
				JobID string `json:"job_id"`
			}
			if err := json.Unmarshal([]byte(value), &data); err != nil {
				t.Fatalf("event data %q: %v", value, err)
			}
			e.JobID = data.JobID
		}
	}
	t.Fatalf("GET %s: the stream ended (%v) before the event awaited; read %v", url, lines.Err(), read)
	return nil
}

// snapshot is what a service answers about everything in its Redis, by
// request path: decoded JSON with numbers as written, listings reduced to
// their ids, histories to their totals.
type snapshot map[string]any

// takeSnapshot reads every queue of base: the queue, its listing of each
// state, each job listed, its history's totals, settings, groups and
// schedules; and the batches named in batches ("queue/id").
func takeSnapshot(base string, batches ...string) (snapshot, error) {
	s := snapshot{}
	var list struct {
		Queues []struct{ Name string } `json:"queues"`
	}
	if err := getJSON(base+"/queues?limit=500", &list); err != nil {
		return nil, err
	}
	var names []any
	for _, q := range list.Queues {
		names = append(names, q.Name)
		if err := s.readQueue(base, "/queues/"+q.Name); err != nil {
			return nil, err
		}
	}
	s["/queues"] = names
	for _, b := range batches {
		q, id, _ := strings.Cut(b, "/")
		if err := s.read(base, "/queues/"+q+"/batches/"+id); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// jobStates are the states a job can be in.
var jobStates = []string{"pending", "active", "delayed", "waiting", "completed", "dead", "cancelled"}

func (s snapshot) readQueue(base, q string) error {
	for _, path := range []string{q, q + "/settings", q + "/groups", q + "/schedules"} {
		if err := s.read(base, path); err != nil {
			return err
		}
	}
	for _, state := range jobStates {
		var page struct {
			Jobs []struct{ ID string } `json:"jobs"`
		}
		path := q + "/jobs?state=" + state + "&limit=500"
		if err := getJSON(base+path, &page); err != nil {
			return err
		}
		ids := []any{}
		for _, j := range page.Jobs {
			ids = append(ids, j.ID)
			if err := s.read(base, q+"/jobs/"+j.ID); err != nil {
				return err
			}
		}
		s[path] = ids
	}
	totals, err := historyTotals(base, q)
	s[q+"/stats"] = totals
	return err
}

func (s snapshot) read(base, path string) error {
	var v any
	err := getJSON(base+path, &v)
	s[path] = v
	return err
}

// historyTotals sums a queue's history over the last day, by counter.
func historyTotals(base, q string) (map[string]any, error) {
	var stats struct {
		Minutes []map[string]any `json:"minutes"`
	}
	if err := getJSON(base+q+"/stats?minutes=1440", &stats); err != nil {
		return nil, err
	}
	totals := map[string]any{}
	for _, name := range []string{"enqueued", "started", "completed", "failed", "dead", "cancelled"} {
		var sum int64
		for _, m := range stats.Minutes {
			n, _ := m[name].(json.Number).Int64()
			sum += n
		}
		totals[name] = sum
	}
	return totals, nil
}

// getJSON reads url into out, numbers as written; anything but 200 is an
// error.
func getJSON(url string, out any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, err := call(ctx, "GET", url, "")
	if err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	if a.Status != 200 {
		return fmt.Errorf("GET %s: %s", url, a)
	}
	if err := decodeJSON(a.Body, out); err != nil {
		return fmt.Errorf("GET %s: decode %s: %w", url, a, err)
	}
	return nil
}

// decodeJSON decodes b into out with json.Number for numbers, so that
// 1.50 and 1.5 differ.
func decodeJSON(b []byte, out any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	return dec.Decode(out)
}

// lost lists what before answered that after does not answer the same:
// each path missing, each member gone or changed, at any depth. A member
// only after has is no loss.
func lost(before, after snapshot) []string {
	var out []string
	paths := make([]string, 0, len(before))
	for p := range before {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, p := range paths {
		a, ok := after[p]
		if !ok {
			out = append(out, p+": not read")
			continue
		}
		out = differences(out, p, before[p], a)
	}
	return out
}

// differences appends to out where after does not hold before, at at.
func differences(out []string, at string, before, after any) []string {
	switch b := before.(type) {
	case map[string]any:
		a, ok := after.(map[string]any)
		if !ok {
			return append(out, fmt.Sprintf("%s: %v, now %v", at, before, after))
		}
		keys := make([]string, 0, len(b))
		for k := range b {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if v, ok := a[k]; ok {
				out = differences(out, at+" ."+k, b[k], v)
			} else {
				out = append(out, fmt.Sprintf("%s .%s: %v, now gone", at, k, b[k]))
			}
		}
		return out
	case []any:
		a, ok := after.([]any)
		if !ok || len(a) != len(b) {
			return append(out, fmt.Sprintf("%s: %v, now %v", at, before, after))
		}
		for i := range b {
			out = differences(out, fmt.Sprintf("%s[%d]", at, i), b[i], a[i])
		}
		return out
	}
	if !reflect.DeepEqual(before, after) {
		out = append(out, fmt.Sprintf("%s: %v, now %v", at, before, after))
	}
	return out
}

// release is one release's service running on the test's Redis.
type release struct {
	t      *testing.T
	base   string
	worker string // the worker name its claims give
	proc   *serviceProc
}

// releaseEnv is the environment of a release's service: a short sweep
// interval, so that its reaper works on the other release's data too.
func releaseEnv(addr, redisAddr string) []string {
	return []string{"EMQ_ADDR=" + addr, "EMQ_REDIS_URL=redis://" + redisAddr, "EMQ_PREFIX=upg",
		"EMQ_SWEEP_INTERVAL=250ms", "EMQ_LOG_LEVEL=warn"}
}

// startRelease runs bin, the release called name, on the Redis at
// redisAddr; its log is shown if the test fails.
func startRelease(t *testing.T, name, bin, redisAddr string) release {
	t.Helper()
	addr := fmt.Sprintf("127.0.0.1:%d", loopbackPort(t))
	p := startBinary(t, bin, releaseEnv(addr, redisAddr), "http://"+addr)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("%s's log:\n%s", name, p.logText())
		}
	})
	return release{t: t, base: "http://" + addr, worker: strings.ReplaceAll(name, " ", "-"), proc: p}
}

// do sends method path with body, fails the test unless the answer has
// status, and returns it decoded.
func (r release) do(method, path, body string, status int) map[string]any {
	r.t.Helper()
	a := mustCall(r.t, method, r.base+path, body, status, nil)
	var m map[string]any
	if err := decodeJSON(a.Body, &m); err != nil {
		r.t.Fatalf("%s %s: decode %s: %v", method, path, a, err)
	}
	return m
}

// refused checks that method path is refused with status and code.
func (r release) refused(method, path, body string, status int, code string) {
	r.t.Helper()
	if p := r.do(method, path, body, status); p["code"] != code {
		r.t.Errorf("%s %s: %v, want %d %s", method, path, p, status, code)
	}
}

// enqueue enqueues job id on queue with payloadOf(id) and the extra
// fields (",..."), and checks the state it answers.
func (r release) enqueue(queue, id, extra, state string) map[string]any {
	r.t.Helper()
	j := r.do("POST", "/queues/"+queue+"/jobs", fmt.Sprintf(`{"id":%q,"payload":%s%s}`, id, payloadOf(id), extra), 201)
	wantState(r.t, j, state)
	return j
}

// claim claims up to count jobs of queue for 10 minutes and returns them
// and the limit that held the claim back, if any.
func (r release) claim(queue string, count int) ([]map[string]any, string) {
	r.t.Helper()
	m := r.do("POST", "/queues/"+queue+"/claim", fmt.Sprintf(`{"count":%d,"lease_ms":600000,"worker":%q}`, count, r.worker), 200)
	held, _ := m["held_by"].(string)
	return jobsOf(r.t, m["jobs"]), held
}

// complete completes id under token with resultOf(id).
func (r release) complete(queue, id string, token int64) map[string]any {
	r.t.Helper()
	j := r.do("POST", "/queues/"+queue+"/jobs/"+id+"/complete", fmt.Sprintf(`{"token":%d,"result":%s}`, token, resultOf(id)), 200)
	wantState(r.t, j, "completed")
	return j
}
