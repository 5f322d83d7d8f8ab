package docs

// What a newcomer meets first: the README's two commands, the worker loop
// when something is wrong, and the examples' numbers.

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestNewcomerCommands checks the README's first lines: one command runs
// the service, the other is script/test, which sets up what the suite
// needs (script/bootstrap) and runs all of it; CI runs the same script.
func TestNewcomerCommands(t *testing.T) {
	first := shBlocks(t, "README.md")[0]
	var cmds []string
	for _, line := range strings.Split(first.text, "\n") {
		cmds = append(cmds, strings.TrimSpace(stripComment(line)))
	}
	if want := []string{"go run ./cmd/api", "script/test"}; first.line > 5 || !slices.Equal(cmds, want) {
		t.Fatalf("README.md's first block (line %d) is %q, want %q", first.line, cmds, want)
	}
	test := readFile(t, "script/test")
	for _, want := range []string{"\nscript/bootstrap\n", "set -- ./...", `go test -race -count=1 -timeout 30m "$@"`} {
		if !strings.Contains(test, want) {
			t.Errorf("script/test does not run %q", want)
		}
	}
	if ci := readFile(t, ".ci/run"); !regexp.MustCompile(`(?m)^script/test$`).MatchString(ci) {
		t.Errorf(".ci/run does not run script/test: CI must run what a newcomer runs")
	}
}

// TestBootstrapInstallsWhatTestsName checks that every Debian package a
// test's failure message tells to install ("apt-get install -y nodejs") is
// one script/bootstrap installs, so that script/test on a fresh machine
// never meets that message.
func TestBootstrapInstallsWhatTestsName(t *testing.T) {
	bootstrap := readFile(t, "script/bootstrap")
	list, _, ok := strings.Cut(bootstrap[strings.Index(bootstrap, "requirements=(")+1:], "\n)")
	if !ok {
		t.Fatal("script/bootstrap has no requirements=( ... ) list")
	}
	installs := map[string]bool{"nginx-light": true} // its nginx is the nginx package's
	for _, m := range regexp.MustCompile(`"([a-z0-9.+-]+) [^"]+"`).FindAllStringSubmatch(list, -1) {
		installs[m[1]] = true
	}
	if len(installs) < 10 {
		t.Fatalf("read %d packages of script/bootstrap's requirements", len(installs))
	}
	told := regexp.MustCompile(`apt-get install -y ([a-z0-9.+ -]+)`)
	n := 0
	_ = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := strings.TrimPrefix(path, root+"/")
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == "docs" || strings.HasPrefix(d.Name(), ".") && path != root) {
			return filepath.SkipDir
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		for _, m := range told.FindAllStringSubmatch(readFile(t, rel), -1) {
			for _, pkg := range strings.Fields(m[1]) {
				n++
				if !installs[pkg] {
					t.Errorf("%s tells to install %s, which script/bootstrap does not", rel, pkg)
				}
			}
		}
		return nil
	})
	if n < 5 {
		t.Fatalf("found %d packages named in the tests' messages: the search is broken", n)
	}
}

// TestReadmeWorkerLoopShowsProblems runs the README's worker loop where no
// claim can succeed: it shows why on every try (the problem, or curl's
// error when nothing answers) and waits a second between tries, instead
// of asking again at once and in silence.
func TestReadmeWorkerLoopShowsProblems(t *testing.T) {
	loop := blocksUnder(t, "README.md", "A worker loop with curl")[1]
	keyed := startService(t, "EMQ_API_KEYS=worker:worker-key-0123456789abcdef")
	open := startService(t)
	for _, tc := range []struct {
		name, block, want string
	}{
		{"wrong key", onService(loop, keyed), `"code":"EMQUNAUTHORIZED"`},
		{"bad queue name", strings.Replace(onService(loop, open), "/queues/emails", "/queues/e!mails", 1), `"code":"EMQINVALID"`},
		{"no service", strings.ReplaceAll(loop, docsURL, "http://"+closedAddr(t)), "curl: (7)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out := runFor(t, tc.block, 2500*time.Millisecond)
			// Tries at about 0, 1 and 2 s; without the pause, thousands.
			if n := strings.Count(out, tc.want); n < 2 || n > 4 {
				t.Fatalf("in 2.5 s the loop showed %q %d times, want 2 to 4 (a try a second):\n%.2000s", tc.want, n, out)
			}
		})
	}
}

// runFor runs a block that loops until stopped for d, then kills it and
// what it started, and answers all it printed.
func runFor(t *testing.T, block string, d time.Duration) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", block)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	out, _ := cmd.CombinedOutput()
	return string(out)
}

// closedAddr is a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// TestSchedulesTickID checks the schedules page's example: the tick's job
// id is the schedule's name and its next_run_at in ms since the epoch.
func TestSchedulesTickID(t *testing.T) {
	page := readFile(t, "docs/schedules.md")
	next := regexp.MustCompile(`"next_run_at": "([^"]+)"`).FindStringSubmatch(page)
	id := regexp.MustCompile("`nightly:([0-9]+)`").FindStringSubmatch(page)
	if next == nil || id == nil {
		t.Fatal("docs/schedules.md has no next_run_at or nightly:<ms> example")
	}
	at, err := time.Parse(time.RFC3339Nano, next[1])
	if err != nil {
		t.Fatal(err)
	}
	if want := strconv.FormatInt(at.UnixMilli(), 10); id[1] != want {
		t.Fatalf("the example's tick id is nightly:%s, want nightly:%s (next_run_at %s)", id[1], want, next[1])
	}
}
