package main

// The nginx side of the compose cluster profile: reading deploy/nginx.conf,
// and running nginx with it in front of the replicas.

import (
	"fmt"
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

// nginxDirective is one simple directive of an nginx config, with the
// blocks it is in.
type nginxDirective struct {
	context []string // e.g. [server location]
	name    string
	args    []string
}

var nginxTokenRE = regexp.MustCompile(`"[^"]*"|[{};]|[^\s{};"]+`)

// parseNginx reads an nginx config's simple directives; enough of the
// grammar for deploy/nginx.conf (comments, blocks, double quotes).
func parseNginx(t *testing.T, text string) []nginxDirective {
	t.Helper()
	var b strings.Builder
	for _, line := range strings.Split(text, "\n") {
		line, _, _ = strings.Cut(line, "#")
		b.WriteString(line + "\n")
	}
	var out []nginxDirective
	var context, words []string
	for _, tok := range nginxTokenRE.FindAllString(b.String(), -1) {
		switch tok {
		case "{":
			if len(words) == 0 {
				t.Fatal("nginx config: a block without a name")
			}
			context = append(context, words[0])
			words = nil
		case "}":
			if len(context) == 0 || len(words) != 0 {
				t.Fatal("nginx config: unbalanced }")
			}
			context = context[:len(context)-1]
		case ";":
			if len(words) == 0 {
				t.Fatal("nginx config: an empty directive")
			}
			out = append(out, nginxDirective{slices.Clone(context), words[0], words[1:]})
			words = nil
		default:
			words = append(words, tok)
		}
	}
	if len(context) != 0 || len(words) != 0 {
		t.Fatal("nginx config: an unclosed block or directive")
	}
	return out
}

// nginxValues returns the arguments of every directive name inside context.
func nginxValues(conf []nginxDirective, name string, context ...string) [][]string {
	var out [][]string
	for _, d := range conf {
		if d.name == name && slices.Equal(d.context, context) {
			out = append(out, d.args)
		}
	}
	return out
}

// nginxOne returns the single argument of the one directive name inside
// context.
func nginxOne(t *testing.T, conf []nginxDirective, name string, context ...string) string {
	t.Helper()
	v := nginxValues(conf, name, context...)
	if len(v) != 1 || len(v[0]) != 1 {
		t.Fatalf("nginx config: %s in %v is %v, want it once with one value", name, context, v)
	}
	return v[0][0]
}

// nginxSeconds reads an nginx time ("75s", "2m", "75").
func nginxSeconds(t *testing.T, v string) time.Duration {
	t.Helper()
	if n, err := strconv.Atoi(v); err == nil {
		return time.Duration(n) * time.Second
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("nginx config: time %q: %v", v, err)
	}
	return d
}

// nginxBytes reads an nginx size ("17m", "512k", "1024").
func nginxBytes(t *testing.T, v string) int64 {
	t.Helper()
	unit := int64(1)
	switch strings.ToLower(v[len(v)-1:]) {
	case "k":
		unit, v = 1<<10, v[:len(v)-1]
	case "m":
		unit, v = 1<<20, v[:len(v)-1]
	case "g":
		unit, v = 1<<30, v[:len(v)-1]
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		t.Fatalf("nginx config: size %q: %v", v, err)
	}
	return n * unit
}

// runNginx runs nginx as a process with the load balancer's config, its
// listen port and upstream entries pointed at loopback, and returns its
// base URL; it is stopped when the test ends.
func runNginx(t *testing.T, bin, conf, listen string, upstream map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(loopbackPort(t)))
	rewrite := func(from, to string) {
		if strings.Count(conf, from) != 1 {
			t.Fatalf("deploy/nginx.conf does not hold %q once", from)
		}
		conf = strings.Replace(conf, from, to, 1)
	}
	rewrite("listen "+listen+";", "listen "+addr+";")
	for from, to := range upstream {
		rewrite("server "+from+";", "server "+to+";")
	}
	if err := os.WriteFile(filepath.Join(dir, "default.conf"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	// nginx:alpine's own nginx.conf, reduced to what a process here needs:
	// its files in dir, and one process.
	main := fmt.Sprintf(`pid %[1]s/nginx.pid;
error_log %[1]s/error.log info;
daemon off;
master_process off;
events {}
http {
    access_log off;
    client_body_temp_path %[1]s/body;
    proxy_temp_path %[1]s/proxy;
    fastcgi_temp_path %[1]s/fastcgi;
    uwsgi_temp_path %[1]s/uwsgi;
    scgi_temp_path %[1]s/scgi;
    include %[1]s/default.conf;
}
`, dir)
	if err := os.WriteFile(filepath.Join(dir, "nginx.conf"), []byte(main), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-e", filepath.Join(dir, "error.log"), "-p", dir, "-c", filepath.Join(dir, "nginx.conf"))
	cmd.SysProcAttr = dieWithTest()
	if out, err := exec.Command(bin, "-t", "-e", filepath.Join(dir, "error.log"), "-p", dir, "-c", filepath.Join(dir, "nginx.conf")).CombinedOutput(); err != nil {
		t.Fatalf("nginx -t refuses deploy/nginx.conf: %v\n%s", err, out)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	eventually(t, 10*time.Second, "nginx listening", func() bool {
		select {
		case <-done:
			log, _ := os.ReadFile(filepath.Join(dir, "error.log"))
			t.Fatalf("nginx exited; error.log:\n%s", log)
		default:
		}
		conn, err := net.Dial("tcp", addr)
		if err == nil {
			conn.Close()
		}
		return err == nil
	})
	return "http://" + addr
}
