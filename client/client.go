package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// DefaultLease is the lease a claim or an extend asks for when none is
// given: the service's own default.
const DefaultLease = 30 * time.Second

// Client calls one echo_mq service. It is safe for concurrent use by many
// goroutines; make one and share it.
type Client struct {
	baseURL string
	http    *http.Client
	apiKey  string
	signer  *signer // WithSigningKey's; when set, no key is sent
}

// Option configures a Client made by New.
type Option func(*Client)

// WithAPIKey sends key as "Authorization: Bearer <key>" on every request.
// A worker needs a key of the worker role (or admin); putting, pausing,
// resuming, running and deleting schedules needs admin, reading them any
// role; the bulk actions (RetryJobs, CleanJobs, PromoteJobs) need admin.
func WithAPIKey(key string) Option {
	return func(c *Client) { c.apiKey = key }
}

// WithHTTPClient makes the Client send its requests through hc, for a
// custom transport, TLS settings or tracing. Do not set hc.Timeout shorter
// than the longest claim wait you use: a long poll is a slow request by
// design. Each call is bounded by its context instead.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *Client) { c.http = hc }
}

// New returns a client of the service at baseURL, such as
// "http://127.0.0.1:8080" or "https://emq.example.com/prefix".
//
// It returns an error when baseURL is not an http or https URL with a
// host: a URL that cannot work ("localhost:8080", with no scheme) is
// refused here, at start-up, rather than failing every call later. The
// error is returned, not panicked, because a base URL usually comes from
// configuration (an environment variable), which a program should report,
// not crash on.
func New(baseURL string, opts ...Option) (*Client, error) {
	base, err := parseBaseURL(baseURL)
	if err != nil {
		return nil, err
	}
	c := &Client{baseURL: base, http: defaultHTTPClient()}
	for _, opt := range opts {
		opt(c)
	}
	return c, nil
}

// parseBaseURL checks that raw is an http or https URL with a host and no
// query or fragment, and returns it without a trailing slash.
func parseBaseURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("client: base URL %q: want http://host:port or https://host: %w", raw, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return "", fmt.Errorf("client: base URL %q: want http://host:port or https://host", raw)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("client: base URL %q: want no query or fragment", raw)
	}
	return strings.TrimRight(raw, "/"), nil
}

// defaultHTTPClient keeps more idle connections per host than
// http.DefaultClient's two, so that a worker running several long polls
// at once reuses its connections instead of dialling again.
func defaultHTTPClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64
	return &http.Client{Transport: tr}
}

// jobPath is the path of job id in queue, with suffix after it.
func jobPath(queue, id, suffix string) string {
	return queuePath(queue, "/jobs/"+url.PathEscape(id)+suffix)
}

// schedulePath is the path of schedule name of queue, with suffix after
// it.
func schedulePath(queue, name, suffix string) string {
	return queuePath(queue, "/schedules/"+url.PathEscape(name)+suffix)
}

// queuePath is the path of queue, with suffix after it.
func queuePath(queue, suffix string) string {
	return "/queues/" + url.PathEscape(queue) + suffix
}

// requestOption changes a request before it is sent.
type requestOption func(*http.Request)

// preferMinimal asks, when minimal, for an answer without the finished
// jobs' payload and result (Prefer: return=minimal, RFC 7240).
func preferMinimal(minimal bool) requestOption {
	return func(req *http.Request) {
		if minimal {
			req.Header.Set("Prefer", "return=minimal")
		}
	}
}

// do sends body (nil: none) as JSON to path, changed by opts, and decodes
// a 2xx answer into out (nil: discard it). It returns the status, and a
// *Error for any other status.
func (c *Client) do(ctx context.Context, method, path string, body, out any, opts ...requestOption) (int, error) {
	req, err := c.newRequest(ctx, method, path, body)
	if err != nil {
		return 0, err
	}
	for _, opt := range opts {
		opt(req)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, fmt.Errorf("client: %w", err) // a *url.Error names the method and URL
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, errorOf(resp)
	}
	if out == nil {
		_, err = io.Copy(io.Discard, resp.Body)
	} else {
		err = json.NewDecoder(resp.Body).Decode(out)
	}
	if err != nil {
		return resp.StatusCode, fmt.Errorf("client: %s %s: reading the answer: %w", method, path, err)
	}
	return resp.StatusCode, nil
}

func (c *Client) newRequest(ctx context.Context, method, path string, body any) (*http.Request, error) {
	var b []byte
	if body != nil {
		var err error
		if b, err = json.Marshal(body); err != nil {
			return nil, fmt.Errorf("client: %s %s: %w", method, path, err)
		}
	}
	req, err := http.NewRequestWithContext(ctx, method, c.baseURL+path, bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	switch {
	case c.signer != nil:
		if err := c.signer.sign(ctx, req, b); err != nil {
			return nil, fmt.Errorf("client: %s %s: %w", method, path, err)
		}
	case c.apiKey != "":
		req.Header.Set("Authorization", "Bearer "+c.apiKey)
	}
	if tp := traceparentOf(ctx); tp != "" {
		req.Header.Set("Traceparent", tp)
	}
	return req, nil
}

// marshal turns v into the raw JSON a request carries: nil for a nil v, so
// that the field is left out (an empty json.RawMessage too); v itself when
// it is a json.RawMessage (raw
// JSON, checked by the request's encoding); otherwise json.Marshal(v), so
// that a []byte becomes a base64 string, as encoding/json writes it.
func marshal(v any) (json.RawMessage, error) {
	switch v := v.(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		if len(v) == 0 {
			return nil, nil
		}
		return v, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	return b, nil
}

// millis is d in whole milliseconds, as the API counts time.
func millis(d time.Duration) int64 { return d.Milliseconds() }
