package http_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
	"github.com/getkin/kin-openapi/openapi3"

	"github.com/echo-mq/echo_mq/api"
	"github.com/echo-mq/echo_mq/internal/redistest"
)

// TestSpecRulesHold holds the service to the rules api/openapi.yaml
// states for every request body, so that a request the spec accepts is one
// the service accepts: for each operation it sends the body's example, and
// a body of the required fields made from the fields' examples, then for each field (nested
// objects too) the boundary values the spec states (minimum and maximum,
// maxLength, each enum value, minItems and maxItems), and expects each
// accepted; then the values just outside them, an enum value that is not
// one, and an unknown field, and expects each refused 400 EMQINVALID.
// "Accepted" means not refused as invalid: an extend of a job that does
// not exist is 404 EMQGONE, which is the spec's answer too.
func TestSpecRulesHold(t *testing.T) {
	doc, err := openapi3.NewLoader().LoadFromData(api.Spec)
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, redistest.Client(t))
	q := redistest.Queue(t)
	// Jobs to claim, so that a claim answers at once rather than wait its
	// wait_ms out (up to the 30 s its maximum allows).
	for range 3 {
		jobs := make([]map[string]any, 1000)
		for i := range jobs {
			jobs[i] = map[string]any{"payload": i}
		}
		must[struct{}](t, h.do(t, http.MethodPost, jobsPath(q)+"/batch", map[string]any{"jobs": jobs}), http.StatusOK)
	}
	checked := 0
	for _, p := range slices.Sorted(maps.Keys(doc.Paths.Map())) {
		item := doc.Paths.Value(p)
		for method, op := range item.Operations() {
			if op.RequestBody == nil || op.RequestBody.Value.Content.Get("application/json") == nil {
				continue
			}
			media := op.RequestBody.Value.Content.Get("application/json")
			schema := media.Schema.Value
			url := strings.NewReplacer("{queue}", q, "{id}", "no-such-job", "{name}", "nightly").Replace(p)
			r := rules{t: t, h: h, method: method, url: url, op: op.OperationID, answers: op.Responses,
				exclusive: exclusive[op.OperationID]}
			example, ok := media.Example.(map[string]any)
			if !ok {
				t.Errorf("%s: the request body has no example", op.OperationID)
			}
			r.accepted("the spec's example", example)
			base := r.base(schema)
			if len(r.exclusive) > 0 {
				base[r.exclusive[0]] = r.value(schema.Properties[r.exclusive[0]].Value)
			}
			r.accepted("its required fields", base)
			r.fields(base, nil, schema)
			unknown := clone(base)
			unknown["zz_not_a_field"] = 1
			r.refused("an unknown field", unknown)
			checked++
		}
	}
	if checked < 9 {
		t.Fatalf("checked %d operations with a body, want every one (at least 9)", checked)
	}
}

// exclusive are, by operation, the top-level fields of its body of which
// one is given (their descriptions say so: exactly one of a schedule's
// cron and every_ms, at least one of a checkpoint's lease_ms and
// progress, at most one of a job's change's delay_ms and run_at, which
// needs one field at least): a body made from the required fields takes
// the first, and a body that varies one drops the others.
var exclusive = map[string][]string{"putSchedule": {"cron", "every_ms"}, "extendLease": {"lease_ms", "progress"},
	"updateJob": {"delay_ms", "run_at"}}

// modal are the fields of a dedupe that go with one mode, which the spec
// cannot say (ttl_ms with throttle, max_wait_ms with debounce, and the mode
// itself, as throttle needs ttl_ms): admission_test.go checks them.
var modal = map[string]bool{"mode": true, "ttl_ms": true, "max_wait_ms": true}

// relational are the fields whose validity the spec cannot say: the ids
// of depends_on must be jobs of the queue, once each, and
// on_dependency_failure goes with depends_on only (TestDependencyRefusals
// checks them).
var relational = map[string]bool{"depends_on": true, "on_dependency_failure": true}

// rules sends one operation's bodies.
type rules struct {
	t               *testing.T
	h               *harness
	method, url, op string
	answers         *openapi3.Responses // what the operation may answer
	exclusive       []string
}

