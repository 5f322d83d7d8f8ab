package client_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/echo-mq/echo_mq/client"
	"github.com/echo-mq/echo_mq/internal/redistest"
)

func TestNewRefusesABaseURLThatCannotWork(t *testing.T) {
	t.Parallel()
	for _, base := range []string{
		"localhost:8080", // no scheme: "localhost" is taken for one
		"127.0.0.1:8080", // not a URL at all
		"ftp://127.0.0.1:8080",
		"http://",
		"http:///queues",
		"",
		" http://127.0.0.1:8080",
		"http://127.0.0.1:8080\n",
		"http://127.0.0.1:8080/?x=1",
		"http://127.0.0.1:8080/#top",
	} {
		c, err := client.New(base)
		if err == nil || c != nil || !strings.HasPrefix(err.Error(), "client: base URL ") {
			t.Errorf("New(%q) = %v, %v; want no client and an error about the base URL", base, c, err)
		}
	}
}

func TestNewKeepsABasePath(t *testing.T) {
	t.Parallel()
	paths := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		paths <- r.URL.Path
		w.Write([]byte(`{"id":"j","state":"pending"}`))
	}))
	defer srv.Close()
	// Behind a reverse proxy the service may live under a path; the
	// trailing slash is dropped.
	c := mustNew(t, srv.URL+"/emq/")
	job, err := c.Job(context.Background(), "q", "j")
	if err != nil || job.State != client.StatePending {
		t.Fatalf("Job: %+v, %v", job, err)
	}
	if got := <-paths; got != "/emq/queues/q/jobs/j" {
		t.Fatalf("the request went to %q, want /emq/queues/q/jobs/j", got)
	}
}

func TestPayloadBytesAndRawJSON(t *testing.T) {
	t.Parallel()
	c, q := newClient(t), redistest.Queue(t)
	for _, tc := range []struct {
		payload any
		want    string
	}{
		{[]byte("hi"), `"aGk="`},                     // encoding/json's way: base64
		{json.RawMessage(`{"a": [1]}`), `{"a":[1]}`}, // raw JSON, as it is
		{json.RawMessage{}, `null`},                  // empty raw JSON: no payload
	} {
		job := enqueue(t, c, q, client.EnqueueRequest{Payload: tc.payload})
		if string(job.Payload) != tc.want {
			t.Errorf("payload %#v was stored as %s, want %s", tc.payload, job.Payload, tc.want)
		}
	}
}
