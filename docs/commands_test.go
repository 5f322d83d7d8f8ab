package docs

import (
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

// TestCommandsNameWhatExists reads every command of every sh block in
// README.md and docs/*.md and fails on one that names what does not exist:
// a go test package, or a -run, -bench or -fuzz pattern that matches no
// test of it (for go test and script/test); a go run target; a script; an EMQ_ setting the service does
// not read or a BENCH_ one no bench script reads; a curl request that is
// no route of api/openapi.yaml; a compose profile or service that
// docker-compose.yml lacks; or a program this test does not know.
func TestCommandsNameWhatExists(t *testing.T) {
	c := newCommandChecker(t)
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"README.md"}
	for _, f := range files {
		names = append(names, strings.TrimPrefix(f, root+string(filepath.Separator)))
	}
	n := 0
	for _, file := range names {
		for _, b := range shBlocks(t, file) {
			for i, line := range joinContinued(strings.Split(b.text, "\n")) {
				where := file + ":" + strconv.Itoa(b.line+i)
				for _, problem := range c.check(line) {
					t.Errorf("%s: %s\n\t%s", where, problem, line)
				}
				n++
			}
		}
	}
	if n < 50 {
		t.Fatalf("read %d command lines: the docs' sh blocks were not found", n)
	}
}

// tools are the programs the docs may use without a check of their own.
var tools = map[string]bool{
	"apt-get": true, "npm": true, "redis-cli": true, "openssl": true, "jq": true, "echo": true,
	"sleep": true, "printf": true, "date": true, "sed": true, "kill": true, "export": true,
	"continue": true, "[": true, "while": true, "do": true, "done": true, "if": true, "then": true,
	"elif": true, "else": true, "fi": true, "true": true, "valgrind": true, "callgrind_annotate": true,
	"tar": true, "make": true,
}

type commandChecker struct {
	t        *testing.T
	settings string // cmd/api's configuration source
	bench    string // every bench script
	compose  string
	router   routers.Router
	tests    map[string][]string // package dir -> its Test, Benchmark, Fuzz and Example names
}

func newCommandChecker(t *testing.T) *commandChecker {
	t.Helper()
	c := &commandChecker{t: t, tests: map[string][]string{}}
	c.settings = readFile(t, "cmd/api/config.go")
	scripts, _ := filepath.Glob(filepath.Join(root, "bench", "*"))
	for _, s := range scripts {
		if st, err := os.Stat(s); err == nil && st.Mode().IsRegular() {
			c.bench += readFile(t, strings.TrimPrefix(s, root+"/"))
		}
	}
	c.compose = readFile(t, "docker-compose.yml")
	doc, err := openapi3.NewLoader().LoadFromFile(filepath.Join(root, "api", "openapi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	doc.Servers = nil
	if c.router, err = gorillamux.NewRouter(doc); err != nil {
		t.Fatal(err)
	}
	testFunc := regexp.MustCompile(`(?m)^func ((?:Test|Benchmark|Fuzz|Example)\w*)\(`)
	_ = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if strings.HasSuffix(path, "_test.go") {
			dir := filepath.Dir(path)
			for _, m := range testFunc.FindAllStringSubmatch(readFile(t, strings.TrimPrefix(path, root+"/")), -1) {
				c.tests[dir] = append(c.tests[dir], m[1])
			}
		}
		return nil
	})
	return c
}

// check answers what is wrong with one command line (nothing: nil).
func (c *commandChecker) check(line string) []string {
	line = stripComment(line)
	var problems []string
	// $(...) runs a command of its own: check it, then read it as a word.
	for {
		start := strings.Index(line, "$(")
		if start < 0 {
			break
		}
		end := matchingParen(line, start+1)
		if end < 0 {
			return []string{"an unclosed $("}
		}
		problems = append(problems, c.check(line[start+2:end])...)
		line = line[:start] + "X" + line[end+1:]
	}
	dir := "."
	for _, cmd := range splitCommands(line) {
		words := shellWords(cmd)
		for len(words) > 0 && isAssignment(words[0]) {
			problems = append(problems, c.checkSetting(strings.SplitN(words[0], "=", 2)[0])...)
			words = words[1:]
		}
		if len(words) == 0 {
			continue
		}
		if words[0] == "cd" && len(words) > 1 {
			dir = filepath.Join(dir, words[1])
			problems = append(problems, c.checkPath(dir, false)...)
			continue
		}
		problems = append(problems, c.checkCommand(dir, words)...)
	}
	return problems
}

