// Package docs holds the documentation, and this test: every shell command
// in README.md and docs/*.md either runs here against a real service on a
// real redis-server (the walk-through, the worker loop, keys and signed
// requests, the event streams), or names only what exists: packages,
// tests and benchmarks, scripts, settings, routes of the spec, compose
// profiles; and the Python and Node workers of docs/workers.md run, on the
// packages installed as the page says. So the docs cannot drift from the
// code unnoticed.
package docs

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/echo-mq/echo_mq/internal/redistest"
	"github.com/echo-mq/echo_mq/internal/servicetest"
)

// root is the repository, from this package's directory.
const root = ".."

// docsURL is the base URL the docs use; the tests put a real service's there.
const docsURL = "http://127.0.0.1:8080"

var serviceBin string

func TestMain(m *testing.M) { os.Exit(servicetest.Main(m, &serviceBin)) }

// TestGettingStartedByHand pastes "Work one job by hand" line by line: the
// job ends completed with the result, and the late fail is fenced.
func TestGettingStartedByHand(t *testing.T) {
	svc := startService(t)
	out := runBlock(t, svc, blockUnder(t, "docs/getting-started.md", "Work one job by hand"))
	job := getJSON(t, svc.URL()+"/queues/emails/jobs/welcome-42")
	if job["state"] != "completed" || fmt.Sprint(job["result"]) != "map[sent:true]" {
		t.Fatalf("after the walk-through the job is %v, want completed with {sent: true}\n%s", job, out)
	}
	if !strings.Contains(out, `"code":"EMQSTALE"`) {
		t.Fatalf("the late fail was not answered EMQSTALE:\n%s", out)
	}
}

// TestReadmeWorkerLoop runs the README's worker loop: the job the README
// enqueues is completed by it, with the loop's result, and the README's
// last command shows it so. Getting started shows the same loop.
func TestReadmeWorkerLoop(t *testing.T) {
	svc := startService(t)
	blocks := blocksUnder(t, "README.md", "A worker loop with curl")
	if len(blocks) != 3 {
		t.Fatalf("README's worker loop section has %d sh blocks, want 3 (enqueue, loop, look)", len(blocks))
	}
	enqueue, loop, look := blocks[0], blocks[1], blocks[2]
	if got := blockUnder(t, "docs/getting-started.md", "A worker loop"); got != loop {
		t.Fatalf("docs/getting-started.md's loop differs from the README's:\n%s", got)
	}
	runBlock(t, svc, enqueue)
	startBlock(t, svc, loop)
	deadline := time.Now().Add(30 * time.Second)
	for {
		out := runBlock(t, svc, look)
		if strings.Contains(out, `"state":"completed"`) && strings.Contains(out, `"result":{"ok":true}`) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the loop did not complete the job in 30 s: %s", out)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestOperatingKeysAndSignatures starts the service as the Security
// section does, with keys, and runs its requests: a bearer-key enqueue and
// an HMAC-signed one each make a job.
func TestOperatingKeysAndSignatures(t *testing.T) {
	keys := []string{"ADMIN_KEY=admin-key-0123456789abcdef", "WORKER_KEY=worker-key-0123456789abcdef", "READER_KEY=reader-key-0123456789abcdef"}
	blocks := blocksUnder(t, "docs/operating.md", "Security")
	if len(blocks) != 2 {
		t.Fatalf("Security has %d sh blocks, want 2 (keys, a signed request)", len(blocks))
	}
	start, rest, _ := strings.Cut(blocks[0], "\n")
	svc := startService(t, serviceEnv(t, start, keys)...)
	env := append(keys, "Q="+svc.URL()+"/queues/emails")
	if out := runBlockEnv(t, svc, rest, env); !strings.Contains(out, `"state":"pending"`) {
		t.Fatalf("the bearer-key enqueue made no job: %s", out)
	}
	if out := runBlockEnv(t, svc, blocks[1], env); !strings.Contains(out, `"state":"pending"`) {
		t.Fatalf("the signed enqueue made no job: %s", out)
	}
}

// TestOperatingEventStreams runs both event stream commands: each shows
// an enqueue as it happens.
func TestOperatingEventStreams(t *testing.T) {
	svc := startService(t)
	var streams []string
	for _, b := range blocksUnder(t, "docs/operating.md", "Operating queues") {
		if strings.HasPrefix(b, "curl -N ") {
			streams = append(streams, b)
		}
	}
	if len(streams) != 2 {
		t.Fatalf("Operating queues has %d event stream commands, want 2 (a queue's, every queue's)", len(streams))
	}
	for i, s := range streams {
		lines := startBlock(t, svc, s)
		// A live tail shows only what comes after it opened, and nothing
		// says when that is: enqueue a fresh job every 250 ms until the
		// stream shows one.
		deadline := time.Now().Add(10 * time.Second)
		for n := 0; ; n++ {
			if time.Now().After(deadline) {
				t.Fatalf("%s showed no enqueue in 10 s", s)
			}
			id := fmt.Sprintf("stream-%d-%d", i, n)
			resp, err := http.Post(svc.URL()+"/queues/emails/jobs", "application/json", strings.NewReader(`{"id":"`+id+`","payload":1}`))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusCreated {
				t.Fatalf("enqueue %s: %s", id, resp.Status)
			}
			if seen(lines, `"job_id":"stream-`+strconv.Itoa(i)+`-`, 250*time.Millisecond) {
				break
			}
		}
	}
}

// services counts the services started, so that each runs under a key
// prefix of its own: the docs' commands use fixed ids (welcome-42), which a
// second run (-count) would otherwise find already done.
var services atomic.Int64

// startService starts the service on the shared redis-server under a
// prefix of its own.
func startService(t *testing.T, env ...string) *servicetest.Service {
	t.Helper()
	prefix := fmt.Sprintf("docs%d", services.Add(1))
	env = append([]string{"EMQ_REDIS_URL=redis://" + redistest.Addr() + "/0", "EMQ_PREFIX=" + prefix}, env...)
	return servicetest.Start(t, serviceBin, env...)
}

// serviceEnv reads the settings a docs line that starts the service
// (`A=x B=y go run ./cmd/api`) gives it, with the shell variables of vars
// put in.
func serviceEnv(t *testing.T, line string, vars []string) []string {
	t.Helper()
	fields := strings.Fields(line)
	n := len(fields)
	if n < 3 || strings.Join(fields[n-3:], " ") != "go run ./cmd/api" {
		t.Fatalf("%q does not start the service", line)
	}
	expand := func(name string) string {
		for _, v := range vars {
			if k, val, _ := strings.Cut(v, "="); k == name {
				return val
			}
		}
		t.Fatalf("%q uses $%s, which the test does not set", line, name)
		return ""
	}
	var env []string
	for _, f := range fields[:n-3] {
		env = append(env, os.Expand(f, expand))
	}
	return env
}

// runBlock runs a docs shell block with bash, the docs' base URL pointing
// at svc, and answers its output; it fails the test if the block fails.
func runBlock(t *testing.T, svc *servicetest.Service, block string) string {
	t.Helper()
	return runBlockEnv(t, svc, block, nil)
}

func runBlockEnv(t *testing.T, svc *servicetest.Service, block string, env []string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-eo", "pipefail", "-c", onService(block, svc))
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the block failed: %v\n%s\n--- its output:\n%s", err, block, out)
	}
	return string(out)
}

// startBlock starts a block that runs until stopped (a worker loop, an
// event stream) in a process group of its own, stopped when the test ends,
// and answers its output lines.
func startBlock(t *testing.T, svc *servicetest.Service, block string) <-chan string {
	t.Helper()
	cmd := exec.Command("bash", "-c", onService(block, svc))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1024)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default: // nobody reads: drop
			}
		}
	}()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	return lines
}

