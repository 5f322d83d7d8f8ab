package examples

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/echo-mq/echo_mq/internal/servicetest"
)

// The Python and Node examples run on the client packages (clients/python,
// clients/node), installed once per test run as their READMEs say.

// nodeInstall is the one npm ci of examples/node per test run.
var nodeInstall struct {
	once sync.Once
	err  error
}

// installNode links the echo-mq package into examples/node/node_modules
// (npm ci: its package.json names clients/node by path, whose dist/ is
// committed) when node_modules is missing or older than package-lock.json.
func installNode(t *testing.T) {
	t.Helper()
	nodeInstall.once.Do(func() {
		installed, err := os.Stat(filepath.Join("node", "node_modules", ".package-lock.json"))
		if err != nil || isOlder(installed, filepath.Join("node", "package-lock.json")) {
			nodeInstall.err = runIn("node", 2*time.Minute, "npm", "ci")
		}
	})
	if nodeInstall.err != nil {
		t.Fatal(nodeInstall.err)
	}
}

// pythonInstall is the one venv of the Python examples per test run.
var pythonInstall struct {
	once sync.Once
	dir  string // the venv's bin directory
	err  error
}

// installPython makes a venv with the echo-mq package installed offline
// (servicetest.InstallPython) and returns its bin directory, for the front
// of the examples' PATH: there python3 is the venv's.
func installPython(t *testing.T) string {
	t.Helper()
	pythonInstall.once.Do(func() {
		tmp, err := os.MkdirTemp("", "emq-examples-python-")
		if err != nil {
			pythonInstall.err = err
			return
		}
		builds.add(tmp)
		pythonInstall.dir, pythonInstall.err = servicetest.InstallPython("..", tmp)
	})
	if pythonInstall.err != nil {
		t.Fatal(pythonInstall.err)
	}
	return pythonInstall.dir
}

// builds are the temporary directories of the installs, which TestMain
// removes once the tests are done.
var builds tempDirs

type tempDirs struct {
	mu   sync.Mutex
	dirs []string
}

func (d *tempDirs) add(dir string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.dirs = append(d.dirs, dir)
}

func (d *tempDirs) removeAll() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, dir := range d.dirs {
		os.RemoveAll(dir)
	}
}
