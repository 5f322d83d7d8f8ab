package servicetest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// InstallPython makes a venv in dir with the echo-mq package of the
// repository at repo installed offline, as clients/python/README.md says
// (from a copy of clients/python in dir: a build writes beside its
// source), and returns the venv's bin directory: its python3 imports
// echo_mq.
func InstallPython(repo, dir string) (string, error) {
	src := filepath.Join(dir, "echo-mq-src")
	if err := os.CopyFS(src, os.DirFS(filepath.Join(repo, "clients", "python"))); err != nil {
		return "", fmt.Errorf("servicetest: copying clients/python: %w", err)
	}
	venv := filepath.Join(dir, "venv")
	if out, err := exec.Command("python3", "-m", "venv", venv).CombinedOutput(); err != nil {
		return "", fmt.Errorf("servicetest: python3 -m venv: %w\n%s", err, out)
	}
	bin := filepath.Join(venv, "bin")
	out, err := exec.Command(filepath.Join(bin, "pip"), "install", "--no-build-isolation", "--no-index",
		"--disable-pip-version-check", src).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("servicetest: pip install clients/python: %w\n%s", err, out)
	}
	return bin, nil
}
