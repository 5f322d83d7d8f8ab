package http

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"unicode"

	"github.com/go-chi/chi/v5"
	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/go-playground/validator/v10"

	"github.com/echo-mq/echo_mq/internal/batch"
	"github.com/echo-mq/echo_mq/internal/keyspace"
)

// newValidator returns the one validator of the service: it reports JSON
// field names, and knows job ids.
func newValidator() *validator.Validate {
	v := validator.New(validator.WithRequiredStructEnabled())
	v.RegisterTagNameFunc(func(f reflect.StructField) string {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			return ""
		}
		return name
	})
	_ = v.RegisterValidation("jobid", func(fl validator.FieldLevel) bool {
		return keyspace.ValidJobID(fl.Field().String())
	})
	_ = v.RegisterValidation("groupname", func(fl validator.FieldLevel) bool {
		return keyspace.ValidGroupName(fl.Field().String())
	})
	_ = v.RegisterValidation("queuename", func(fl validator.FieldLevel) bool {
		return keyspace.ValidQueueName(fl.Field().String())
	})
	_ = v.RegisterValidation("batchid", func(fl validator.FieldLevel) bool {
		return validBatchID(fl.Field().String())
	})
	_ = v.RegisterValidation("token", func(fl validator.FieldLevel) bool {
		return validToken(fl.Field().Int())
	})
	_ = v.RegisterValidation("backoffcap", func(fl validator.FieldLevel) bool {
		b, ok := fl.Parent().Interface().(BackoffRequest)
		return !ok || b.DelayMs == nil || fl.Field().Int() >= *b.DelayMs
	})
	return v
}

// The rules of names, as a refusal quotes them: each says all that the
// keyspace validator it stands beside refuses, "not only dots" included
// ("." and ".." are path segments that clients rewrite).
const (
	queueNameRule = "must be 1 to 100 characters of A-Z a-z 0-9 . _ -, not only dots"
	jobIDRule     = `must be 1 to 128 characters of A-Z a-z 0-9 . _ : -, not only dots, and not "batch"`
	groupNameRule = "must be 1 to 128 characters of A-Z a-z 0-9 . _ : -, not only dots"
	batchIDRule   = `must be 1 to 122 characters of A-Z a-z 0-9 . _ : -, not only dots, and not "batch"`
)

// tokenRule is what a token that is there but cannot be one is told: a
// claim gives out tokens of 1 and up, so 0 or less is a wrong token, not
// a missing one (that "is required").
const tokenRule = "must be a token a claim gave out (a positive integer)"

// validToken reports whether a token that was sent could be one a claim
// gave out.
func validToken(token int64) bool { return token > 0 }

// decode reads r's JSON body into dst strictly, then validates it: a body
// that a gateway in front and this service could read two ways is refused,
// so unknown fields, field names that differ from dst's only by case,
// a member name twice in one object (at any depth, payloads included),
// invalid UTF-8 (lone surrogate escapes too) and trailing data are all 400
// (docs/design.md#hostile-clients). An empty body reads as {}. Nothing is
// changed anywhere when it fails.
func (s *server) decode(r *http.Request, dst any) error {
	body, err := readBody(r)
	if err != nil {
		return bodyError(err)
	}
	if len(bytes.Trim(body, " \t\r\n")) == 0 { // JSON's whitespace, no other
		body = []byte("{}")
	} else if err := checkMediaType(r); err != nil {
		return err
	}
	if depth := jsonDepth(body); depth > MaxJSONDepth {
		return invalid(fmt.Sprintf("the body nests %d levels deep, more than %d", depth, MaxJSONDepth))
	}
	if err := jsonv2.Unmarshal(body, dst, strictJSON); err != nil {
		return decodeError(body, err)
	}
	return s.validate(dst)
}

// strictJSON holds decode's options: encoding/json/v2's defaults, spelled
// out, and unknown members refused.
var strictJSON = jsonv2.JoinOptions(
	jsonv2.RejectUnknownMembers(true),
	jsonv2.MatchCaseInsensitiveNames(false),
	jsontext.AllowDuplicateNames(false),
	jsontext.AllowInvalidUTF8(false),
)

