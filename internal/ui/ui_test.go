package ui

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// get asks the dashboard handler for path (the "/ui" prefix stripped).
func get(t *testing.T, path string, header ...string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	Handler(nil).ServeHTTP(rec, req)
	return rec
}

func TestIndexIsServedWithStrictHeaders(t *testing.T) {
	rec := get(t, "/")
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `<script type="module" src="app.js">`) {
		t.Fatalf("GET /: %d %.200q, want index.html", rec.Code, rec.Body)
	}
	want := map[string]string{
		"Content-Type":            "text/html; charset=utf-8",
		"Content-Security-Policy": ContentSecurityPolicy,
		"X-Content-Type-Options":  "nosniff",
		"Cache-Control":           "no-cache",
	}
	for name, value := range want {
		if got := rec.Header().Get(name); got != value {
			t.Errorf("%s: %q, want %q", name, got, value)
		}
	}
	for _, directive := range []string{"default-src 'self'", "script-src 'self'", "frame-ancestors 'none'"} {
		if !strings.Contains(ContentSecurityPolicy, directive) {
			t.Errorf("CSP %q lacks %q", ContentSecurityPolicy, directive)
		}
	}
}

func TestAssetsAreServedWithTheirTypes(t *testing.T) {
	types := map[string]string{
		"/index.html":     "text/html; charset=utf-8",
		"/app.js":         "text/javascript; charset=utf-8",
		"/api.js":         "text/javascript; charset=utf-8",
		"/queues.js":      "text/javascript; charset=utf-8",
		"/queue.js":       "text/javascript; charset=utf-8",
		"/job.js":         "text/javascript; charset=utf-8",
		"/edit.js":        "text/javascript; charset=utf-8",
		"/routes.js":      "text/javascript; charset=utf-8",
		"/role.js":        "text/javascript; charset=utf-8",
		"/dom.js":         "text/javascript; charset=utf-8",
		"/deadletters.js": "text/javascript; charset=utf-8",
		"/bulk.js":        "text/javascript; charset=utf-8",
		"/flow.js":        "text/javascript; charset=utf-8",
		"/schedules.js":   "text/javascript; charset=utf-8",
		"/push.js":        "text/javascript; charset=utf-8",
		"/live.js":        "text/javascript; charset=utf-8",
		"/stats.js":       "text/javascript; charset=utf-8",
		"/charts.js":      "text/javascript; charset=utf-8",
		"/activity.js":    "text/javascript; charset=utf-8",
		"/style.css":      "text/css; charset=utf-8",

		"/third_party/uplot/uPlot.esm.js":  "text/javascript; charset=utf-8",
		"/third_party/uplot/uPlot.min.css": "text/css; charset=utf-8",
	}
	for path, ctype := range types {
		rec := get(t, path)
		if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != ctype || rec.Body.Len() == 0 {
			t.Errorf("GET %s: %d %q (%d bytes), want 200 %q", path, rec.Code, rec.Header().Get("Content-Type"), rec.Body.Len(), ctype)
		}
		if rec.Header().Get("Content-Security-Policy") == "" || rec.Header().Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: no strict headers: %v", path, rec.Header())
		}
	}
}

func TestARevalidationWithTheETagIsNotModified(t *testing.T) {
	first := get(t, "/app.js")
	tag := first.Header().Get("ETag")
	if tag == "" {
		t.Fatal("GET /app.js has no ETag")
	}
	if rec := get(t, "/app.js", "If-None-Match", tag); rec.Code != http.StatusNotModified {
		t.Errorf("GET /app.js with If-None-Match %s: %d, want 304", tag, rec.Code)
	}
}

func TestOnlyTheDashboardsFilesAreServed(t *testing.T) {
	for _, path := range []string{"/nope.js", "/static/app.js", "/../ui.go", "/ui.go", "/./app.js", "//app.js", "/app.js/"} {
		if rec := get(t, path); rec.Code != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", path, rec.Code)
		}
	}
}

