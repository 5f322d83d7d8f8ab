package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// httpDriver reaches the service through its HTTP API only, as a worker in
// any language would: one keep-alive connection per goroutine.
type httpDriver struct {
	base   string // e.g. http://127.0.0.1:8080
	key    string // a bearer key with the admin role, or empty
	client *http.Client
	groups groupNames
}

func newHTTPDriver(base, key string, conns, groups int) *httpDriver {
	transport := &http.Transport{MaxIdleConns: conns, MaxIdleConnsPerHost: conns, IdleConnTimeout: time.Minute}
	return &httpDriver{base: base, key: key, client: &http.Client{Transport: transport}, groups: groupNames{n: groups}}
}

func (d *httpDriver) queueURL(queue string) string {
	return d.base + "/queues/" + url.PathEscape(queue)
}

// call sends body to path and decodes a 2xx answer into out (when out is
// not nil); any other answer is an error with the problem's text.
func (d *httpDriver) call(ctx context.Context, method, target string, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, target, bytes.NewReader(body))
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if d.key != "" {
		req.Header.Set("Authorization", "Bearer "+d.key)
	}
	resp, err := d.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		text, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("%s %s: %s: %s", method, target, resp.Status, bytes.TrimSpace(text))
	}
	if out == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		return err
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

func (d *httpDriver) enqueue(ctx context.Context, queue string, n int) error {
	if n == 1 {
		body := d.groups.appendTo(append([]byte(`{"payload":`), payload...))
		return d.call(ctx, "POST", d.queueURL(queue)+"/jobs", append(body, '}'), nil)
	}
	body := []byte(`{"jobs":[`)
	for i := range n {
		if i > 0 {
			body = append(body, ',')
		}
		body = append(d.groups.appendTo(append(append(body, `{"payload":`...), payload...)), '}')
	}
	body = append(body, "]}"...)
	return d.call(ctx, "POST", d.queueURL(queue)+"/jobs/batch", body, nil)
}

// jobList is the part of a claim or complete answer a worker reads.
type jobList struct {
	Jobs []ticket `json:"jobs"`
	Next []ticket `json:"next"`
}

func (d *httpDriver) claim(ctx context.Context, queue string, count int, wait time.Duration) ([]ticket, error) {
	body := fmt.Appendf(nil, `{"count":%d,"wait_ms":%d,"lease_ms":60000}`, count, wait.Milliseconds())
	var out jobList
	err := d.call(ctx, "POST", d.queueURL(queue)+"/claim", body, &out)
	return out.Jobs, err
}

// claimNext is the claim-next part of a complete body.
func claimNext(next int) []byte {
	if next == 0 {
		return nil
	}
	return fmt.Appendf(nil, `,"claim":{"count":%d,"lease_ms":60000}`, next)
}

func (d *httpDriver) complete(ctx context.Context, queue string, t ticket, next int) ([]ticket, error) {
	body := strconv.AppendInt([]byte(`{"token":`), t.Token, 10)
	body = append(append(body, claimNext(next)...), '}')
	var out jobList
	err := d.call(ctx, "POST", d.queueURL(queue)+"/jobs/"+url.PathEscape(t.ID)+"/complete", body, &out)
	return out.Next, err
}

func (d *httpDriver) completeBatch(ctx context.Context, queue string, ts []ticket, next int) ([]ticket, error) {
	body := []byte(`{"jobs":[`)
	for i, t := range ts {
		if i > 0 {
			body = append(body, ',')
		}
		body = append(append(body, `{"id":"`...), t.ID...)
		body = strconv.AppendInt(append(body, `","token":`...), t.Token, 10)
		body = append(body, '}')
	}
	body = append(append(append(body, ']'), claimNext(next)...), '}')
	var out jobList
	err := d.call(ctx, "POST", d.queueURL(queue)+"/complete", body, &out)
	return out.Next, err
}

func (d *httpDriver) extend(ctx context.Context, queue string, t ticket, lease time.Duration) error {
	body := fmt.Appendf(nil, `{"token":%d,"lease_ms":%d}`, t.Token, lease.Milliseconds())
	return d.call(ctx, "POST", d.queueURL(queue)+"/jobs/"+url.PathEscape(t.ID)+"/lease", body, nil)
}

func (d *httpDriver) cleanup(ctx context.Context, queue string) error {
	return d.call(ctx, "DELETE", d.queueURL(queue)+"?force=true", nil, nil)
}
