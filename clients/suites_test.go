package clients

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestPython installs clients/python offline into a fresh venv of each
// Python in EMQ_TEST_PYTHONS (space-separated commands or paths; default
// python3), as its README says, and runs its unittest suite there, on the
// installed package.
func TestPython(t *testing.T) {
	t.Parallel()
	pythons := strings.Fields(os.Getenv("EMQ_TEST_PYTHONS"))
	if len(pythons) == 0 {
		pythons = []string{"python3"}
	}
	h := startHarness(t)
	for _, py := range pythons {
		bin, err := exec.LookPath(py)
		if err != nil {
			t.Fatalf("%s: %v (script/bootstrap installs python3)", py, err)
		}
		version := strings.TrimSpace(run(t, "", nil, bin, "-c", "import platform; print(platform.python_version())"))
		t.Run("python-"+version, func(t *testing.T) { testPython(t, h, bin) })
	}
}

func testPython(t *testing.T, h *harness, python string) {
	tmp := t.TempDir()
	// A copy: an in-tree build writes build/ and *.egg-info beside the source.
	src := filepath.Join(tmp, "src")
	if err := os.CopyFS(src, os.DirFS(repoPath(t, "clients", "python"))); err != nil {
		t.Fatal(err)
	}
	venv := filepath.Join(tmp, "venv")
	run(t, tmp, nil, python, "-m", "venv", venv)
	run(t, tmp, nil, filepath.Join(venv, "bin", "pip"), "install", "--no-build-isolation", "--no-index",
		"--disable-pip-version-check", src)
	py := filepath.Join(venv, "bin", "python")
	where := strings.TrimSpace(run(t, tmp, nil, py, "-c", "import echo_mq; print(echo_mq.__file__)"))
	if !strings.HasPrefix(where, venv+string(filepath.Separator)) {
		t.Fatalf("echo_mq imports from %s, not from the venv %s", where, venv)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(where), "py.typed")); err != nil {
		t.Errorf("the installed package has no py.typed: %v", err)
	}
	out := run(t, tmp, h.env(), py, "-m", "unittest", "discover", "-v", "-s", filepath.Join(src, "tests"))
	t.Logf("python -m unittest:\n%s", out)
}

// TestNode packs clients/node as npm publishes it, installs the tarball
// into a fresh project, and runs its node:test suite there, on the
// installed package.
func TestNode(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s: %v (script/bootstrap installs Node.js and npm)", tool, err)
		}
	}
	h := startHarness(t)
	npm := []string{"npm_config_update_notifier=false", "npm_config_fund=false", "npm_config_audit=false"}
	npmEnv := append(os.Environ(), npm...)
	tmp := t.TempDir()
	// npm pack builds dist/ afresh (prepack): in a copy, since the examples,
	// which may run at the same time, import the committed one.
	pkg := filepath.Join(tmp, "clients", "node")
	copyTree(t, repoPath(t, "clients", "node"), pkg)
	run(t, pkg, npmEnv, "npm", "ci")
	packed := strings.Fields(run(t, pkg, npmEnv, "npm", "pack", "--silent", "--pack-destination", tmp))
	if len(packed) == 0 {
		t.Fatal("npm pack named no tarball")
	}
	tarball := filepath.Join(tmp, packed[len(packed)-1])

	project := filepath.Join(tmp, "project")
	if err := os.MkdirAll(project, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(project, "package.json"),
		[]byte(`{"name": "emq-client-suite", "private": true, "type": "module"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// --offline: a runtime dependency would have to come from the registry.
	run(t, project, npmEnv, "npm", "install", "--offline", tarball)
	if err := os.CopyFS(filepath.Join(project, "test"), os.DirFS(filepath.Join(pkg, "test"))); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(project, "test", "*.test.mjs"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no test/*.test.mjs in clients/node (%v)", err)
	}
	out := run(t, project, h.env(), "node", append([]string{"--test", "--test-reporter=spec"}, files...)...)
	t.Logf("node --test:\n%s", out)

	// npm install <folder> links the folder itself: its committed dist/ is
	// what the project imports.
	linked := filepath.Join(tmp, "linked")
	if err := os.MkdirAll(linked, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(linked, "package.json"),
		[]byte(`{"name": "emq-linked", "private": true, "type": "module"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, linked, npmEnv, "npm", "install", "--offline", repoPath(t, "clients", "node"))
	if got := run(t, linked, nil, "node", "--input-type=module", "-e",
		`import { Client } from "echo-mq"; console.log(new Client({ baseUrl: "http://127.0.0.1:1" }).constructor.name)`); strings.TrimSpace(got) != "Client" {
		t.Errorf("a project that installed the folder clients/node imports %q, want Client", got)
	}
}

// copyTree copies the directory src to dst, but for node_modules.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if d.IsDir() && d.Name() == "node_modules" {
			return filepath.SkipDir
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// repoPath is the absolute path of a file of the repository.
func repoPath(t *testing.T, parts ...string) string {
	p, err := filepath.Abs(filepath.Join(append([]string{".."}, parts...)...))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// run runs a command in dir (with env, or the test's environment when
// nil) and returns what it printed; it fails the test, showing the
// output, when the command fails.
func run(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env = dir, env
	began := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s (in %s, %v): %v\n%s", name, strings.Join(args, " "), dir,
			time.Since(began).Round(time.Millisecond), err, out)
	}
	return string(out)
}
