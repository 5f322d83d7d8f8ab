// Package e2e is the dashboard's browser test: it starts the service on a
// real Redis, fills a queue over HTTP, and runs dashboard.mjs (an open API)
// and keys.mjs (behind API keys), which open /ui/ in Debian's headless
// Chromium through playwright-core and check what a person sees and can do
// there; browser.mjs holds what the two share.
//
// It needs node and npm, and the chromium package:
//
//	apt-get install -y chromium nodejs npm
//
// The test installs playwright-core itself (npm ci, no browser download)
// when node_modules is missing or older than package-lock.json. With
// EMQ_UPDATE_SCREENSHOTS=1 it copies the screenshots it takes to
// docs/screenshots/.
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/echo-mq/echo_mq/internal/redistest"
	"github.com/echo-mq/echo_mq/internal/servicetest"
)

// chromiumPath is Debian's chromium package's browser.
const chromiumPath = "/usr/bin/chromium"

// scriptTimeout bounds one run of dashboard.mjs, only so that a hung
// browser cannot hold the suite: each of its steps fails on its own after
// Playwright's 30 s without progress. The whole run takes about 55 s on an
// idle machine and more than 100 s on a busy one, so its bound is no test
// of speed.
const scriptTimeout = 5 * time.Minute

// bin is the service binary, built once by TestMain.
var bin string

func TestMain(m *testing.M) { os.Exit(servicetest.Main(m, &bin)) }

func TestDashboard(t *testing.T) {
	requireTools(t)
	installPackages(t)

	prefix := fmt.Sprintf("emq-e2e-%d", time.Now().UnixNano())
	svc := servicetest.Start(t, bin, "EMQ_REDIS_URL=redis://"+redistest.Addr()+"/0", "EMQ_PREFIX="+prefix,
		"EMQ_PUSH_ALLOW=127.0.0.1")
	const queue, pending = "emails", 3
	api := client{t: t, base: svc.URL() + "/queues/" + queue}

	// Two dead jobs, each with one attempt only, claimed and failed, each
	// with its own error: the dead letters panel shows two groups.
	deadIDs := make([]string, 0, 2)
	for _, reason := range []string{"mailbox full", "smtp timeout"} {
		deadIDs = append(deadIDs, api.deadJob(reason))
	}
	var claimed claimAnswer
	// One active job, held by the script as its worker, for the cancel.
	api.post("/jobs", `{"id":"welcome-ada","payload":{"to":"ada@example.com"}}`, nil)
	api.post("/claim", `{"lease_ms":120000}`, &claimed)
	if len(claimed.Jobs) != 1 || claimed.Jobs[0].ID != "welcome-ada" {
		t.Fatalf("claim: %+v, want the job welcome-ada", claimed.Jobs)
	}
	active := claimed.Jobs[0]
	for i := range pending {
		api.post("/jobs", fmt.Sprintf(`{"payload":{"n":%d}}`, i), nil)
	}

	shots := t.TempDir()
	out, err := runScript("dashboard.mjs", svc.URL(), shots,
		"EMQ_QUEUE="+queue,
		fmt.Sprintf("EMQ_PENDING=%d", pending),
		fmt.Sprintf("EMQ_DEAD=%d", len(deadIDs)),
		"EMQ_DEAD_ID="+deadIDs[0],
		"EMQ_ACTIVE_ID="+active.ID,
		"EMQ_ACTIVE_TOKEN="+string(active.Token),
	)
	if err != nil {
		t.Fatalf("node dashboard.mjs: %v\n--- its output:\n%s\n--- the service's log:\n%s", err, out, svc.Log())
	}
	t.Logf("node dashboard.mjs:\n%s", out)
	checkScreenshots(t, shots)
	if os.Getenv("EMQ_UPDATE_SCREENSHOTS") == "1" {
		updateScreenshots(t, shots)
	}
}

// TestDashboardWithKeys runs keys.mjs against a service with API keys: the
// page asks for a key, shows only what the key's role may do (a reader
// sees the queue's schedule but no button to pause or run it), and keeps
// the key in the tab's sessionStorage only.
func TestDashboardWithKeys(t *testing.T) {
	requireTools(t)
	installPackages(t)

	const readerKey, adminKey = "e2e-reader-key-0123456789", "e2e-admin-key-0123456789"
	prefix := fmt.Sprintf("emq-e2e-keys-%d", time.Now().UnixNano())
	svc := servicetest.Start(t, bin, "EMQ_REDIS_URL=redis://"+redistest.Addr()+"/0", "EMQ_PREFIX="+prefix,
		"EMQ_API_KEYS=reader:"+readerKey+",admin:"+adminKey)
	const queue = "reports"
	api := client{t: t, base: svc.URL() + "/queues/" + queue, key: adminKey}
	deadID := api.deadJob("disk full")
	const schedule = "weekly-report"
	api.send(http.MethodPut, "/schedules/"+schedule, `{"cron":"0 6 * * 1","job":{"payload":{"report":"weekly"}}}`, nil)

	out, err := runScript("keys.mjs", svc.URL(), t.TempDir(),
		"EMQ_QUEUE="+queue,
		"EMQ_DEAD_ID="+deadID,
		"EMQ_SCHEDULE="+schedule,
		"EMQ_READER_KEY="+readerKey,
		"EMQ_ADMIN_KEY="+adminKey,
	)
	if err != nil {
		t.Fatalf("node keys.mjs: %v\n--- its output:\n%s\n--- the service's log:\n%s", err, out, svc.Log())
	}
	t.Logf("node keys.mjs:\n%s", out)
}