func (c *commandChecker) checkCommand(dir string, words []string) []string {
	switch name := words[0]; {
	case name == "go":
		return c.checkGo(words)
	case name == "bash" || name == "sh" || name == "python3" || name == "node":
		for _, w := range words[1:] {
			if !strings.HasPrefix(w, "-") && strings.Contains(w, "/") {
				return c.checkPath(filepath.Join(dir, w), false)
			}
		}
		return nil
	case name == "pip" || strings.HasSuffix(name, "/bin/pip"): // a venv's pip, made by the same block
		for _, w := range words[1:] {
			if !strings.HasPrefix(w, "-") && strings.Contains(w, "/") {
				return c.checkPath(filepath.Join(dir, w), false)
			}
		}
		return nil
	case name == "script/test" && dir == ".":
		// Its arguments are go test's, in place of ./...
		return append(c.checkPath(name, true), c.checkGo(append([]string{"go", "test"}, words[1:]...))...)
	case strings.Contains(name, "/"):
		return c.checkPath(filepath.Join(dir, name), true)
	case name == "curl":
		return c.checkCurl(words)
	case name == "docker":
		return c.checkCompose(words)
	case tools[name]:
		return nil
	default:
		return []string{"a program this test does not know: " + name + " (add a check, or it to tools)"}
	}
}

func (c *commandChecker) checkSetting(name string) []string {
	switch {
	case strings.HasPrefix(name, "EMQ_") && !strings.Contains(c.settings, `"`+name+`"`):
		return []string{name + " is not a setting cmd/api/config.go reads"}
	case strings.HasPrefix(name, "BENCH_") && !strings.Contains(c.bench, name):
		return []string{name + " is read by no bench script"}
	}
	return nil
}

func (c *commandChecker) checkPath(path string, executable bool) []string {
	st, err := os.Stat(filepath.Join(root, path))
	switch {
	case err != nil:
		return []string{path + " does not exist"}
	case executable && st.Mode()&0o111 == 0:
		return []string{path + " is not executable"}
	}
	return nil
}

// checkGo checks go run's target and go test's packages and patterns.
func (c *commandChecker) checkGo(words []string) []string {
	if len(words) < 2 {
		return []string{"go without a command"}
	}
	var problems []string
	var pkgs []string
	patterns := map[string]string{} // flag -> pattern
	for i := 2; i < len(words); i++ {
		w := words[i]
		switch {
		case strings.HasPrefix(w, "./"):
			pkgs = append(pkgs, w)
		case w == "-run" || w == "-bench" || w == "-fuzz":
			if i+1 < len(words) {
				patterns[w] = words[i+1]
				i++
			}
		}
	}
	for _, p := range pkgs {
		if p != "./..." {
			problems = append(problems, c.checkPath(strings.TrimSuffix(p, "/..."), false)...)
		}
	}
	if words[1] != "test" {
		return problems
	}
	kinds := map[string][]string{"-run": {"Test", "Fuzz", "Example"}, "-bench": {"Benchmark"}, "-fuzz": {"Fuzz"}}
	for flag, pattern := range patterns {
		if pattern == "^$" {
			continue
		}
		first := strings.SplitN(pattern, "/", 2)[0]
		re, err := regexp.Compile(first)
		if err != nil {
			problems = append(problems, flag+" "+pattern+": "+err.Error())
			continue
		}
		if !c.anyTest(pkgs, kinds[flag], re) {
			problems = append(problems, flag+" "+pattern+" matches no "+strings.Join(kinds[flag], ", ")+" function of "+strings.Join(pkgs, " "))
		}
	}
	return problems
}

func (c *commandChecker) anyTest(pkgs, kinds []string, re *regexp.Regexp) bool {
	for dir, names := range c.tests {
		in := false
		for _, p := range pkgs {
			base := filepath.Join(root, strings.TrimSuffix(p, "/..."))
			in = in || dir == base || (strings.HasSuffix(p, "/...") && strings.HasPrefix(dir, base))
		}
		if !in {
			continue
		}
		for _, name := range names {
			for _, k := range kinds {
				if strings.HasPrefix(name, k) && re.MatchString(name) {
					return true
				}
			}
		}
	}
	return false
}

// checkCurl checks that a curl request is a route of the spec.
func (c *commandChecker) checkCurl(words []string) []string {
	method, target := "GET", ""
	for i := 1; i < len(words); i++ {
		w := words[i]
		switch {
		case w == "--json" || w == "-d" || w == "--data":
			if method == "GET" {
				method = "POST"
			}
			i++
		case w == "-X" && i+1 < len(words):
			method = words[i+1]
			i++
		case w == "-H":
			i++
		case strings.HasPrefix(w, "http") || strings.HasPrefix(w, "$Q"):
			target = w
		}
	}
	if target == "" {
		return []string{"a curl without a URL the test can read"}
	}
	path := strings.NewReplacer("$Q", "/queues/emails", "$id", "some-id").Replace(target)
	if i := strings.Index(path, "://"); i >= 0 {
		path = path[i+3:]
		path = path[strings.Index(path, "/"):]
	}
	path = regexp.MustCompile(`\$\w+`).ReplaceAllString(path, "x")
	req, err := http.NewRequest(method, "http://127.0.0.1:8080"+path, nil)
	if err != nil {
		return []string{err.Error()}
	}
	if _, _, err := c.router.FindRoute(req); err != nil {
		return []string{method + " " + path + " is no route of api/openapi.yaml"}
	}
	return nil
}

