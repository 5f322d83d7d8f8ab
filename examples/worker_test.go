package examples

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/echo-mq/echo_mq/internal/servicetest"
)

// language is one folder of example workers and how to run them.
type language struct {
	name     string           // the folder, and the "by" of its results
	tools    []string         // the commands it needs on PATH
	build    func(*testing.T) // builds the worker before it runs, when it needs that
	binDir   func() string    // a directory to put first on PATH once built, or nil
	worker   []string         // the worker's command, run in the folder
	producer []string         // the producer's command, run in the folder
}

var (
	// The Python examples run in a venv with the echo-mq package installed,
	// the Node ones on the package linked into examples/node/node_modules.
	python = language{name: "python", tools: []string{"python3"}, build: func(t *testing.T) { installPython(t) },
		binDir: func() string { return pythonInstall.dir },
		worker: []string{"python3", "worker.py"}, producer: []string{"python3", "producer.py"}}
	node = language{name: "node", tools: []string{"node", "npm"}, build: installNode,
		worker: []string{"node", "worker.mjs"}, producer: []string{"node", "producer.mjs"}}
	shell = language{name: "shell", tools: []string{"sh", "curl", "jq"},
		worker: []string{"sh", "worker.sh"}, producer: []string{"sh", "producer.sh"}}
	// The TypeScript worker runs compiled, and enqueues with the Node producer.
	typescript = language{name: "typescript", tools: []string{"node", "npm"}, build: buildTypeScript,
		worker: []string{"node", "dist/worker.js"}, producer: []string{"node", "../node/producer.mjs"}}

	languages = []language{python, node, shell, typescript}
)

// prepare fails the test, never skips it, when a tool is missing (CI must
// run every example), and builds the worker when it needs that.
func (l language) prepare(t *testing.T) {
	t.Helper()
	for _, tool := range l.tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the %s examples need %s, which is not on PATH: install it (apt-get install -y %s)",
				l.name, tool, aptPackage(tool))
		}
	}
	if l.build != nil {
		l.build(t)
	}
}

func aptPackage(tool string) string {
	switch tool {
	case "python3":
		return "python3"
	case "node":
		return "nodejs"
	case "sh":
		return "dash"
	}
	return tool
}

// env is the environment of the language's examples: exampleEnv's, with
// its binDir first on PATH.
func (l language) env(env ...string) []string {
	out := exampleEnv(env...)
	if l.binDir != nil {
		out = append(out, "PATH="+l.binDir()+string(os.PathListSeparator)+os.Getenv("PATH")) // the last PATH wins
	}
	return out
}

// program is the path of the command name: binDir's when it has one, so
// that python3 is the venv's (exec looks a name up on the test's own PATH,
// not on the one it gives the command).
func (l language) program(name string) string {
	if l.binDir != nil {
		if p := filepath.Join(l.binDir(), name); fileExists(p) {
			return p
		}
	}
	return name
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// exampleEnv is the environment of an example: the test's own, without any
// EMQ_ variable a developer may have set, plus env.
func exampleEnv(env ...string) []string {
	out := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "EMQ_") })
	return append(out, env...)
}

// produce runs the language's producer with args and returns the lines it
// printed; it fails the test unless the producer exits 0.
func (l language) produce(t *testing.T, env []string, args ...string) []string {
	t.Helper()
	lines, err := l.tryProduce(env, args...)
	if err != nil {
		t.Fatal(err)
	}
	return lines
}

// tryProduce runs the language's producer with args and returns the lines
// it printed, or an error with its output unless it exits 0.
func (l language) tryProduce(env []string, args ...string) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, l.program(l.producer[0]), append(l.producer[1:], args...)...)
	cmd.Dir, cmd.Env = l.name, l.env(env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s %s: %w\nstdout:\n%s\nstderr:\n%s", strings.Join(l.producer, " "),
			strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return strings.Split(strings.TrimRight(stdout.String(), "\n"), "\n"), nil
}

// producedLine is what a producer prints per job: "<id> <state>".
var producedLine = regexp.MustCompile(`^([A-Za-z0-9._:-]+) (pending)$`)

// producedIDs checks that every line names a new pending job and returns
// the ids.
func producedIDs(t *testing.T, lines []string, want int) []string {
	t.Helper()
	if len(lines) != want {
		t.Fatalf("the producer printed %d lines %q, want %d", len(lines), lines, want)
	}
	ids := make([]string, len(lines))
	for i, line := range lines {
		m := producedLine.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("producer line %q, want \"<id> pending\"", line)
		}
		ids[i] = m[1]
	}
	return ids
}