// seen reports whether an output line holding want comes within wait.
func seen(lines <-chan string, want string, wait time.Duration) bool {
	timeout := time.After(wait)
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				return false
			}
			if strings.Contains(line, want) {
				return true
			}
		case <-timeout:
			return false
		}
	}
}

func onService(block string, svc *servicetest.Service) string {
	return strings.ReplaceAll(block, docsURL, svc.URL())
}

func getJSON(t *testing.T, url string) map[string]any {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var v map[string]any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("GET %s: %v: %s", url, err, body)
	}
	return v
}

// A docs page's code blocks, by the heading they sit under.

type codeBlock struct {
	file, heading, text string
	line                int // where the block's first command is
}

var (
	headingLine = regexp.MustCompile(`^#{1,4} (.+)$`)
	fenceLine   = regexp.MustCompile("^```(\\w*)$")
)

// shBlocks reads the ```sh blocks of a markdown file.
func shBlocks(t *testing.T, file string) []codeBlock {
	t.Helper()
	return codeBlocks(t, file, "sh")
}

// codeBlocks reads the code blocks of a markdown file in language lang
// (```python, ```js, ...).
func codeBlocks(t *testing.T, file, lang string) []codeBlock {
	t.Helper()
	text, err := os.ReadFile(filepath.Join(root, file))
	if err != nil {
		t.Fatal(err)
	}
	var blocks []codeBlock
	heading, in, blockLang := "", false, ""
	var cur []string
	start := 0
	for i, line := range strings.Split(string(text), "\n") {
		if m := fenceLine.FindStringSubmatch(line); m != nil {
			if !in {
				in, blockLang, cur, start = true, m[1], nil, i+2
				continue
			}
			if line == "```" {
				if blockLang == lang {
					blocks = append(blocks, codeBlock{file, heading, strings.Join(cur, "\n"), start})
				}
				in = false
				continue
			}
		}
		if in {
			cur = append(cur, line)
		} else if m := headingLine.FindStringSubmatch(line); m != nil {
			heading = m[1]
		}
	}
	return blocks
}

// blocksUnder is the text of the sh blocks under heading in file.
func blocksUnder(t *testing.T, file, heading string) []string {
	t.Helper()
	var texts []string
	for _, b := range shBlocks(t, file) {
		if b.heading == heading {
			texts = append(texts, b.text)
		}
	}
	if len(texts) == 0 {
		t.Fatalf("%s has no sh block under %q", file, heading)
	}
	return texts
}

// blockUnder is the one sh block under heading in file.
func blockUnder(t *testing.T, file, heading string) string {
	t.Helper()
	blocks := blocksUnder(t, file, heading)
	if len(blocks) != 1 {
		t.Fatalf("%s has %d sh blocks under %q, want 1", file, len(blocks), heading)
	}
	return blocks[0]
}
