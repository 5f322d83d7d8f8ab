package servicetest_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/echo-mq/echo_mq/internal/servicetest"
)

// upstream is a stand-in for the service: it answers "upstream <path>".
func upstream(tb testing.TB) string {
	tb.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "upstream "+r.URL.Path)
	}))
	tb.Cleanup(srv.Close)
	return srv.URL
}

// post sends an empty POST and returns the status and body.
func post(tb testing.TB, hc *http.Client, url string) (int, string, error) {
	tb.Helper()
	resp, err := hc.Post(url, "application/json", nil)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

func TestFlakyProxyAnswersInOrderThenPasses(t *testing.T) {
	t.Parallel()
	p := servicetest.NewFlakyProxy(t, upstream(t))
	p.Answer("/claim", servicetest.Unavailable(2), servicetest.Answer{Status: http.StatusTeapot, Body: "short"})
	p.Answer("/claim", servicetest.Answer{Status: http.StatusBadGateway})

	var got []string
	for range 4 {
		resp, err := http.Post(p.URL()+"/queues/q/claim", "application/json", nil)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		got = append(got, resp.Status+" "+resp.Header.Get("Retry-After")+" "+string(body)[:min(5, len(body))])
	}
	want := []string{"503 Service Unavailable 2 {\"typ", "418 I'm a teapot  short", "502 Bad Gateway  ", "200 OK  upstr"}
	if !slices.Equal(got, want) {
		t.Fatalf("four claims through the proxy got %q, want %q", got, want)
	}
	if status, body, err := post(t, http.DefaultClient, p.URL()+"/queues/q/jobs/j/complete"); err != nil ||
		status != http.StatusOK || body != "upstream /queues/q/jobs/j/complete" {
		t.Fatalf("a request with no answer queued: %d %q %v; want it passed on", status, body, err)
	}
	claims := p.Requests("/claim")
	if len(claims) != 4 || len(p.Requests("")) != 5 || !claims[2].Answered || claims[3].Answered ||
		claims[0].Method != http.MethodPost || claims[0].Path != "/queues/q/claim" {
		t.Fatalf("the proxy recorded %+v of %d requests; want 4 claims, the first 3 answered by the proxy", claims, len(p.Requests("")))
	}
	for i, c := range claims {
		if c.At.IsZero() || c.Done.Before(c.At) || (i > 0 && c.At.Before(claims[i-1].At)) {
			t.Fatalf("claim %d came at %v and was done at %v", i+1, c.At, c.Done)
		}
	}
}

func TestFlakyProxyDropsAndHangs(t *testing.T) {
	t.Parallel()
	p := servicetest.NewFlakyProxy(t, upstream(t))
	p.Answer("/lease", servicetest.Answer{Hang: true})
	p.Answer("/complete", servicetest.Answer{Drop: true})

	if _, _, err := post(t, http.DefaultClient, p.URL()+"/queues/q/jobs/j/complete"); err == nil {
		t.Fatal("a dropped request was answered")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	// With a body, as an extend has: the proxy must notice the client give
	// up all the same.
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, p.URL()+"/queues/q/jobs/j/lease", strings.NewReader(`{"token":1}`))
	if _, err := http.DefaultClient.Do(req); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a hung request: %v; want the client to give up at its deadline", err)
	}
	// The proxy notices the client gave up and finishes the request.
	deadline := time.Now().Add(10 * time.Second)
	for p.Requests("/lease")[0].Done.IsZero() {
		if time.Now().After(deadline) {
			t.Fatal("the hung request is still in flight 10 s after its client gave up")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if status, _, err := post(t, http.DefaultClient, p.URL()+"/queues/q/jobs/j/lease"); err != nil || status != http.StatusOK {
		t.Fatalf("the next extend: %d, %v; want it passed on", status, err)
	}
}

func TestFlakyProxyPassesOnThenAnswers(t *testing.T) {
	t.Parallel()
	reached := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		reached <- r.URL.Path + " " + string(body)
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(srv.Close)
	p := servicetest.NewFlakyProxy(t, srv.URL)
	p.Answer("/jobs", servicetest.Answer{PassOn: true, Status: http.StatusBadGateway, Body: "lost"})

	resp, err := http.Post(p.URL()+"/queues/q/jobs", "application/json", strings.NewReader(`{"id":"a"}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadGateway || string(body) != "lost" {
		t.Errorf("an answer passed on first: %d %q; want the proxy's 502 \"lost\", not the service's 201", resp.StatusCode, body)
	}
	select {
	case got := <-reached:
		if got != `/queues/q/jobs {"id":"a"}` {
			t.Errorf("the service got %q, want the request with its body", got)
		}
	default:
		t.Error("the request did not reach the service before the proxy answered")
	}
	if r := p.Requests("/jobs"); len(r) != 1 || !r[0].Answered {
		t.Errorf("the proxy recorded %+v; want one request, answered by the proxy", r)
	}
}

func TestFlakyProxyZeroAnswerPasses(t *testing.T) {
	t.Parallel()
	p := servicetest.NewFlakyProxy(t, upstream(t))
	p.Answer("/lease", servicetest.Unavailable(1), servicetest.Answer{}, servicetest.Answer{Status: http.StatusTeapot})

	var got []string
	for range 3 {
		status, body, err := post(t, http.DefaultClient, p.URL()+"/queues/q/jobs/j/lease")
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprint(status, " ", body[:min(8, len(body))]))
	}
	want := []string{`503 {"type":`, "200 upstream", "418 "}
	if !slices.Equal(got, want) {
		t.Errorf("three extends through the proxy got %q, want %q: the zero Answer passes the second on", got, want)
	}
	var answered []bool
	for _, r := range p.Requests("/lease") {
		answered = append(answered, r.Answered)
	}
	if !slices.Equal(answered, []bool{true, false, true}) {
		t.Errorf("answered by the proxy: %v, want [true false true]", answered)
	}
}
