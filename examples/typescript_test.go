package examples

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// tsBuild is the one build of the TypeScript example per test run.
var tsBuild struct {
	once sync.Once
	err  error
}

// buildTypeScript compiles examples/typescript/src into dist/ (gitignored),
// once per test run, and fails the test with the build's output if that
// fails.
func buildTypeScript(t *testing.T) {
	t.Helper()
	tsBuild.once.Do(func() { tsBuild.err = compileTypeScript("typescript") })
	if tsBuild.err != nil {
		t.Fatal(tsBuild.err)
	}
}

// compileTypeScript installs the pinned packages in dir with npm ci when
// they are missing or older than package-lock.json (as the folder's check
// script decides), then runs tsc.
func compileTypeScript(dir string) error {
	installed, err := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json"))
	if err != nil || isOlder(installed, filepath.Join(dir, "package-lock.json")) {
		if err := runIn(dir, 5*time.Minute, "npm", "ci"); err != nil {
			return err
		}
	}
	return runIn(dir, 2*time.Minute, "npx", "--no-install", "tsc")
}

// isOlder reports whether the file fi is older than the file at path.
func isOlder(fi os.FileInfo, path string) bool {
	other, err := os.Stat(path)
	return err == nil && fi.ModTime().Before(other.ModTime())
}

// runIn runs a command in dir and returns an error with its output unless
// it succeeds within limit.
func runIn(dir string, limit time.Duration, name string, args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	// npm's checks for updates, funding and audits are no business of a test.
	cmd.Env = append(os.Environ(), "npm_config_update_notifier=false", "npm_config_fund=false", "npm_config_audit=false")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("examples/%s: %s %v: %v\n%s", dir, name, args, err, out)
	}
	return nil
}
