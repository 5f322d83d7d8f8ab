package http

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// TestDecodeErrors: each refusal of a body says why, and names the field
// as the validator would (jobs[1].payload), with the messages clients
// have read since encoding/json v1 where the rule is the same.
func TestDecodeErrors(t *testing.T) {
	s := &server{validator: newValidator()}
	for _, c := range []struct {
		body, detail, field, message string
	}{
		{"{\"payload\":\"\xff\xfe\"}", "not valid UTF-8", "payload", "holds invalid UTF-8"},
		{"{\"jobs\":[{\"payload\":1},{\"payload\":{\"a\":[\"\xc3(\"]}}]}", "not valid UTF-8", "jobs[1].payload.a[0]", "holds invalid UTF-8"},
		{"{\"\xff\":1}", "not valid UTF-8 (at byte 2)", "", ""},
		{`{"payload":"\ud800"}`, "half a surrogate pair", "payload", "lone surrogate"},
		{`{"payload":"\udc00\ud800"}`, "half a surrogate pair", "payload", "lone surrogate"},
		{`{"payload":1,"payload":{"evil":1}}`, "twice", "payload", "is named twice in its object"},
		{`{"jobs":[{"payload":1},{"payload":{"a":{"b":1,"b":2}}}]}`, "twice", "jobs[1].payload.a.b", "is named twice in its object"},
		{`{"Payload":2}`, "unknown field", "Payload", `is not a known field (names are case-sensitive: "payload")`},
		{`{"jobs":[{"payload":1,"backoff":{"TYPE":"x"}}]}`, "unknown field", "jobs[0].backoff.TYPE", `(names are case-sensitive: "type")`},
		{`{"jobs":[{"payload":1,"bogus":1}]}`, "unknown field", "jobs[0].bogus", "is not a known field"},
		{`{"jobs":[{"payload":1,"priority":"high"}]}`, "wrong type", "jobs[0].priority", "must be an integer, not string"},
		{`{"jobs":[{"payload":1,"priority":1.0}]}`, "wrong type", "jobs[0].priority", "must be an integer, not number 1.0"},
		{`{"jobs":[{"payload":1,"depends_on":[true]}]}`, "wrong type", "jobs[0].depends_on[0]", "must be a string, not boolean"},
		{`{"jobs":{}}`, "wrong type", "jobs", "must be an array, not object"},
		{`[{"payload":1}]`, "must be a JSON object, not array", "", ""},
		{`{"jobs":[]} {}`, "data after its JSON value", "", ""},
		{`{"jobs":[]}]`, "data after its JSON value", "", ""},
		{`{"jobs":[`, "ends early", "", ""},
		{`{"jobs":[],}`, "malformed JSON at byte 10", "", ""},
		{"{\"jobs\":[{\"payload\":\"\x01\"}]}", "malformed JSON at byte 21", "jobs[0].payload", "control character"},
	} {
		r := httptest.NewRequest("POST", "/", strings.NewReader(c.body))
		r.Header.Set("Content-Type", "application/json")
		var dst any = new(EnqueueRequest)
		if strings.Contains(c.body, `"jobs"`) {
			dst = new(EnqueueBatchRequest)
		}
		err := s.decode(r, dst)
		re, ok := err.(*requestError)
		if !ok || re.code != CodeInvalid || !strings.Contains(re.detail, c.detail) {
			t.Errorf("%q: %v, want EMQINVALID saying %q", c.body, err, c.detail)
			continue
		}
		if c.field == "" && len(re.fields) > 0 ||
			c.field != "" && (len(re.fields) != 1 || re.fields[0].Field != c.field || !strings.Contains(re.fields[0].Message, c.message)) {
			t.Errorf("%q: fields %+v, want %s %q", c.body, re.fields, c.field, c.message)
		}
	}
}

// TestFieldName: a JSON Pointer reads as the validator names fields.
func TestFieldName(t *testing.T) {
	for ptr, want := range map[jsontext.Pointer]string{
		"": "", "/payload": "payload", "/jobs/3/payload": "jobs[3].payload", "/claim/count": "claim.count",
		"/payload/a~1b/0/c~0d": "payload.a/b[0].c~d", "/payload/": "payload.", "/0/a": "[0].a",
	} {
		if got := fieldName(ptr); got != want {
			t.Errorf("fieldName(%q) = %q, want %q", ptr, got, want)
		}
	}
}

// BenchmarkDecode is decode alone on the hot routes' bodies: what each
// request pays to read its body, before any Redis.
func BenchmarkDecode(b *testing.B) {
	payload := `{"to":"ada@example.com","template":"welcome","vars":{"name":"Ada","plan":"pro"},"n":1234567,"x":123}`
	jobs := strings.TrimSuffix(strings.Repeat(`{"payload":`+payload+`},`, 100), ",")
	for _, c := range []struct {
		name string
		body string
		dst  func() any
	}{
		{"enqueue", `{"payload":` + payload + `}`, func() any { return new(EnqueueRequest) }},
		{"enqueue-100", `{"jobs":[` + jobs + `]}`, func() any { return new(EnqueueBatchRequest) }},
		{"claim", `{"count":16,"lease_ms":3600000}`, func() any { return new(ClaimRequest) }},
		{"complete", `{"token":42,"result":{"ok":true,"took_ms":12},"claim":{"count":1}}`, func() any { return new(CompleteRequest) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			s := &server{validator: newValidator()}
			body := []byte(c.body)
			rd := bytes.NewReader(body)
			r := httptest.NewRequest(http.MethodPost, "/", nil)
			r.Header.Set("Content-Type", "application/json")
			r.Body, r.ContentLength = io.NopCloser(rd), int64(len(body))
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				rd.Reset(body)
				if err := s.decode(r, c.dst()); err != nil {
					b.Fatal(fmt.Sprint(err))
				}
			}
		})
	}
}