// requireTools fails the test, never skips it, when node, npm or Chromium
// is missing, and says how to install them.
func requireTools(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is missing: apt-get install -y nodejs npm", tool)
		}
	}
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Fatalf("%s is missing: apt-get install -y chromium", chromiumPath)
	}
}

var (
	installOnce sync.Once
	installErr  error
)

// installPackages runs npm ci once per test binary when node_modules is
// missing or older than package-lock.json. Playwright never downloads a
// browser: the test drives Debian's.
func installPackages(t *testing.T) {
	t.Helper()
	installOnce.Do(func() {
		if upToDate() {
			return
		}
		cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund")
		cmd.Env = append(os.Environ(), "PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			installErr = fmt.Errorf("npm ci in internal/ui/e2e: %v\n%s", err, out)
		}
	})
	if installErr != nil {
		t.Fatal(installErr)
	}
}

// upToDate says whether node_modules was installed from the current
// package-lock.json (npm writes node_modules/.package-lock.json on each
// install).
func upToDate() bool {
	lock, err := os.Stat("package-lock.json")
	if err != nil {
		return false
	}
	installed, err := os.Stat(filepath.Join("node_modules", ".package-lock.json"))
	return err == nil && !installed.ModTime().Before(lock.ModTime())
}

// runScript runs script (dashboard.mjs or keys.mjs) against the service,
// with env added to its environment, and returns its output.
func runScript(script, url, shots string, env ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), scriptTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", script)
	cmd.Env = append(os.Environ(), "EMQ_URL="+url, "EMQ_SCREENSHOTS="+shots, "CHROMIUM="+chromiumPath)
	cmd.Env = append(cmd.Env, env...)
	cmd.WaitDelay = 5 * time.Second // Chromium's children may hold the pipes open
	return cmd.CombinedOutput()
}

// screenshots are the files dashboard.mjs writes.
var screenshots = []string{
	"dashboard-laptop-light.png", "dashboard-laptop-dark.png",
	"dashboard-phone-light.png", "dashboard-phone-dark.png",
	"queue-laptop-light.png", "job-laptop-light.png",
	"charts-laptop-light.png", "charts-laptop-dark.png",
	"charts-phone-light.png", "charts-phone-dark.png",
}

// checkScreenshots checks that each screenshot is a PNG, and that the
// light and dark ones differ: the page does follow the colour scheme.
func checkScreenshots(t *testing.T, dir string) {
	t.Helper()
	read := map[string][]byte{}
	for _, name := range screenshots {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) {
			t.Fatalf("%s is not a PNG", name)
		}
		read[name] = b
	}
	for _, page := range []string{"dashboard", "charts"} {
		for _, size := range []string{"laptop", "phone"} {
			light, dark := page+"-"+size+"-light.png", page+"-"+size+"-dark.png"
			if bytes.Equal(read[light], read[dark]) {
				t.Errorf("%s and %s are the same image: the page ignores the colour scheme", light, dark)
			}
		}
	}
}

// updateScreenshots copies the screenshots to docs/screenshots/, for the
// dashboard section of docs/operating.md.
func updateScreenshots(t *testing.T, dir string) {
	t.Helper()
	docs := filepath.Join("..", "..", "..", "docs", "screenshots")
	if err := os.MkdirAll(docs, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range screenshots {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(docs, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("updated %s", docs)
}

// claimAnswer is the part of a claim's answer the test uses.
type claimAnswer struct {
	Jobs []struct {
		ID    string          `json:"id"`
		Token json.RawMessage `json:"token"` // passed back as it came
	} `json:"jobs"`
}

// deadJob makes a job with one attempt, claims it and fails it with
// reason, and returns its id.
func (c client) deadJob(reason string) string {
	c.t.Helper()
	c.post("/jobs", `{"payload":{"to":"ada@example.com"},"max_attempts":1}`, nil)
	var claimed claimAnswer
	c.post("/claim", `{"lease_ms":30000}`, &claimed)
	if len(claimed.Jobs) != 1 {
		c.t.Fatalf("claim: %d jobs, want 1", len(claimed.Jobs))
	}
	job := claimed.Jobs[0]
	var failed struct{ State string }
	c.post("/jobs/"+job.ID+"/fail", fmt.Sprintf(`{"token":%s,"error":%q}`, job.Token, reason), &failed)
	if failed.State != "dead" {
		c.t.Fatalf("fail with max_attempts 1: state %q, want dead", failed.State)
	}
	return job.ID
}

// client calls the service's API for one queue, with key (when set) as
// its bearer token.
type client struct {
	t    *testing.T
	base string
	key  string
}

// post sends body to base+path and decodes a 200 or 201 answer into out
// (when not nil); any other status fails the test.
func (c client) post(path, body string, out any) {
	c.t.Helper()
	c.send(http.MethodPost, path, body, out)
}

// send is post with another method (PUT a schedule).
func (c client) send(method, path, body string, out any) {
	c.t.Helper()
	req, err := http.NewRequest(method, c.base+path, bytes.NewBufferString(body))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	var raw bytes.Buffer
	raw.ReadFrom(resp.Body)
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusCreated {
		c.t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, raw.String())
	}
	if out != nil {
		if err := json.Unmarshal(raw.Bytes(), out); err != nil {
			c.t.Fatalf("%s %s: %v in %s", method, path, err, raw.String())
		}
	}
}
