package http

// The contract check: every request the test suites send through the real
// router, and every answer they get, is checked against api/openapi.yaml,
// so the suites that prove the behaviour also prove that the spec describes
// it. kin-openapi finds the operation and checks parameters, statuses,
// media types and headers; bodies go through bodySchemas. It lives in the internal test package so that both
// the contract suites (package http_test) and the internal tests (keys,
// events) can call it; TestMain fails the run when an operation of the spec
// was never answered 2xx with both sides checked (ContractGaps).

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/echo-mq/echo_mq/api"
)

// uncheckedOperations are the operations of the spec that the suites may
// leave without a checked 2xx exchange, each with the reason. Keep it
// short: an operation belongs here only when no test can reach it.
var uncheckedOperations = map[string]string{}

// contract is api/openapi.yaml loaded, validated and routed once for the
// whole test binary, and the operations the tests have covered so far.
type contract struct {
	doc     *openapi3.T
	router  routers.Router
	options *openapi3filter.Options
	bodies  *bodySchemas

	mu      sync.Mutex
	covered map[string]bool // operationId: answered 2xx, request and answer matched the spec
}

var (
	theContract     *contract
	theContractErr  error
	theContractOnce sync.Once
)

// loadContract parses api/openapi.yaml (the bytes the binary embeds and
// serves) the first time it is called.
func loadContract() (*contract, error) {
	theContractOnce.Do(func() { theContract, theContractErr = newContract(api.Spec) })
	return theContract, theContractErr
}

// newContract loads spec, checks that it is a valid OpenAPI document and
// builds the router that finds an operation by method and path.
func newContract(spec []byte) (*contract, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(spec)
	if err != nil {
		return nil, fmt.Errorf("load api/openapi.yaml: %w", err)
	}
	if err := doc.Validate(loader.Context, openapi3.SetRegexCompiler(kinRegex)); err != nil {
		return nil, fmt.Errorf("api/openapi.yaml is not a valid OpenAPI document: %w", err)
	}
	// Test requests carry httptest's host (example.com) or a loopback
	// server's: route by method and path alone.
	doc.Servers = nil
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("route api/openapi.yaml: %w", err)
	}
	bodies, err := newBodySchemas(spec)
	if err != nil {
		return nil, err
	}
	return &contract{
		doc:    doc,
		router: router,
		bodies: bodies,
		options: &openapi3filter.Options{
			// Bodies are checked against schemas compiled once (bodySchemas):
			// for a 3.1 document kin-openapi compiles a body's schema again
			// on every call, which made the suite twice as slow.
			ExcludeRequestBody:  true,
			ExcludeResponseBody: true,
			// The suites run with and without keys; who may call what is
			// authorize_test.go's job, not the schema's.
			AuthenticationFunc: openapi3filter.NoopAuthenticationFunc,
			// A status the operation does not list is drift too.
			IncludeResponseStatus: true,
			MultiError:            true,
			RegexCompiler:         kinRegex,
		},
		covered: map[string]bool{},
	}, nil
}

// CheckContract fails tb unless one exchange matches api/openapi.yaml: the
// answer always (problem+json bodies included), the request only when the
// service accepted it (2xx), since the suites send malformed requests on
// purpose. An exchange on a route the spec does not describe (an unknown
// path, a wrong method, /metrics, /docs, a CORS preflight) is not checked.
// reqBody is the body req was sent with. A 2xx exchange that matched marks
// its operation covered.
func CheckContract(tb testing.TB, req *http.Request, reqBody []byte, status int, header http.Header, body []byte) {
	tb.Helper()
	mustContract(tb).check(tb, req, reqBody, status, header, body, true)
}

// CheckAnswer is CheckContract for the fuzz targets: only the answer is
// checked, whatever was sent. The service reads some bodies more leniently
// than the spec writes them (blank or null as {}, keys in any case, as
// encoding/json does), and a fuzzer finds them all; the spec says what a
// client should send, not everything the service forgives.
func CheckAnswer(tb testing.TB, req *http.Request, status int, header http.Header, body []byte) {
	tb.Helper()
	mustContract(tb).check(tb, req, nil, status, header, body, false)
}

// outsideTheSpec tells the service's routes that are not part of the API
// the spec describes: the spec itself, its viewer, and the dashboard's
// static files (/ui, /ui/...), which are pages for a browser, not API
// operations.
func outsideTheSpec(path string) bool {
	return path == "/openapi.yaml" || path == "/docs" || strings.HasPrefix(path, "/docs/") ||
		path == "/ui" || strings.HasPrefix(path, "/ui/")
}