func (r rules) send(body map[string]any) reply {
	r.t.Helper()
	return r.h.do(r.t, r.method, r.url, body)
}

func (r rules) accepted(what string, body map[string]any) {
	r.t.Helper()
	rep := r.send(body)
	listed := r.answers.Status(rep.Status) != nil
	if rep.Status == http.StatusBadRequest || rep.Status >= 500 || (rep.Status >= 300 && !listed) {
		r.t.Errorf("%s with %s: the spec accepts %s, the service answered %s", r.op, what, mustJSON(body), rep)
	}
}

func (r rules) refused(what string, body map[string]any) {
	r.t.Helper()
	rep := r.send(body)
	if rep.Status != http.StatusBadRequest || !strings.Contains(string(rep.Body), `"code":"EMQINVALID"`) {
		r.t.Errorf("%s with %s: the spec refuses %s, the service answered %s", r.op, what, mustJSON(body), rep)
	}
}

// base is an object of the schema's required fields, each its example or
// the least value its schema allows.
func (r rules) base(s *openapi3.Schema) map[string]any {
	out := map[string]any{}
	for _, name := range s.Required {
		out[name] = r.value(s.Properties[name].Value)
	}
	return out
}

// value is a valid value of s: its example, or the least it allows.
func (r rules) value(s *openapi3.Schema) any {
	switch {
	case s.Example != nil:
		return s.Example
	case len(s.Enum) > 0:
		return s.Enum[0]
	case s.Type == nil || len(s.Type.Slice()) == 0:
		return map[string]any{"any": "json"} // any JSON value
	case s.Type.Is("object"):
		return r.base(s)
	case s.Type.Is("array"):
		return []any{r.value(s.Items.Value)}
	case s.Type.Is("integer"), s.Type.Is("number"):
		if s.Min != nil {
			return *s.Min
		}
		return 1
	case s.Type.Is("boolean"):
		return false
	default:
		return strings.Repeat("a", int(max(s.MinLength, 1)))
	}
}

// fields checks each field of object schema s, at path within body.
func (r rules) fields(body map[string]any, path []string, s *openapi3.Schema) {
	r.t.Helper()
	for _, name := range slices.Sorted(maps.Keys(s.Properties)) {
		f := s.Properties[name].Value
		at := append(slices.Clone(path), name)
		if modal[name] && slices.Contains(path, "dedupe") {
			continue // valid with one mode only: TestAdmissionValidation
		}
		if relational[name] {
			continue
		}
		with := func(v any) map[string]any {
			out := set(body, at, v)
			if len(path) == 0 && slices.Contains(r.exclusive, name) {
				for _, other := range r.exclusive {
					if other != name {
						delete(out, other)
					}
				}
			}
			return out
		}
		what := func(v any) string { return fmt.Sprintf("%s = %s", strings.Join(at, "."), mustJSON(v)) }
		for _, v := range r.inside(f) {
			r.accepted(what(v), with(v))
		}
		for _, v := range outside(f) {
			r.refused(what(v), with(v))
		}
		if f.Type != nil && f.Type.Is("object") && len(f.Properties) > 0 {
			nested := with(r.base(f))
			r.fields(nested, at, f)
		}
		if f.Type != nil && f.Type.Is("array") && f.Items != nil {
			if item := f.Items.Value; item.Type != nil && item.Type.Is("object") {
				nested := with([]any{r.base(item)})
				r.fields(nested, append(at, "0"), item)
			}
		}
	}
}

// inside are the boundary values the spec states for s, and its example.
func (r rules) inside(s *openapi3.Schema) []any {
	var vs []any
	if s.Example != nil {
		vs = append(vs, s.Example)
	}
	for _, e := range s.Enum {
		vs = append(vs, e)
	}
	if s.Min != nil {
		vs = append(vs, *s.Min)
	}
	if s.Max != nil {
		vs = append(vs, *s.Max)
	}
	if s.MaxLength != nil && s.Pattern == "" {
		vs = append(vs, strings.Repeat("a", int(*s.MaxLength)))
	}
	if s.MaxItems != nil {
		items := make([]any, *s.MaxItems)
		for i := range items {
			items[i] = r.value(s.Items.Value)
		}
		vs = append(vs, items)
	}
	return vs
}

