package http

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/echo-mq/echo_mq/internal/auth"
	"github.com/echo-mq/echo_mq/internal/redistest"
)

// signedRequest is a POST of body to target, signed with the worker key at
// ts (what signature says when it is not "").
func signedRequest(target, body, ts, signature string) *http.Request {
	if signature == "" {
		mac := auth.Sign([]byte(testKeys[auth.Worker]), ts, auth.Request{Method: "POST", Target: target, Body: []byte(body)})
		signature = "sha256=" + hex.EncodeToString(mac)
	}
	req := httptest.NewRequest("POST", target, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-EMQ-Timestamp", ts)
	req.Header.Set("X-EMQ-Signature", signature)
	return req
}

// countingBody counts the bytes a handler reads of a body.
type countingBody struct {
	r    io.Reader
	read atomic.Int64
}

func (c *countingBody) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.read.Add(int64(n))
	return n, err
}

func (c *countingBody) Close() error { return nil }

// A signed request whose timestamp or signature cannot hold is refused
// before a byte of its body is read: an unauthenticated caller makes the
// service hold nothing.
func TestASignedRequestIsRefusedBeforeItsBodyIsRead(t *testing.T) {
	t.Parallel()
	h := keyedWith(t, "emqa-"+redistest.Queue(t), nil)
	now := strconv.FormatInt(time.Now().Unix(), 10)
	stale := strconv.FormatInt(time.Now().Add(-time.Hour).Unix(), 10)
	body := `{"payload":"` + strings.Repeat("x", 1<<20) + `"}`
	for name, headers := range map[string][2]string{
		"an hour old":         {stale, ""},
		"no timestamp":        {"", ""},
		"not hex":             {now, "sha256=" + strings.Repeat("z", 64)},
		"too short":           {now, "sha256=00"},
		"another algorithm":   {now, "sha1=" + strings.Repeat("0", 40)},
		"no algorithm at all": {now, strings.Repeat("0", 64)},
	} {
		req := signedRequest("/queues/hooks/jobs", body, headers[0], headers[1])
		counted := &countingBody{r: strings.NewReader(body)}
		req.Body = counted
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusUnauthorized || counted.read.Load() != 0 {
			t.Errorf("%s: %d after reading %d bytes of the body, want 401 and none read", name, rec.Code, counted.read.Load())
		}
	}
}

// Signed bodies being checked share one budget (EMQ_MAX_BODY_BYTES and
// firstSlabs slabs), taken as their bytes come: a connection that declares a large
// body and sends nothing holds none of it; while bodies that did come hold
// it all, the next request waits, then is answered 503 EMQBUSY with
// Retry-After, its body unread; once they are done the budget is free.
func TestSignedBodiesShareABoundedBudget(t *testing.T) {
	t.Parallel()
	const limit = 2 << 20
	h := keyedWith(t, "emqa-"+redistest.Queue(t), func(c *Config) { c.MaxBodyBytes, c.MaxValueBytes = limit, 1<<20 })
	now := strconv.FormatInt(time.Now().Unix(), 10)
	badly := "sha256=" + strings.Repeat("0", 64)

	// slow starts a badly signed request whose body comes through a pipe,
	// of the declared length (-1: none), and answers its status when done.
	slow := func(length int64) (*io.PipeWriter, chan int) {
		pr, pw := io.Pipe()
		req := signedRequest("/queues/hooks/jobs", "", now, badly)
		req.Body, req.ContentLength = pr, length
		done := make(chan int, 1)
		go func() {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			done <- rec.Code
		}()
		return pw, done
	}
	write := func(pw *io.PipeWriter, n int) {
		if _, err := pw.Write(make([]byte, n)); err != nil { // returns once the service read it all
			t.Fatal(err)
		}
	}
	enqueue := func(id string) (*httptest.ResponseRecorder, int64) {
		body := `{"id":"` + id + `-` + redistest.Queue(t) + `","payload":1}` // a signature is accepted once
		counted := &countingBody{r: strings.NewReader(body)}
		req := signedRequest("/queues/hooks/jobs", body, now, "")
		req.Body = counted
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec, counted.read.Load()
	}

	silent, silentDone := slow(limit) // declares the limit, sends nothing
	if rec, _ := enqueue("budget-1"); rec.Code != http.StatusCreated {
		t.Fatalf("a signed request beside one that declared the limit and sent nothing: %d %s, want 201", rec.Code, rec.Body)
	}
	silent.Close()
	if code := <-silentDone; code != http.StatusBadRequest {
		t.Fatalf("a body that ended before its declared length: %d, want 400", code)
	}

	first, firstDone := slow(limit) // all but its last byte: the limit's slabs
	write(first, limit-1)
	var others []*io.PipeWriter // chunked, one byte each: the other slabs
	var othersDone []chan int
	for range firstSlabs {
		pw, done := slow(-1)
		write(pw, 1)
		others, othersDone = append(others, pw), append(othersDone, done)
	}
	rec, read := enqueue("budget-2")
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "EMQBUSY") ||
		rec.Header().Get("Retry-After") == "" || read != 0 {
		t.Fatalf("a signed request while the budget is held: %d %s (Retry-After %q), %d bytes read; want 503 EMQBUSY with Retry-After, none read",
			rec.Code, rec.Body, rec.Header().Get("Retry-After"), read)
	}
	write(first, 1)
	first.Close()
	if code := <-firstDone; code != http.StatusUnauthorized {
		t.Fatalf("the badly signed body of the limit: %d, want 401", code)
	}
	for i, pw := range others {
		pw.Close()
		if code := <-othersDone[i]; code != http.StatusUnauthorized {
			t.Fatalf("a badly signed chunked body: %d, want 401", code)
		}
	}
	if rec, _ := enqueue("budget-3"); rec.Code != http.StatusCreated {
		t.Fatalf("a signed request once the budget is free: %d %s, want it taken", rec.Code, rec.Body)
	}
}