// mustContract is the loaded spec, or the end of the test.
func mustContract(tb testing.TB) *contract {
	tb.Helper()
	c, err := loadContract()
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// check checks one exchange (its request too when checkRequest) and marks
// its operation covered when it was a 2xx that matched.
func (c *contract) check(tb testing.TB, req *http.Request, reqBody []byte, status int, header http.Header, body []byte, checkRequest bool) {
	tb.Helper()
	sent := req.Clone(context.Background())
	sent.Body = io.NopCloser(bytes.NewReader(reqBody))
	if mt, params, err := mime.ParseMediaType(sent.Header.Get("Content-Type")); err == nil && strings.HasSuffix(mt, "+json") {
		// The service reads a +json media type (RFC 6839) as JSON; the
		// spec names only application/json.
		sent.Header.Set("Content-Type", mime.FormatMediaType("application/json", params))
	}
	route, pathParams, err := c.router.FindRoute(sent)
	for name, v := range pathParams {
		// The router hands a parameter over as it was escaped in the URL
		// ("order%3A1"); the service, and the spec's pattern, read it
		// unescaped ("order:1").
		if unescaped, err := url.PathUnescape(v); err == nil {
			pathParams[name] = unescaped
		}
	}
	if err != nil {
		// Unknown routes and wrong methods are refused (their problem
		// bodies are checked by the tests that send them); an accepted
		// request the spec has no operation for is drift.
		if status >= 200 && status < 300 && !outsideTheSpec(req.URL.Path) {
			tb.Errorf("%s %s answered %d, but api/openapi.yaml has no such operation", req.Method, req.URL.RequestURI(), status)
		}
		return
	}
	in := &openapi3filter.RequestValidationInput{Request: sent, PathParams: pathParams, Route: route, Options: c.options}
	what := fmt.Sprintf("%s %s (%s) answered %d", req.Method, req.URL.RequestURI(), route.Operation.OperationID, status)
	accepted := status >= 200 && status < 300
	ok := checkRequest
	if accepted && checkRequest {
		err := openapi3filter.ValidateRequest(context.Background(), in)
		if err == nil {
			err = c.checkRequestBody(route, sent.Header.Get("Content-Type"), reqBody)
		}
		if err != nil {
			ok = false
			tb.Errorf("%s, but api/openapi.yaml refuses the request %s:\n%s", what, excerpt(reqBody), describe(err))
		}
	}
	if err := c.checkAnswer(in, status, header, body); err != nil {
		ok = false
		tb.Errorf("%s, which api/openapi.yaml does not allow: %s\n%s", what, excerpt(body), describe(err))
	}
	if accepted && ok {
		c.cover(route.Operation.OperationID)
	}
}

// checkAnswer checks an answer against its operation's responses; an event
// stream event by event.
func (c *contract) checkAnswer(in *openapi3filter.RequestValidationInput, status int, header http.Header, body []byte) error {
	if mt, _, _ := mime.ParseMediaType(header.Get("Content-Type")); mt == "text/event-stream" {
		return c.checkEventStream(in.Route, status, body)
	}
	err := openapi3filter.ValidateResponse(context.Background(), &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in, Status: status, Header: header,
		Body: io.NopCloser(bytes.NewReader(body)), Options: c.options,
	})
	if err != nil {
		return err
	}
	return c.checkAnswerBody(in.Route, status, header.Get("Content-Type"), body)
}

// checkRequestBody checks an accepted request's body: present when the
// operation requires one, of a media type it lists, matching its schema.
// A blank body is an absent one.
func (c *contract) checkRequestBody(route *routers.Route, contentType string, body []byte) error {
	rb := route.Operation.RequestBody
	if rb == nil {
		return nil
	}
	if len(bytes.TrimSpace(body)) == 0 {
		if rb.Value.Required {
			return errors.New("the body is required")
		}
		return nil
	}
	key, err := mediaKey(rb.Value.Content, contentType)
	if err != nil {
		return fmt.Errorf("request Content-Type: %w", err)
	}
	return c.bodies.check(body, "paths", route.Path, strings.ToLower(route.Method), "requestBody", "content", key, "schema")
}

// checkAnswerBody checks an answer's body against the schema the operation
// lists for its status and media type.
func (c *contract) checkAnswerBody(route *routers.Route, status int, contentType string, body []byte) error {
	resp := route.Operation.Responses.Status(status)
	if resp == nil || len(resp.Value.Content) == 0 {
		return nil // ValidateResponse has refused a status that is not listed
	}
	key, err := mediaKey(resp.Value.Content, contentType)
	if err != nil {
		return fmt.Errorf("response Content-Type: %w", err)
	}
	if !strings.HasSuffix(key, "json") {
		// A text answer (/metrics) is its schema's string.
		if body, err = json.Marshal(string(body)); err != nil {
			return err
		}
	}
	return c.bodies.check(body, "paths", route.Path, strings.ToLower(route.Method), "responses", strconv.Itoa(status), "content", key, "schema")
}