// outside finds what would make the page load or call anything from
// another origin: an absolute http(s) URL, or a protocol-relative one in
// src, href, url(), import or fetch.
var outside = regexp.MustCompile(`(?i)https?://|(src|href|action)\s*=\s*["']?//|url\(\s*["']?//|(from|import\(|fetch\()\s*["'` + "`" + `]//`)

// TestNoFileReachesOutside scans every embedded file: the dashboard loads
// and calls nothing but its own origin (no CDN, no outside fetch). A
// third-party file's comment lines may cite web pages (uPlot's do); its
// code is scanned like the dashboard's own, and is byte for byte the
// pinned package's (TestThirdPartyFilesAreThePinnedPackages).
func TestNoFileReachesOutside(t *testing.T) {
	scanned := 0
	err := fs.WalkDir(Files, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := fs.ReadFile(Files, name)
		if err != nil {
			return err
		}
		scanned++
		thirdParty := strings.HasPrefix(name, "third_party/")
		for i, line := range strings.Split(string(body), "\n") {
			if thirdParty && commentLine(line) {
				continue
			}
			if m := outside.FindString(line); m != "" {
				t.Errorf("%s:%d reaches outside the service (%q): %s", name, i+1, m, strings.TrimSpace(line))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if scanned < 4 {
		t.Fatalf("scanned %d files, want the page, its scripts and its stylesheet", scanned)
	}
}

// commentLine says whether a line of JavaScript or CSS is a comment only.
func commentLine(line string) bool {
	line = strings.TrimSpace(line)
	return strings.HasPrefix(line, "//") || strings.HasPrefix(line, "/*") || strings.HasPrefix(line, "*")
}

// TestTheScannerCatchesOutsideURLs keeps the scanner above honest.
func TestTheScannerCatchesOutsideURLs(t *testing.T) {
	for _, line := range []string{
		`<script src="https://cdn.example/x.js">`, `<link href="//cdn.example/x.css">`,
		`import x from "//cdn.example/x.js";`, `fetch("http://example.com")`, `background: url(//x.example/a.png)`,
	} {
		if !outside.MatchString(line) {
			t.Errorf("the scanner misses %s", line)
		}
	}
	for _, line := range []string{`<script type="module" src="app.js">`, `// a comment`, `fetch(path, { method })`} {
		if outside.MatchString(line) {
			t.Errorf("the scanner flags %s", line)
		}
	}
}

// TestThePageNeedsNoInlineCode: the CSP refuses inline scripts, inline
// styles and handler attributes, so none may be in the page.
func TestThePageNeedsNoInlineCode(t *testing.T) {
	page, err := fs.ReadFile(Files, "index.html")
	if err != nil {
		t.Fatal(err)
	}
	inline := regexp.MustCompile(`(?i)<script(\s[^>]*)?>\s*[^<\s]|<style|\sstyle\s*=|\son[a-z]+\s*=|javascript:`)
	if m := inline.FindString(string(page)); m != "" {
		t.Errorf("index.html has inline code the CSP refuses: %q", m)
	}
}

// imports finds a module's static imports of the dashboard's own files.
var imports = regexp.MustCompile(`(?m)^import .* from "\./([^"]+)";`)

// scripts reads every embedded .js file by name.
func scripts(t *testing.T) map[string]string {
	t.Helper()
	names, err := fs.Glob(Files, "*.js")
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]string, len(names))
	for _, name := range names {
		body, err := fs.ReadFile(Files, name)
		if err != nil {
			t.Fatal(err)
		}
		out[name] = string(body)
	}
	return out
}

// TestEveryModuleTheScriptsImportIsEmbedded: an import of a missing file
// would leave the page blank.
func TestEveryModuleTheScriptsImportIsEmbedded(t *testing.T) {
	found := 0
	for name, body := range scripts(t) {
		for _, m := range imports.FindAllStringSubmatch(body, -1) {
			found++
			if _, err := fs.Stat(Files, m[1]); err != nil {
				t.Errorf("%s imports %s, which is not embedded", name, m[1])
			}
		}
	}
	if found < 5 {
		t.Errorf("found %d imports: the pattern no longer matches the modules", found)
	}
}

// TestEveryModuleIsReachedFromTheEntryPoint: each embedded module is
// imported, directly or not, by app.js (the one script index.html loads),
// so none is dead weight and each view is wired in.
func TestEveryModuleIsReachedFromTheEntryPoint(t *testing.T) {
	all := scripts(t)
	reached := map[string]bool{}
	var visit func(name string)
	visit = func(name string) {
		if reached[name] {
			return
		}
		reached[name] = true
		for _, m := range imports.FindAllStringSubmatch(all[name], -1) {
			visit(m[1])
		}
	}
	visit("app.js")
	for _, view := range []string{"queues.js", "queue.js", "job.js", "deadletters.js", "flow.js", "schedules.js", "push.js", "routes.js", "role.js", "live.js", "stats.js", "charts.js", "activity.js", "batch.js"} {
		if _, ok := all[view]; !ok {
			t.Errorf("%s is not embedded", view)
		}
	}
	for name := range all {
		if !reached[name] {
			t.Errorf("%s is embedded but app.js never imports it", name)
		}
	}
}

// TestTheScriptsNeverWriteMarkup: queue names, ids, payloads and errors
// come from whoever enqueued the job, so the scripts put text in with
// textContent and text nodes, never through an HTML parser or eval.
func TestTheScriptsNeverWriteMarkup(t *testing.T) {
	markup := regexp.MustCompile(`innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function\(|setTimeout\(\s*["'` + "`" + `]`)
	for name, body := range scripts(t) {
		for i, line := range strings.Split(body, "\n") {
			if m := markup.FindString(line); m != "" {
				t.Errorf("%s:%d uses %s: %s", name, i+1, m, strings.TrimSpace(line))
			}
		}
	}
}

// TestTheScriptsEscapeNamesInPaths: a queue name or job id that goes into
// an API path or a route passes through encodeURIComponent (the service
// decodes path parameters), so a "/" or "?" in a name cannot change which
// route is called.
func TestTheScriptsEscapeNamesInPaths(t *testing.T) {
	raw := regexp.MustCompile("`[^`]*/(queues|jobs)/\\$\\{(name|queue|id|this\\.queue|this\\.id|job\\.id)\\}")
	for name, body := range scripts(t) {
		for i, line := range strings.Split(body, "\n") {
			if m := raw.FindString(line); m != "" {
				t.Errorf("%s:%d puts a name in a path unescaped: %s", name, i+1, strings.TrimSpace(line))
			}
		}
	}
	if !raw.MatchString("call(\"GET\", `/queues/${name}/jobs`)") {
		t.Error("the pattern misses an unescaped name")
	}
}

// TestEveryModuleParses checks each script's syntax as an ES module with
// node (which CI installs for the examples): a syntax error in one module
// leaves the whole page blank. Plain "node --check file.js" parses a .js
// file as CommonJS and misses errors, hence --input-type=module on stdin.
func TestEveryModuleParses(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is not installed (apt-get install -y nodejs): it checks that every module parses")
	}
	for name, body := range scripts(t) {
		cmd := exec.Command(node, "--check", "--input-type=module")
		cmd.Stdin = strings.NewReader(body)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			t.Errorf("%s does not parse as a module: %v\n%s", name, err, stderr.String())
		}
	}
	cmd := exec.Command(node, "--check", "--input-type=module")
	cmd.Stdin = strings.NewReader("const a = 1;\nconst a = 2;\n")
	if cmd.Run() == nil {
		t.Error("node --check accepts a module with a duplicate declaration: the check above proves nothing")
	}
}

