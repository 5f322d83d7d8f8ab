package push

import (
	"errors"
	"net/http"
	"net/url"
	"testing"
	"time"
)

func TestParseAllow(t *testing.T) {
	t.Parallel()
	a, err := ParseAllow(" Hooks.Example.com , 127.0.0.1:8443,[::1]:9000,, ")
	if err != nil {
		t.Fatal(err)
	}
	for raw, want := range map[string]bool{
		"https://hooks.example.com/jobs":      true, // any port of a name given without one
		"http://HOOKS.example.com:8080/":      true,
		"https://evil.example.com/":           false,
		"https://hooks.example.com.evil.io/":  false,
		"https://127.0.0.1:8443/":             true,
		"http://127.0.0.1/":                   false, // port 80, not the one allowed
		"http://127.0.0.1:8444/":              false,
		"http://[::1]:9000/":                  true,
		"http://[::1]:9001/":                  false,
		"http://localhost:8443/":              false,
		"http://hooks.example.com@evil.io/x":  false,
		"http://evil.io/?hooks.example.com":   false,
		"http://evil.io#@hooks.example.com/x": false,
	} {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		if got := a.Permits(u); got != want {
			t.Errorf("Permits(%s) = %v, want %v", raw, got, want)
		}
	}
	for _, bad := range []string{"*", "*.example.com", "http://x", "a/b", "host:", ":80", "user@host", "${EMQ_PUSH_ALLOW:-}",
		"host:abc", "host:0", "host:70000", "..", "a..b", "[::1", "hooks.example.com/"} {
		if _, err := ParseAllow(bad); err == nil {
			t.Errorf("ParseAllow(%q) took it", bad)
		}
	}
	if none, _ := ParseAllow(" , "); none.On() {
		t.Error("a blank list permits hosts")
	}
}

func TestCheck(t *testing.T) {
	t.Parallel()
	allow, _ := ParseAllow("127.0.0.1")
	good := Target{URL: "http://127.0.0.1:9/jobs"}.WithDefaults()
	if good.Timeout != 30*time.Second || good.Concurrency != 10 || good.Lease != time.Minute {
		t.Fatalf("defaults %+v", good)
	}
	if err := Check(good, allow); err != nil {
		t.Fatalf("a good target: %v", err)
	}
	if err := Check(good, Allow{}); !errors.Is(err, ErrNotAllowed) {
		t.Fatalf("no allow list: %v", err)
	}
	with := func(f func(*Target)) Target { t := good; f(&t); return t }
	for field, bad := range map[string][]Target{
		"url": {
			with(func(t *Target) { t.URL = "http://example.com/" }),
			with(func(t *Target) { t.URL = "ftp://127.0.0.1/" }),
			with(func(t *Target) { t.URL = "http://u:p@127.0.0.1/" }),
			with(func(t *Target) { t.URL = "http://127.0.0.1/#x" }),
			with(func(t *Target) { t.URL = "127.0.0.1/jobs" }),
			with(func(t *Target) { t.URL = "mailto:127.0.0.1" }),
		},
		"timeout_ms":  {with(func(t *Target) { t.Timeout = 99 * time.Millisecond }), with(func(t *Target) { t.Timeout = 2 * time.Hour; t.Lease = 3 * time.Hour })},
		"concurrency": {with(func(t *Target) { t.Concurrency = 1001 })},
		"lease_ms": {with(func(t *Target) { t.Lease = t.Timeout }), with(func(t *Target) { t.Lease = t.Timeout + 999*time.Millisecond }),
			with(func(t *Target) { t.Lease = 25 * time.Hour })},
		"secret": {
			with(func(t *Target) { t.Secret = "hunter2" }),
			with(func(t *Target) { t.Secret = "whsec_c2hvcnQ=" }), // 5 bytes
			with(func(t *Target) { t.Secret = "whsec_not base64!!!!!!!!!!!!!!!!!!" }),
			with(func(t *Target) { t.Secret = "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSwNDE0NjM3MDk1NzI=" }), // no prefix
		},
	} {
		for _, target := range bad {
			var fe *FieldError
			if err := Check(target, allow); !errors.As(err, &fe) || fe.Field != field {
				t.Errorf("%+v: got %v, want an error on %s", target, err, field)
			}
		}
	}
	if err := Check(with(func(t *Target) { t.Secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSwNDE0NjM3MDk1NzI=" }), allow); err != nil {
		t.Errorf("a good secret: %v", err)
	}
}

func TestAnswerOf(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	answer := func(status int, header http.Header, body string) answer {
		return answerOf(&http.Response{StatusCode: status, Header: header}, []byte(body), 32)
	}
	if a := answer(200, nil, ` { "ok" : true } `); a.outcome != Completed || string(a.result) != `{"ok":true}` {
		t.Errorf("200 JSON: %+v", a)
	}
	if a := answer(204, nil, ``); a.outcome != Completed || a.result != nil {
		t.Errorf("204: %+v", a)
	}
	if a := answer(200, nil, `<html>ok</html>`); a.outcome != Completed || a.result != nil {
		t.Errorf("200 HTML: %+v", a)
	}
	if a := answer(200, nil, `{"too":"long for a result of 32 bytes"}`); a.outcome != Completed || a.result != nil {
		t.Errorf("200 too long: %+v", a)
	}
	if a := answer(202, nil, `{"ok":true}`); a.outcome != Accepted || a.result != nil {
		t.Errorf("202: %+v", a)
	}
	if a := answer(500, nil, "line one\n\tline two"); a.outcome != Failed || a.text != "HTTP 500: line one line two" || a.retryIn != nil {
		t.Errorf("500: %+v", a)
	}
	if a := answer(429, http.Header{"Retry-After": {"7"}}, ""); a.text != "HTTP 429" || a.retryIn == nil || *a.retryIn != 7*time.Second {
		t.Errorf("429: %+v", a)
	}
	if a := answer(400, http.Header{"Retry-After": {"7"}}, ""); a.retryIn != nil {
		t.Errorf("a 400's Retry-After was taken: %+v", a)
	}
	if d := retryAfter(now.Add(90*time.Second).Format(http.TimeFormat), now); d == nil || *d != 90*time.Second {
		t.Errorf("Retry-After as a date: %v", d)
	}
	if d := retryAfter(now.Add(-time.Hour).Format(http.TimeFormat), now); d == nil || *d != 0 {
		t.Errorf("Retry-After in the past: %v", d)
	}
	for _, v := range []string{"", "soon", "-3"} {
		if d := retryAfter(v, now); d != nil {
			t.Errorf("Retry-After %q: %v", v, *d)
		}
	}
	if s := oneLine([]byte("é"+string(make([]byte, 300))), 10); len(s) > 10+len("…") {
		t.Errorf("oneLine kept %d bytes", len(s))
	}
}