// mediaKey is the key of content that names contentType's media type.
func mediaKey(content openapi3.Content, contentType string) (string, error) {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return "", fmt.Errorf("%q: %w", contentType, err)
	}
	for key := range content {
		if strings.EqualFold(key, mt) {
			return key, nil
		}
	}
	return "", fmt.Errorf("%q is not one of %v", mt, slices.Sorted(maps.Keys(content)))
}

// checkEventStream checks a Server-Sent Events answer: the operation must
// list it for status, each event's data must match the schema it lists,
// and each event's name must be the data's kind. An "error" event carries
// a Problem. A last event cut short (the test stopped reading) is skipped.
func (c *contract) checkEventStream(route *routers.Route, status int, body []byte) error {
	resp := route.Operation.Responses.Status(status)
	if resp == nil || resp.Value.Content.Get("text/event-stream") == nil {
		return fmt.Errorf("status %d with Content-Type text/event-stream is not listed", status)
	}
	for _, ev := range parseEvents(body) {
		var data struct{ Kind string }
		if err := json.Unmarshal([]byte(ev.data), &data); err != nil {
			return fmt.Errorf("event %q: data is not a JSON object: %q", ev.name, ev.data)
		}
		var err error
		switch {
		case ev.name == "error":
			err = c.bodies.check([]byte(ev.data), "components", "schemas", "Problem")
		case data.Kind != ev.name:
			err = fmt.Errorf("carries kind %q", data.Kind)
		default:
			err = c.bodies.check([]byte(ev.data), "paths", route.Path, "get", "responses", strconv.Itoa(status),
				"content", "text/event-stream", "schema")
		}
		if err != nil {
			return fmt.Errorf("event %q %s: %w", ev.name, ev.data, err)
		}
	}
	return nil
}

// sse is one Server-Sent Event.
type sse struct{ name, data string }

// parseEvents reads the complete events of an event stream: those ended by
// a blank line; comments (": ping") are skipped.
func parseEvents(body []byte) []sse {
	var events []sse
	var cur sse
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, len(body)+1)
	for sc.Scan() {
		field, value, _ := strings.Cut(sc.Text(), ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "":
			if sc.Text() == "" && cur.data != "" {
				events = append(events, cur)
			}
			if sc.Text() == "" {
				cur = sse{}
			}
		case "event":
			cur.name = value
		case "data":
			cur.data += value
		}
	}
	return events
}

// cover records that operation id was exercised and matched the spec.
func (c *contract) cover(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.covered[id] = true
}

// ContractGaps lists the operations of api/openapi.yaml that no test has
// yet answered 2xx with the request and the answer matching the spec, less
// uncheckedOperations, sorted. TestMain calls it after a whole run.
func ContractGaps() ([]string, error) {
	c, err := loadContract()
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var gaps []string
	for _, item := range c.doc.Paths.Map() {
		for _, op := range item.Operations() {
			if _, excused := uncheckedOperations[op.OperationID]; !c.covered[op.OperationID] && !excused {
				gaps = append(gaps, op.OperationID)
			}
		}
	}
	slices.Sort(gaps)
	return gaps, nil
}

// describe turns kin-openapi's errors, which print whole schemas, into one
// line per failure: where in the message, and why.
func describe(err error) string {
	var lines []string
	var walk func(prefix string, err error)
	walk = func(prefix string, err error) {
		switch e := err.(type) {
		case openapi3.MultiError:
			for _, each := range e {
				walk(prefix, each)
			}
		case *openapi3.SchemaError:
			lines = append(lines, fmt.Sprintf("  %sat /%s: %s", prefix, strings.Join(e.JSONPointer(), "/"), e.Reason))
		case *openapi3filter.RequestError:
			if e.Parameter != nil {
				prefix += fmt.Sprintf("parameter %s (%s) ", e.Parameter.Name, e.Parameter.In)
			} else if e.RequestBody != nil {
				prefix += "body "
			}
			if e.Err == nil {
				lines = append(lines, "  "+prefix+e.Reason)
				return
			}
			walk(prefix, e.Err)
		case *openapi3filter.ResponseError:
			if e.Err == nil {
				lines = append(lines, "  "+prefix+e.Reason)
				return
			}
			walk(prefix+e.Reason+": ", e.Err)
		default:
			lines = append(lines, "  "+prefix+err.Error())
		}
	}
	walk("", err)
	return strings.Join(lines, "\n")
}

// excerpt is a body as a test failure shows it: at most 300 bytes.
func excerpt(body []byte) string {
	if len(body) > 300 {
		return fmt.Sprintf("%s... (%d bytes)", body[:300], len(body))
	}
	return string(body)
}