// A signed body of no declared length (chunked) is read in parts within
// the budget, and still checked whole.
func TestASignedChunkedBodyIsChecked(t *testing.T) {
	t.Parallel()
	h := keyedWith(t, "emqa-"+redistest.Queue(t), nil)
	now := strconv.FormatInt(time.Now().Unix(), 10)
	id := "chunked-" + redistest.Queue(t)
	body := `{"id":"` + id + `","payload":"` + strings.Repeat("y", 200<<10) + `"}`
	req := signedRequest("/queues/hooks/jobs", body, now, "")
	req.Body, req.ContentLength = io.NopCloser(io.MultiReader(strings.NewReader(body))), -1
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusCreated || !strings.Contains(rec.Body.String(), `"`+id+`"`) {
		t.Fatalf("a chunked signed enqueue: %d %.200s, want 201", rec.Code, rec.Body)
	}
	tampered := signedRequest("/queues/hooks/jobs", body, now, "")
	tampered.Body, tampered.ContentLength = io.NopCloser(strings.NewReader(body[:len(body)-2]+`!"}`)), -1
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, tampered)
	if rec.Code != http.StatusUnauthorized {
		t.Fatalf("a chunked body changed at its end: %d, want 401", rec.Code)
	}
}

// A signed request accepted by one deployment is a replay to every other
// on the same Redis, whatever its prefix.
func TestASignatureIsAcceptedOnceAcrossPrefixes(t *testing.T) {
	t.Parallel()
	one := keyedWith(t, "emqa-"+redistest.Queue(t)+"-one", nil)
	two := keyedWith(t, "emqa-"+redistest.Queue(t)+"-two", nil)
	now := strconv.FormatInt(time.Now().Unix(), 10)
	body := `{"id":"` + redistest.Queue(t) + `","payload":1}`
	rec := httptest.NewRecorder()
	one.ServeHTTP(rec, signedRequest("/queues/hooks/jobs", body, now, ""))
	if rec.Code != http.StatusCreated {
		t.Fatalf("the first deployment: %d %s, want 201", rec.Code, rec.Body)
	}
	rec = httptest.NewRecorder()
	two.ServeHTTP(rec, signedRequest("/queues/hooks/jobs", body, now, ""))
	if rec.Code != http.StatusUnauthorized {
		t.Fatalf("the same signed request at a deployment with another prefix: %d %s, want 401 (a replay)", rec.Code, rec.Body)
	}
}