// checkCompose checks docker compose's profile and service names.
func (c *commandChecker) checkCompose(words []string) []string {
	if len(words) < 2 || words[1] != "compose" {
		return []string{"docker without compose: nothing here runs it"}
	}
	var problems []string
	for i := 2; i < len(words); i++ {
		w := words[i]
		switch {
		case w == "--profile" && i+1 < len(words):
			if !strings.Contains(c.compose, words[i+1]) {
				problems = append(problems, "no compose profile "+words[i+1])
			}
			i++
		case strings.HasPrefix(w, "-") || w == "up" || w == "down" || w == "logs" || w == "ps":
		default:
			if !strings.Contains(c.compose, "\n  "+w+":") {
				problems = append(problems, "no compose service "+w)
			}
		}
	}
	return problems
}

// Reading shell lines: enough of sh's quoting for the docs' commands.

// joinContinued joins lines that end in a backslash with the next.
func joinContinued(lines []string) []string {
	var out []string
	cur := ""
	for _, l := range lines {
		if strings.HasSuffix(l, "\\") {
			cur += strings.TrimSuffix(l, "\\") + " "
			continue
		}
		out = append(out, cur+l)
		cur = ""
	}
	return out
}

// stripComment drops a # comment outside quotes (at the start of a word).
func stripComment(line string) string {
	var quote rune
	for i, r := range line {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
		case r == '#' && (i == 0 || line[i-1] == ' ' || line[i-1] == '\t'):
			return line[:i]
		}
	}
	return line
}

// matchingParen is the index of the ')' that closes the '(' at open.
func matchingParen(s string, open int) int {
	depth, quote := 0, rune(0)
	for i, r := range s[open:] {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
		case r == '(':
			depth++
		case r == ')':
			depth--
			if depth == 0 {
				return open + i
			}
		}
	}
	return -1
}

// splitCommands splits a line at ;, &&, || and | outside quotes.
func splitCommands(line string) []string {
	var out []string
	var quote rune
	start := 0
	for i := 0; i < len(line); i++ {
		r := rune(line[i])
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
		case r == ';' || r == '|' || (r == '&' && i+1 < len(line) && line[i+1] == '&'):
			out = append(out, line[start:i])
			if i+1 < len(line) && (line[i+1] == '|' || line[i+1] == '&') {
				i++
			}
			start = i + 1
		}
	}
	return append(out, line[start:])
}

// shellWords splits a command into words, quotes removed.
func shellWords(cmd string) []string {
	var words []string
	var cur strings.Builder
	var quote rune
	inWord := false
	for _, r := range cmd {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

var assignment = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)

func isAssignment(w string) bool { return assignment.MatchString(w) }

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestLinksResolve fails on a relative link in README.md or docs/*.md
// whose file does not exist, or whose #anchor is no heading of it.
func TestLinksResolve(t *testing.T) {
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	files, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	files = append(files, filepath.Join(root, "README.md"))
	n := 0
	for _, file := range files {
		text := readFile(t, strings.TrimPrefix(file, root+"/"))
		for _, m := range link.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			n++
			path, anchor, _ := strings.Cut(target, "#")
			dest := file
			if path != "" {
				dest = filepath.Join(filepath.Dir(file), path)
			}
			if _, err := os.Stat(dest); err != nil {
				t.Errorf("%s: %s: no such file", file, target)
				continue
			}
			if anchor != "" && !anchors(t, dest)[anchor] {
				t.Errorf("%s: %s: no heading #%s in %s", file, target, anchor, dest)
			}
		}
	}
	if n < 20 {
		t.Fatalf("checked %d links: the docs' links were not found", n)
	}
}

// anchors are the #anchors of a markdown file's headings, as GitHub makes
// them: lower case, punctuation dropped, spaces as dashes.
func anchors(t *testing.T, file string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	punct := regexp.MustCompile(`[^\p{L}\p{N} _-]`)
	out := map[string]bool{}
	for _, m := range regexp.MustCompile(`<a id="([^"]+)"></a>`).FindAllStringSubmatch(string(b), -1) {
		out[m[1]] = true // an anchor of its own
	}
	inFence := false
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "```") {
			inFence = !inFence
		}
		if m := headingLine.FindStringSubmatch(line); m != nil && !inFence {
			out[strings.ReplaceAll(punct.ReplaceAllString(strings.ToLower(m[1]), ""), " ", "-")] = true
		}
	}
	return out
}