// readBody reads r's body whole: into a buffer of the declared length when
// there is one (limitBody has capped it), else growing as it reads.
func readBody(r *http.Request) ([]byte, error) {
	if r.ContentLength <= 0 {
		return io.ReadAll(r.Body)
	}
	body := make([]byte, r.ContentLength)
	if _, err := io.ReadFull(r.Body, body); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF // shorter than it said
		}
		return nil, err
	}
	return body, nil
}

// jsonDepth is how deeply the JSON text nests objects and arrays, found in
// one pass over the bytes before anything decodes them.
func jsonDepth(body []byte) int {
	depth, deepest := 0, 0
	outsideStrings(body, func(c byte) bool {
		switch c {
		case '{', '[':
			depth++
			deepest = max(deepest, depth)
		case '}', ']':
			depth--
		}
		return true
	})
	return deepest
}

// outsideStrings calls fn with each byte of the JSON text v that is not
// inside a string (quotes included), until fn returns false, and reports
// whether it went through every byte.
func outsideStrings(v []byte, fn func(c byte) bool) bool {
	inString, escaped := false, false
	for _, c := range v {
		switch {
		case escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		case inString:
		case !fn(c):
			return false
		}
	}
	return true
}

// bodyError explains a failure to read a request body: 413 past the limit.
func bodyError(err error) error {
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return &requestError{code: CodeTooLarge, detail: fmt.Sprintf("the body is over the %d-byte limit", tooLarge.Limit)}
	}
	return invalid("cannot read the body: " + err.Error())
}

// checkMediaType refuses a body that does not say it is JSON.
func checkMediaType(r *http.Request) error {
	if r.Header.Get("Content-Type") == "application/json" {
		return nil // the usual case, without parsing
	}
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json")) {
		return nil
	}
	return &requestError{code: CodeMediaType,
		detail: fmt.Sprintf("the body must be application/json, not %q", r.Header.Get("Content-Type"))}
}

// decodeError explains a failure of decode's Unmarshal of body, naming
// the field when it can.
func decodeError(body []byte, err error) error {
	var syntax *jsontext.SyntacticError
	var semantic *jsonv2.SemanticError
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF):
		return invalid("malformed JSON: the body ends early")
	case errors.As(err, &syntax):
		return syntaxError(body, syntax)
	case errors.As(err, &semantic) && semantic.JSONPointer == "":
		return invalid("the body must be a JSON object, not " + kindName(semantic.JSONKind))
	case errors.As(err, &semantic) && errors.Is(semantic.Err, jsonv2.ErrUnknownName):
		return invalid("the body has an unknown field",
			FieldError{Field: fieldName(semantic.JSONPointer), Message: unknownMessage(semantic)})
	case errors.As(err, &semantic):
		got := kindName(semantic.JSONKind)
		if semantic.JSONKind == '0' && len(semantic.JSONValue) > 0 {
			got += " " + string(semantic.JSONValue) // 1.0 for an integer: say which
		}
		return invalid("a field has the wrong type",
			FieldError{Field: fieldName(semantic.JSONPointer), Message: fmt.Sprintf("must be %s, not %s", typeName(semantic.GoType), got)})
	default:
		return invalid("malformed JSON: " + err.Error())
	}
}

// syntaxError explains a body that is not strict JSON. jsontext exports no
// error for invalid UTF-8 or a lone surrogate escape: its text names them.
func syntaxError(body []byte, e *jsontext.SyntacticError) error {
	field, what := fieldName(e.JSONPointer), strings.TrimPrefix(e.Err.Error(), "jsontext: ")
	switch {
	case errors.Is(e.Err, jsontext.ErrDuplicateName):
		return invalid("the body names a member twice in one object: it could be read two ways",
			fieldAt(field, "is named twice in its object")...)
	case strings.Contains(what, "UTF-8"):
		return invalid(fmt.Sprintf("the body is not valid UTF-8 (at byte %d)", e.ByteOffset), fieldAt(field, "holds invalid UTF-8")...)
	case strings.Contains(what, "surrogate"):
		return invalid(fmt.Sprintf("the body escapes half a surrogate pair, which is no character (at byte %d): %s", e.ByteOffset, what),
			fieldAt(field, `holds a lone surrogate escape (\ud800 to \udfff), which is no character`)...)
	case e.JSONPointer == "" && e.ByteOffset <= int64(len(body)) && jsontext.Value(body[:e.ByteOffset]).IsValid():
		return invalid("malformed JSON: the body has data after its JSON value")
	}
	return invalid(fmt.Sprintf("malformed JSON at byte %d: %s", e.ByteOffset, what), fieldAt(field, what)...)
}