// A refused signed request says which check failed, as Stripe's and
// Standard Webhooks' verifiers do: a sender whose clock is off reads that,
// not the same words as one whose key is wrong. The code and status are
// the same for all: 401 EMQUNAUTHORIZED.
func TestASignedRequestSaysWhyItIsRefused(t *testing.T) {
	t.Parallel()
	h := keyedWith(t, "emqa-"+redistest.Queue(t), nil)
	now := time.Now()
	ts := func(at time.Time) string { return strconv.FormatInt(at.Unix(), 10) }
	body := `{"id":"` + redistest.Queue(t) + `","payload":1}`
	wrongKey := "sha256=" + hex.EncodeToString(auth.Sign([]byte("not-a-key-of-this-service"), ts(now),
		auth.Request{Method: "POST", Target: "/queues/hooks/jobs", Body: []byte(body)}))
	accepted := signedRequest("/queues/hooks/jobs", body, ts(now), "")
	rec := httptest.NewRecorder()
	if h.ServeHTTP(rec, accepted); rec.Code != http.StatusCreated {
		t.Fatalf("a good signed request: %d %s", rec.Code, rec.Body)
	}
	const skew = "the timestamp is outside the tolerance of 300 s (it is "
	for _, c := range []struct {
		name string
		req  *http.Request
		want []string // what the detail says, a number between each two
	}{
		{"ten minutes old", signedRequest("/queues/hooks/jobs", body, ts(now.Add(-10*time.Minute)), ""),
			[]string{skew, " s behind the service's clock)"}},
		{"ten minutes ahead", signedRequest("/queues/hooks/jobs", body, ts(now.Add(10*time.Minute)), ""),
			[]string{skew, " s ahead of the service's clock)"}},
		{"no timestamp", signedRequest("/queues/hooks/jobs", body, "", ""), []string{"X-EMQ-Timestamp must be the time in Unix seconds"}},
		{"not sha256=", signedRequest("/queues/hooks/jobs", body, ts(now), "sha1=00"), []string{"X-EMQ-Signature must be sha256= and 64 hex digits"}},
		{"another key", signedRequest("/queues/hooks/jobs", body, ts(now), wrongKey), []string{"the signature does not match the request under any key"}},
		{"another body", signedRequest("/queues/hooks/jobs", `{"payload":2}`, ts(now), accepted.Header.Get("X-EMQ-Signature")),
			[]string{"the signature does not match the request under any key"}},
		{"a replay", signedRequest("/queues/hooks/jobs", body, ts(now), ""), []string{"the signature was accepted once already (a replay)"}},
	} {
		rec = httptest.NewRecorder()
		h.ServeHTTP(rec, c.req)
		var p Problem
		_ = json.Unmarshal(rec.Body.Bytes(), &p)
		parts := make([]string, len(c.want))
		for i, w := range c.want {
			parts[i] = regexp.QuoteMeta(w)
		}
		pattern := "^the request signature is not valid: " + strings.Join(parts, `\d+`) + "$"
		if rec.Code != http.StatusUnauthorized || p.Code != CodeUnauthorized || !regexp.MustCompile(pattern).MatchString(p.Detail) {
			t.Errorf("%s: %d %s, want 401 EMQUNAUTHORIZED saying %q", c.name, rec.Code, rec.Body, c.want)
		}
	}
}

// Swagger UI is served with the dashboard's strict headers, and its
// policy allows the one inline script its page has, by hash.
func TestDocsHaveStrictHeaders(t *testing.T) {
	t.Parallel()
	h := NewHandler(Config{})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/docs/index.html", nil))
	csp := rec.Header().Get("Content-Security-Policy")
	if rec.Code != http.StatusOK || rec.Header().Get("X-Frame-Options") != "DENY" ||
		rec.Header().Get("X-Content-Type-Options") != "nosniff" || !strings.Contains(csp, "frame-ancestors 'none'") {
		t.Fatalf("/docs/index.html: %d with headers %v, want 200 with a CSP, X-Frame-Options DENY and nosniff", rec.Code, rec.Header())
	}
	scripts := regexp.MustCompile(`(?s)<script>(.*?)</script>`).FindAllSubmatch(rec.Body.Bytes(), -1)
	if len(scripts) == 0 {
		t.Fatal("the page has no inline script: the test no longer checks the hash")
	}
	for _, m := range scripts {
		sum := sha256.Sum256(m[1])
		if want := "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"; !strings.Contains(csp, want) {
			t.Errorf("the CSP %q does not allow the page's inline script (%s)", csp, want)
		}
	}
	for _, directive := range strings.Split(csp, ";") {
		if strings.HasPrefix(strings.TrimSpace(directive), "script-src") && strings.Contains(directive, "unsafe") {
			t.Errorf("the CSP's %q lets any inline script run", directive)
		}
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/docs/swagger-ui.css", nil))
	if rec.Code != http.StatusOK || rec.Header().Get("X-Content-Type-Options") != "nosniff" {
		t.Fatalf("/docs/swagger-ui.css: %d with headers %v, want 200 with nosniff", rec.Code, rec.Header())
	}
}

// A client's X-Request-Id becomes the request's id in the logs only when
// it is short and printable; otherwise the service makes one.
func TestARequestIDIsKeptOnlyWhenShortAndPrintable(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	h := NewHandler(Config{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Ready: func(context.Context) error { return nil }})
	for id, kept := range map[string]bool{
		"req-42.abc_DEF:1":                  true,
		strings.Repeat("a", maxRequestID):   true,
		strings.Repeat("a", maxRequestID+1): false,
		"two words":                         false,
		"new\nline":                         false,
		"caf\u00e9":                         false,
		`quote"d`:                           true,
		"tab\tbed":                          false,
	} {
		logs.Reset()
		req := httptest.NewRequest("GET", "/nope", nil)
		req.Header.Set("X-Request-Id", id)
		h.ServeHTTP(httptest.NewRecorder(), req)
		logged := regexp.MustCompile(`request_id=("(?:[^"\\]|\\.)*"|\S+)`).FindStringSubmatch(logs.String())
		if logged == nil {
			t.Fatalf("no request_id in the log line %q", logs.String())
		}
		got := logged[1]
		if unq, err := strconv.Unquote(got); err == nil {
			got = unq
		}
		if (got == id) != kept || got == "" {
			t.Errorf("X-Request-Id %q logged as %q; kept: %v, want %v", id, got, got == id, kept)
		}
	}
}