// outside are values just outside what the spec states for s.
func outside(s *openapi3.Schema) []any {
	var vs []any
	if len(s.Enum) > 0 {
		vs = append(vs, "not-one-of-them")
	}
	if s.Min != nil {
		vs = append(vs, *s.Min-1)
	}
	if s.Max != nil {
		vs = append(vs, *s.Max+1)
	}
	if s.MaxLength != nil {
		vs = append(vs, strings.Repeat("a", int(*s.MaxLength)+1))
	}
	if s.MinItems > 0 {
		vs = append(vs, []any{})
	}
	if s.Pattern != "" {
		re := regexp2.MustCompile(s.Pattern, regexp2.ECMAScript)
		for _, v := range []string{"not valid!", "...", ".", "batch", "a/b"} {
			if ok, _ := re.MatchString(v); !ok {
				vs = append(vs, v)
			}
		}
	}
	return vs
}

// set is a copy of body with the field at path set to v; a "0" in path
// is the first item of an array.
func set(body map[string]any, path []string, v any) map[string]any {
	out := clone(body)
	m := out
	for i := 0; i < len(path)-1; i++ {
		k := path[i]
		if i+1 < len(path)-1 && path[i+1] == "0" {
			items, _ := m[k].([]any)
			first, _ := firstOf(items).(map[string]any)
			first = clone(first)
			m[k] = append([]any{first}, items[min(1, len(items)):]...)
			m = first
			i++
			continue
		}
		inner, _ := m[k].(map[string]any)
		inner = clone(inner)
		m[k] = inner
		m = inner
	}
	m[path[len(path)-1]] = v
	return out
}

func firstOf(items []any) any {
	if len(items) == 0 {
		return nil
	}
	return items[0]
}

func clone(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	maps.Copy(out, m)
	return out
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 120 {
		return string(b[:117]) + "..."
	}
	return string(b)
}

// TestSpecPathRules: a queue name or job id is accepted by the service
// exactly when the spec's path parameter (its pattern, as ECMA-262, and
// lengths) accepts it; a refused one is 400 EMQINVALID.
func TestSpecPathRules(t *testing.T) {
	doc, err := openapi3.NewLoader().LoadFromData(api.Spec)
	if err != nil {
		t.Fatal(err)
	}
	getJob := doc.Paths.Value("/queues/{queue}/jobs/{id}").Get
	spec := map[string]*openapi3.Schema{}
	for _, p := range getJob.Parameters {
		if p.Value.In == "path" {
			spec[p.Value.Name] = p.Value.Schema.Value
		}
	}
	h := newHarness(t, redistest.Client(t))
	q := redistest.Queue(t)
	names := []string{"a", "a.b_c-9", "...", ".", "..a", "a:b", "a b", "é", "batch", "Batch", "order:1",
		strings.Repeat("a", 100), strings.Repeat("a", 101), strings.Repeat("i", 128), strings.Repeat("i", 129)}
	for _, name := range names {
		for param, path := range map[string]string{
			"queue": "/queues/" + url.PathEscape(name),
			"id":    jobPath(q, url.PathEscape(name)),
		} {
			ok := specAccepts(t, spec[param], name)
			rep := h.do(t, http.MethodGet, path, nil)
			refused := rep.Status == http.StatusBadRequest
			if ok == refused || (refused && !strings.Contains(string(rep.Body), `"code":"EMQINVALID"`)) {
				t.Errorf("%s %q: the spec accepts it: %v; GET %s answered %s", param, name, ok, path, rep)
			}
		}
	}
}

// specAccepts reports whether the string schema s accepts v: its lengths
// (in characters) and its pattern, as ECMA-262.
func specAccepts(t *testing.T, s *openapi3.Schema, v string) bool {
	t.Helper()
	n := uint64(utf8.RuneCountInString(v))
	if n < s.MinLength || (s.MaxLength != nil && n > *s.MaxLength) {
		return false
	}
	if s.Pattern == "" {
		t.Fatalf("the path parameter has no pattern")
	}
	ok, err := regexp2.MustCompile(s.Pattern, regexp2.ECMAScript).MatchString(v)
	return ok && err == nil
}