// fieldAt is the FieldError of field, none for the body itself ("").
func fieldAt(field, message string) []FieldError {
	if field == "" {
		return nil
	}
	return []FieldError{{Field: field, Message: message}}
}

// fieldName names the member at JSON Pointer p as the validator names
// fields: /jobs/3/payload is jobs[3].payload. Inside a payload an object
// member named with digits alone reads as an index too.
func fieldName(p jsontext.Pointer) string {
	var b strings.Builder
	for tok := range p.Tokens() {
		if tok != "" && strings.Trim(tok, "0123456789") == "" {
			b.WriteString("[" + tok + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(tok)
	}
	return b.String()
}

// unknownMessage says that a member is not a field of its object, and
// which field it is, spelled otherwise (v1 matched names whatever their
// case; a gateway may not).
func unknownMessage(e *jsonv2.SemanticError) string {
	name, t := e.JSONPointer.LastToken(), e.GoType
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t != nil && t.Kind() == reflect.Struct {
		for f := range t.Fields() {
			if tag, _, _ := strings.Cut(f.Tag.Get("json"), ","); f.IsExported() && tag != "" && strings.EqualFold(tag, name) {
				return fmt.Sprintf("is not a known field (names are case-sensitive: %q)", tag)
			}
		}
	}
	return "is not a known field"
}

// kindName says a JSON kind the way typeName says a Go type's.
func kindName(k jsontext.Kind) string {
	switch k {
	case '"':
		return "string"
	case '0':
		return "number"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	case '{':
		return "object"
	case '[':
		return "array"
	default:
		return "JSON"
	}
}

// typeName says a Go type the way a JSON user would.
func typeName(t reflect.Type) string {
	if t == nil {
		return "of another type"
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Slice:
		return "an array"
	case reflect.Pointer:
		return typeName(t.Elem())
	default:
		return "an object"
	}
}

// validate runs the struct tags of dst and lists every failed field.
func (s *server) validate(dst any) error {
	err := s.validator.Struct(dst)
	var verrs validator.ValidationErrors
	if !errors.As(err, &verrs) {
		return err
	}
	fields := make([]FieldError, 0, len(verrs))
	for _, fe := range verrs {
		_, path, _ := strings.Cut(fe.Namespace(), ".")
		fields = append(fields, FieldError{Field: path, Message: fieldMessage(fe)})
	}
	return invalid("the request has invalid fields", fields...)
}

// fieldMessage says what a failed validation tag asks for.
func fieldMessage(fe validator.FieldError) string {
	switch fe.Tag() {
	case "required":
		return "is required"
	case "min":
		if fe.Kind() == reflect.Slice {
			return "must have at least " + fe.Param() + " items"
		}
		return "must be at least " + fe.Param()
	case "max":
		if fe.Kind() == reflect.Slice {
			return "must have at most " + fe.Param() + " items"
		}
		return "must be at most " + fe.Param()
	case "gt":
		return "must be greater than " + fe.Param()
	case "oneof":
		return "must be one of: " + fe.Param()
	case "gtefield":
		return "must be at least " + snakeCase(fe.Param())
	case "backoffcap":
		return "must be at least delay_ms"
	case "jobid":
		return jobIDRule
	case "groupname":
		return groupNameRule
	case "queuename":
		return queueNameRule
	case "batchid":
		return batchIDRule
	case "token":
		return tokenRule
	default:
		return "fails " + fe.Tag()
	}
}

// queueParam reads and validates the {queue} path parameter.
func queueParam(r *http.Request) (string, error) {
	queue := pathParam(r, "queue")
	if !keyspace.ValidQueueName(queue) {
		return "", invalid("invalid queue name", FieldError{Field: "queue", Message: queueNameRule})
	}
	return queue, nil
}

// groupParam reads and validates the {group} path parameter.
func groupParam(r *http.Request) (string, error) {
	group := pathParam(r, "group")
	if !keyspace.ValidGroupName(group) {
		return "", invalid("invalid group name", FieldError{Field: "group", Message: groupNameRule})
	}
	return group, nil
}

// pathParam is the path parameter name, percent-decoded: chi matches the
// escaped path, and clients escape characters such as ':' in a job id
// (JavaScript's encodeURIComponent, Python's quote with safe=""). A bad
// escape is kept as sent, so that validation refuses it.
func pathParam(r *http.Request, name string) string {
	raw := chi.URLParam(r, name)
	if v, err := url.PathUnescape(raw); err == nil {
		return v
	}
	return raw
}

// jobParams reads and validates the {queue} and {id} path parameters.
func jobParams(r *http.Request) (queue, id string, err error) {
	if queue, err = queueParam(r); err != nil {
		return "", "", err
	}
	id = pathParam(r, "id")
	if !keyspace.ValidJobID(id) {
		return "", "", invalid("invalid job id", FieldError{Field: "id", Message: jobIDRule})
	}
	return queue, id, nil
}

// compactJSON is a JSON value with insignificant whitespace removed; its
// numbers and strings are kept exactly as sent (a 20-digit integer keeps
// every digit). nil stays nil (absent).
func compactJSON(v json.RawMessage) json.RawMessage {
	if v == nil || isCompact(v) {
		return v // most clients send compact JSON: no copy
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, v); err != nil {
		return v
	}
	return buf.Bytes()
}

// isCompact reports whether the JSON text v has no whitespace outside its
// strings, in one pass and no allocation.
func isCompact(v []byte) bool {
	return outsideStrings(v, func(c byte) bool {
		return c != ' ' && c != '\t' && c != '\n' && c != '\r'
	})
}

// valueField names a JSON value of a request for an error: a top-level
// field (index < 0) or a field of the index-th job of a batch. It is only
// formatted when a value is refused.
type valueField struct {
	index int
	name  string
}

func topField(name string) valueField { return valueField{index: -1, name: name} }

func (f valueField) String() string {
	if f.index < 0 {
		return f.name
	}
	return fmt.Sprintf("jobs[%d].%s", f.index, f.name)
}

// checkSize refuses a JSON value over the service's limit with 413.
func (s *server) checkSize(field valueField, v json.RawMessage) error {
	if len(v) <= s.cfg.MaxValueBytes {
		return nil
	}
	return &requestError{code: CodeTooLarge,
		detail: fmt.Sprintf("%s is %d bytes, over the %d-byte limit", field, len(v), s.cfg.MaxValueBytes)}
}

// boolQuery reads an optional boolean query parameter.
func boolQuery(r *http.Request, name string) (bool, error) {
	switch v := r.URL.Query().Get(name); v {
	case "", "false", "0":
		return false, nil
	case "true", "1":
		return true, nil
	default:
		return false, invalid("invalid query parameter", FieldError{Field: name, Message: "must be true or false"})
	}
}

// tokenQuery reads the required token query parameter: absent (or
// empty) "is required", anything else that is not a positive integer is
// a wrong token.
func tokenQuery(r *http.Request) (int64, error) {
	text := r.URL.Query().Get("token")
	if text == "" {
		return 0, invalid("invalid query parameter", FieldError{Field: "token", Message: "is required"})
	}
	token, err := strconv.ParseInt(text, 10, 64)
	if err != nil || !validToken(token) {
		return 0, invalid("invalid query parameter", FieldError{Field: "token", Message: tokenRule})
	}
	return token, nil
}

// snakeCase turns a Go field name into its JSON name: DelayMs -> delay_ms.
func snakeCase(goName string) string {
	var b strings.Builder
	for i, r := range goName {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// maxBatchID is the longest batch id: its callback job's id,
// "batch:<id>", is a job id of at most 128.
const maxBatchID = 128 - len(batch.CallbackPrefix)

// validBatchID reports whether id may name a batch: a job id (its
// callback's id holds it) of at most maxBatchID.
func validBatchID(id string) bool {
	return len(id) <= maxBatchID && keyspace.ValidJobID(id)
}
