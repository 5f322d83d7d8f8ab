package docs

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/echo-mq/echo_mq/internal/servicetest"
)

// docsWorkerKey is the worker key the docs' workers are given, for the
// placeholder "<worker key>".
const docsWorkerKey = "worker-key-for-the-docs-0123456789"

// TestWorkersInTenLines runs the Python and the Node.js worker of
// docs/workers.md, as pasted into a file, on the package installed as the
// page says: each enqueues welcome-42 and completes it with {"sent":
// true}, and a SIGTERM stops it, exit 0.
func TestWorkersInTenLines(t *testing.T) {
	t.Run("python", func(t *testing.T) {
		t.Parallel()
		code := oneBlock(t, "python", "Python")
		bin, err := servicetest.InstallPython(root, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		runWorker(t, dir, "worker.py", code, filepath.Join(bin, "python3"), "worker.py")
	})
	t.Run("node", func(t *testing.T) {
		t.Parallel()
		code := oneBlock(t, "js", "Node.js and TypeScript")
		dir := t.TempDir()
		pkg, err := filepath.Abs(filepath.Join(root, "clients", "node"))
		if err != nil {
			t.Fatal(err)
		}
		manifest := `{"name": "docs-worker", "private": true, "type": "module", "dependencies": {"echo-mq": "file:` + pkg + `"}}`
		if err := os.WriteFile(filepath.Join(dir, "package.json"), []byte(manifest), 0o644); err != nil {
			t.Fatal(err)
		}
		install := exec.Command("npm", "install", "--offline", "--no-audit", "--no-fund")
		install.Dir = dir
		if out, err := install.CombinedOutput(); err != nil {
			t.Fatalf("npm install: %v\n%s", err, out)
		}
		runWorker(t, dir, "worker.mjs", code, "node", "worker.mjs")
	})
}

// oneBlock is the one code block of lang under heading in docs/workers.md.
func oneBlock(t *testing.T, lang, heading string) string {
	t.Helper()
	var found []string
	for _, b := range codeBlocks(t, "docs/workers.md", lang) {
		if b.heading == heading {
			found = append(found, b.text)
		}
	}
	if len(found) != 1 {
		t.Fatalf("docs/workers.md has %d %s blocks under %q, want 1", len(found), lang, heading)
	}
	return found[0]
}

// runWorker writes code to file in dir, with the docs' URL and key made
// the test service's, runs it, waits until job welcome-42 of emails is
// completed with {"sent": true}, then stops the worker with SIGTERM and
// wants it to exit 0.
func runWorker(t *testing.T, dir, file, code string, command ...string) {
	t.Helper()
	svc := startService(t, "EMQ_API_KEYS=worker:"+docsWorkerKey)
	if !strings.Contains(code, docsURL) || !strings.Contains(code, "<worker key>") {
		t.Fatalf("the worker names no %s and <worker key> to replace:\n%s", docsURL, code)
	}
	code = strings.ReplaceAll(strings.ReplaceAll(code, docsURL, svc.URL()), "<worker key>", docsWorkerKey)
	if err := os.WriteFile(filepath.Join(dir, file), []byte(code), 0o644); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	cmd := exec.Command(command[0], command[1:]...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() {
		cmd.Process.Kill()
		<-done
	}()

	deadline := time.Now().Add(60 * time.Second)
	for {
		body, status := get(t, svc.URL()+"/queues/emails/jobs/welcome-42")
		if status == 200 && strings.Contains(body, `"state":"completed"`) && strings.Contains(body, `"result":{"sent":true}`) {
			break
		}
		select {
		case err := <-done:
			done <- err
			t.Fatalf("the worker exited (%v) before it completed welcome-42:\n%s", err, log.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("welcome-42 not completed in 60 s: %d %s\nthe worker's output:\n%s", status, body, log.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		done <- err
		if err != nil {
			t.Fatalf("the worker exited with %v after SIGTERM, want 0:\n%s", err, log.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the worker did not exit within 30 s of SIGTERM:\n%s", log.String())
	}
}

// get reads url with the docs' worker key; it returns the body and status
// (0 when no answer came).
func get(t *testing.T, url string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+docsWorkerKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err.Error(), 0
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return string(body), resp.StatusCode
}
