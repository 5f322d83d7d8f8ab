package ui

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
)

// thirdParty maps each file the dashboard ships from an npm package, under
// static/third_party/, to its path in the package as npm installs it.
var thirdParty = map[string]string{
	"third_party/uplot/uPlot.esm.js":  "uplot/dist/uPlot.esm.js",
	"third_party/uplot/uPlot.min.css": "uplot/dist/uPlot.min.css",
	"third_party/uplot/LICENSE":       "uplot/LICENSE",
}

// TestThirdPartyFilesAreThePinnedPackages installs third_party/'s
// package-lock.json with npm ci (which checks each package's integrity
// hash) into a temporary folder and fails when an embedded copy differs
// from its package's file by one byte, when a file under
// static/third_party/ comes from no pinned package, or when a pin is a
// range rather than one version. It needs npm and the registry; it fails,
// never skips, without them.
func TestThirdPartyFilesAreThePinnedPackages(t *testing.T) {
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Fatal("npm is not installed (apt-get install -y npm): it checks the dashboard's third-party files")
	}
	dir := t.TempDir()
	for _, name := range []string{"package.json", "package-lock.json"} {
		b, err := os.ReadFile(filepath.Join("third_party", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	requireExactPins(t, filepath.Join(dir, "package.json"))
	cmd := exec.Command(npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci in a copy of internal/ui/third_party: %v\n%s", err, out)
	}
	for name, pkgPath := range thirdParty {
		embedded, err := fs.ReadFile(Files, name)
		if err != nil {
			t.Errorf("%s is not embedded: %v", name, err)
			continue
		}
		pinned, err := os.ReadFile(filepath.Join(dir, "node_modules", filepath.FromSlash(pkgPath)))
		if err != nil {
			t.Errorf("the pinned package has no %s: %v", pkgPath, err)
			continue
		}
		if !bytes.Equal(embedded, pinned) {
			t.Errorf("static/%s differs from the pinned package's %s: copy it again from internal/ui/third_party's npm ci", name, pkgPath)
		}
	}
	err = fs.WalkDir(Files, "third_party", func(name string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && thirdParty[name] == "" {
			t.Errorf("static/%s comes from no pinned package: name it in thirdParty", name)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// exactVersion is a pin to one version, not a range.
var exactVersion = regexp.MustCompile(`^\d+\.\d+\.\d+$`)

// requireExactPins fails unless every dependency in the package.json at
// path names one version.
func requireExactPins(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var pkg struct{ Dependencies map[string]string }
	if err := json.Unmarshal(b, &pkg); err != nil {
		t.Fatal(err)
	}
	if len(pkg.Dependencies) == 0 {
		t.Fatal("third_party/package.json pins no package")
	}
	for name, version := range pkg.Dependencies {
		if !exactVersion.MatchString(version) {
			t.Errorf("third_party/package.json: %s is %q, want one version such as 1.6.32", name, version)
		}
	}
}