// roleScript loads role.js in node with a fetch that answers /whoami with
// the JSON in the WHOAMI variable (or 401 when it is empty), and prints
// what may() says of each action and what describe() shows.
const roleScript = `
globalThis.sessionStorage = { getItem: () => "a-key" };
globalThis.fetch = async (path) => {
  const body = process.env.WHOAMI;
  if (path !== "/whoami" || body === "") {
    return { status: 401, ok: false, json: async () => ({}) };
  }
  return { status: 200, ok: true, json: async () => JSON.parse(body) };
};
const role = await import("./role.js");
await role.loadRole();
const may = {};
for (const action of ["pause", "resume", "drain", "obliterate", "retry", "promote", "remove", "run", "cancel", "fly"]) {
  may[action] = role.may(action);
}
console.log(JSON.stringify({ may, describe: role.describe(), known: role.known() }));
`

// TestTheRoleDecidesWhichActionsAreShown runs role.js in node against
// /whoami answers for each role: a reader may do nothing, a worker only
// cancel, an admin (and anyone on an open API) everything, running a
// schedule now included; a refused key or an unknown action allows
// nothing.
func TestTheRoleDecidesWhichActionsAreShown(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is not installed (apt-get install -y nodejs): it runs role.js")
	}
	dir := t.TempDir()
	files := map[string]string{"package.json": `{"type": "module"}`, "check.js": roleScript}
	for _, name := range []string{"api.js", "role.js"} {
		body, err := fs.ReadFile(Files, name)
		if err != nil {
			t.Fatal(err)
		}
		files[name] = string(body)
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	admin := []string{"pause", "resume", "drain", "obliterate", "retry", "promote", "remove", "run", "cancel"}
	cases := []struct {
		whoami   string
		allowed  []string
		describe string
	}{
		{`{"role": "reader", "key": "dashboard", "open": false}`, nil, "Signed in with a reader key (dashboard)"},
		{`{"role": "worker", "key": "worker-2", "open": false}`, []string{"cancel"}, "Signed in with a worker key (worker-2)"},
		{`{"role": "admin", "key": "ci-deploy", "open": false}`, admin, "Signed in with an admin key (ci-deploy)"},
		{`{"role": "admin", "key": "anonymous", "open": true}`, admin, "Open API: no key needed"},
		{``, nil, ""},
	}
	for _, c := range cases {
		cmd := exec.Command(node, "check.js")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "WHOAMI="+c.whoami)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("node check.js with %s: %v\n%s", c.whoami, err, stderr.String())
		}
		var got struct {
			May      map[string]bool
			Describe string
			Known    bool
		}
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("node printed %q: %v", out, err)
		}
		want := map[string]bool{"fly": false}
		for _, action := range admin {
			want[action] = false
		}
		for _, action := range c.allowed {
			want[action] = true
		}
		for action, ok := range want {
			if got.May[action] != ok {
				t.Errorf("whoami %s: may(%q) = %v, want %v", c.whoami, action, got.May[action], ok)
			}
		}
		if got.Describe != c.describe || got.Known != (c.whoami != "") {
			t.Errorf("whoami %s: describe() %q known %v, want %q %v", c.whoami, got.Describe, got.Known, c.describe, c.whoami != "")
		}
	}
}

// TestModulesUnderNode runs modules.test.mjs, the unit tests of the
// modules' logic (the event-stream reader, throttle, routes, grouping,
// countdown, relative times, the schedules' cadence), with node's built-in
// test runner.
func TestModulesUnderNode(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is not installed (apt-get install -y nodejs): it runs modules.test.mjs")
	}
	out, err := exec.Command(node, "--test", "--test-reporter=spec", "modules.test.mjs").CombinedOutput()
	if err != nil {
		t.Fatalf("node --test modules.test.mjs: %v\n%s", err, out)
	}
	if !regexp.MustCompile(`(?m)pass [1-9][0-9]*$`).Match(out) {
		t.Errorf("node --test passed no test of modules.test.mjs:\n%s", out)
	}
}