// worker is an example worker running as a process of its own group.
type worker struct {
	cmd    *exec.Cmd
	done   chan struct{}           // closed when the process has exited
	log    string                  // the file its standard output and error go to
	tmpDir string                  // its TMPDIR
	proxy  *servicetest.FlakyProxy // the proxy its calls go through, if any (through)
}

// startWorker runs the language's worker with env. It is killed, with any
// process it left, when the test ends; its log goes to the test's log if
// the test failed.
func (l language) startWorker(t *testing.T, env ...string) *worker {
	t.Helper()
	dir := t.TempDir()
	w := &worker{done: make(chan struct{}), log: filepath.Join(dir, "worker.log"), tmpDir: filepath.Join(dir, "tmp")}
	if err := os.Mkdir(w.tmpDir, 0o755); err != nil {
		t.Fatal(err)
	}
	logFile, err := os.Create(w.log)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	w.cmd = exec.Command(l.program(l.worker[0]), l.worker[1:]...)
	w.cmd.Dir, w.cmd.Env = l.name, l.env(append(env, "TMPDIR="+w.tmpDir)...)
	// A file, not a pipe: Wait must not wait for a child the worker left
	// holding the pipe (the test looks for those itself).
	w.cmd.Stdout, w.cmd.Stderr = logFile, logFile
	w.cmd.SysProcAttr = ownGroup()
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { w.cmd.Wait(); close(w.done) }()
	t.Cleanup(func() {
		killGroup(w.cmd.Process.Pid)
		<-w.done
		if t.Failed() {
			t.Logf("%s worker log:\n%s", l.name, readFile(w.log))
		}
	})
	return w
}

// lines returns the worker's log lines so far.
func (w *worker) lines() []string {
	return strings.Split(readFile(w.log), "\n")
}

// logged reports whether the worker logged line, whole.
func (w *worker) logged(line string) bool { return slices.Contains(w.lines(), line) }

// loggedPrefix reports whether a line the worker logged starts with prefix.
func (w *worker) loggedPrefix(prefix string) bool {
	return slices.ContainsFunc(w.lines(), func(l string) bool { return strings.HasPrefix(l, prefix) })
}

// waitLogged waits until the worker logged line, and fails the test if it
// exits first, or makes no progress for limit (until).
func (w *worker) waitLogged(t *testing.T, line string, limit time.Duration) {
	t.Helper()
	w.until(t, limit, fmt.Sprintf("the worker logs %q", line), func() bool {
		w.checkRunning(t)
		return w.logged(line)
	})
}

// waitState waits until the job is in state, and returns it; it fails the
// test once the worker makes no progress for limit (until).
func (w *worker) waitState(t *testing.T, svc service, queue, id, state string, limit time.Duration) job {
	t.Helper()
	var j job
	w.until(t, limit, fmt.Sprintf("job %s %s", id, state), func() bool {
		j = svc.job(t, queue, id)
		return j.State == state
	})
	return j
}

// through notes that the worker's calls go through p: they count as its
// progress.
func (w *worker) through(p *servicetest.FlakyProxy) { w.proxy = p }

// progress counts what the worker has done so far: the lines it logged
// and, behind a proxy, the calls it sent other than claims (a claim that
// brings a job is logged; one that brings none is the worker idle).
func (w *worker) progress() int {
	n := len(w.lines())
	if w.proxy != nil {
		n += len(w.proxy.Requests("")) - len(w.proxy.Requests("/claim"))
	}
	return n
}

// untilCap bounds a wait of until however the worker moves: one that keeps
// moving without getting there (extending a job it should have stopped)
// fails too.
const untilCap = 2 * time.Minute

// until polls check until it reports true, and fails the test with what
// once the worker has made no progress for limit while check did not
// hold, or after untilCap. A busy machine makes a worker slow (each curl,
// jq and sleep of the shell worker is a process to start): a wait for a
// number of seconds would measure the machine, so the limit counts from
// the worker's last step.
func (w *worker) until(t *testing.T, limit time.Duration, what string, check func() bool) {
	t.Helper()
	began := time.Now()
	last, moved := w.progress(), began
	for !check() {
		if n := w.progress(); n != last {
			last, moved = n, time.Now()
		}
		if time.Since(moved) > limit || time.Since(began) > untilCap {
			t.Fatalf("%s: not within %v of the worker's last step (%v in all, at most %v)", what, limit,
				time.Since(began).Round(100*time.Millisecond), untilCap)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// checkRunning fails the test if the worker has exited.
func (w *worker) checkRunning(t *testing.T) {
	t.Helper()
	select {
	case <-w.done:
		t.Fatalf("the worker exited (%v) unexpectedly", w.cmd.ProcessState)
	default:
	}
}
