package http

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/echo-mq/echo_mq/internal/job"
	"github.com/echo-mq/echo_mq/internal/lease"
)

// Every answer that holds jobs is written here, by hand, not by
// writeJSON: encoding/json reflects over the DTOs, validates and compacts
// every payload, result and progress again (they were compacted when
// stored) and makes a string of every timestamp. The writers send the very
// bytes writeJSON sends for the DTOs that define the spec (Job,
// JobList, JobPage, CompleteResponse, CompleteBatchResponse):
// jobjson_test.go checks it and fuzzes it. That is Job's fields in the
// order and with the omission rules of its tags, strings escaped as
// encoding/json escapes them with HTML escaping off, and json.Encoder's
// trailing newline. A stored value that is JSON with whitespace is
// compacted, as encoding/json would; one that is not JSON at all (a row
// written by hand) is answered null, so that an answer is always whole.

// writeJob answers j.
func writeJob(w http.ResponseWriter, status int, j job.Job) { writeJobAs(w, status, j, whole) }

// writeJobAs answers j as v shows it.
func writeJobAs(w http.ResponseWriter, status int, j job.Job, v view) {
	b := getBuf(sizeOf(j))
	*b = appendJob(*b, j, v)
	writeBuf(w, status, b)
}

// writeJobList answers jobs as a JobList, without tokens (a claim's
// answer, with them, is writeClaimed's).
func writeJobList(w http.ResponseWriter, jobs []job.Job) {
	b := getBuf(sizeOf(jobs...))
	*b = append(*b, `{"jobs":`...)
	*b = appendJobs(*b, jobs, whole)
	*b = append(*b, '}')
	writeBuf(w, http.StatusOK, b)
}

// writeClaimed answers a claim as a ClaimResponse: the jobs with their
// tokens, and retry_after_ms and held_by when a limit held it back.
func writeClaimed(w http.ResponseWriter, c lease.Claimed) {
	b := getBuf(sizeOf(c.Jobs...) + 64)
	*b = append(*b, `{"jobs":`...)
	*b = appendJobs(*b, c.Jobs, claimed)
	if c.Held != "" {
		*b = strconv.AppendInt(append(*b, `,"retry_after_ms":`...), max(c.RetryAfter.Milliseconds(), 1), 10)
		*b = appendString(append(*b, `,"held_by":`...), c.Held)
	}
	*b = append(*b, '}')
	writeBuf(w, http.StatusOK, b)
}

// writeJobPage answers a page of a job listing as a JobPage: next_cursor
// null when next is "".
func writeJobPage(w http.ResponseWriter, jobs []job.Job, next string) {
	b := getBuf(sizeOf(jobs...) + 2*len(next) + 32)
	*b = append(*b, `{"jobs":`...)
	*b = appendJobs(*b, jobs, whole)
	*b = append(*b, `,"next_cursor":`...)
	if next == "" {
		*b = append(*b, "null"...)
	} else {
		*b = appendString(*b, next)
	}
	*b = append(*b, '}')
	writeBuf(w, http.StatusOK, b)
}

// writeCompleted answers a complete as a CompleteResponse: done as v shows
// it, with the next jobs when withNext.
func writeCompleted(w http.ResponseWriter, done job.Job, v view, next []job.Job, withNext bool) {
	b := getBuf(sizeOf(done) + sizeOf(next...))
	*b = append(*b, '{')
	*b = appendJobFields(*b, done, v)
	*b = appendNext(*b, next, withNext)
	writeBuf(w, http.StatusOK, b)
}

// writeCompleteBatch answers a batch complete as a CompleteBatchResponse:
// each outcome the job as v shows it, or the refusal of the job batch
// named in its place (the problem at instance, with the job's id), then
// the next jobs when withNext.
func writeCompleteBatch(w http.ResponseWriter, instance string, batch []lease.Completion, outcomes []lease.Completed,
	v view, next []job.Job, withNext bool) {
	size := sizeOf(next...)
	for _, o := range outcomes {
		size += sizeOf(o.Job)
	}
	b := getBuf(size)
	*b = append(*b, `{"results":[`...)
	for i, o := range outcomes {
		if i > 0 {
			*b = append(*b, ',')
		}
		if o.Err != nil {
			*b = appendRefusal(*b, batch[i].ID, instance, o.Err)
		} else {
			*b = appendJob(*b, o.Job, v)
		}
	}
	*b = append(*b, ']')
	*b = appendNext(*b, next, withNext)
	writeBuf(w, http.StatusOK, b)
}

// appendRefusal appends the CompleteRefusal of job id, which a batch
// refused with err: its problem at instance, and the id.
func appendRefusal(b []byte, id, instance string, err error) []byte {
	p := newProblem(codeOf(err), err.Error())
	p.Instance = instance
	data, _ := oneLineJSON(CompleteRefusal{ID: id, Problem: p}) // strings and an int always encode
	return append(b, data...)
}

// sizeOf is about how many bytes jobs take as JSON, so that a pooled
// buffer grows once at most.
func sizeOf(jobs ...job.Job) (size int) {
	for _, j := range jobs {
		size += 400 + len(j.Payload) + len(j.Result) + len(j.Progress) + len(j.LastError)
	}
	return size
}

// appendJobs appends jobs as a JSON array, never null, each as v shows it.
func appendJobs(b []byte, jobs []job.Job, v view) []byte {
	b = append(b, '[')
	for i, j := range jobs {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJob(b, j, v)
	}
	return append(b, ']')
}

// appendNext closes an object, with the next jobs (and their tokens) when
// withNext: CompleteResponse's and CompleteBatchResponse's "next,omitzero".
func appendNext(b []byte, next []job.Job, withNext bool) []byte {
	if withNext {
		b = append(b, `,"next":`...)
		b = appendJobs(b, next, claimed)
	}
	return append(b, '}')
}

// appendJob appends j as a Job, as v shows it.
func appendJob(b []byte, j job.Job, v view) []byte {
	return append(appendJobFields(append(b, '{'), j, v), '}')
}

// appendJobFields appends j's members that v shows, in the order of Job's
// fields, each omitted where its tag says omitempty: the object is left
// open, for CompleteResponse's next.
func appendJobFields(b []byte, j job.Job, v view) []byte {
	b = appendString(append(b, `"id":`...), j.ID)
	b = appendString(append(b, `,"queue":`...), j.Queue)
	b = appendString(append(b, `,"state":`...), j.State)
	if v != minimal {
		b = appendValue(append(b, `,"payload":`...), j.Payload) // null when there is none
		b = appendRaw(b, `,"result":`, j.Result)
	}
	b = appendRaw(b, `,"progress":`, j.Progress)
	b = strconv.AppendInt(append(b, `,"priority":`...), int64(j.Priority), 10)
	b = strconv.AppendInt(append(b, `,"attempts":`...), int64(j.Attempts), 10)
	b = strconv.AppendInt(append(b, `,"max_attempts":`...), int64(j.MaxAttempts), 10)
	b = strconv.AppendInt(append(b, `,"stalled":`...), int64(j.Stalled), 10)
	b = appendOmitEmpty(b, `,"last_error":`, j.LastError)
	b = strconv.AppendBool(append(b, `,"cancel_requested":`...), j.CancelRequested)
	b = appendOmitEmpty(b, `,"cancel_reason":`, j.CancelReason)
	b = appendOmitEmpty(b, `,"worker":`, j.Worker)
	b = appendOmitEmpty(b, `,"group":`, j.Group)
	b = appendOmitEmpty(b, `,"dedupe_key":`, j.DedupeKey)
	b = appendStamp(b, `,"expires_at":`, j.ExpiresAt)
	if j.Timeout != 0 {
		b = strconv.AppendInt(append(b, `,"timeout_ms":`...), j.Timeout.Milliseconds(), 10)
	}
	b = appendOmitEmpty(b, `,"traceparent":`, j.Traceparent)
	b = appendOmitEmpty(b, `,"batch_id":`, j.BatchID)
	if len(j.DependsOn) > 0 {
		b = append(b, `,"depends_on":[`...)
		for i, id := range j.DependsOn {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, id)
		}
		b = append(b, `],"on_dependency_failure":`...)
		b = appendString(b, job.OnDependencyFailure(j.RunOnFailure))
	}
	if v == claimed && j.Token != 0 {
		b = strconv.AppendInt(append(b, `,"token":`...), j.Token, 10)
	}
	b = appendStamp(b, `,"created_at":`, j.CreatedAt)
	b = appendStamp(b, `,"run_at":`, j.RunAt)
	b = appendStamp(b, `,"started_at":`, j.StartedAt)
	b = appendStamp(b, `,"lease_expires_at":`, j.LeaseExpiresAt)
	b = appendStamp(b, `,"finished_at":`, j.FinishedAt)
	if j.LogLines != 0 {
		b = strconv.AppendInt(append(b, `,"log_lines":`...), int64(j.LogLines), 10)
	}
	return b
}

// appendRaw appends key and the stored value v; nothing when v is empty.
func appendRaw(b []byte, key string, v json.RawMessage) []byte {
	if len(v) == 0 {
		return b
	}
	return appendValue(append(b, key...), v)
}

// appendValue appends a stored JSON value: as it is when it is compact
// JSON (every value the service stores is), compacted when it is JSON with
// whitespace, null when it is empty or not JSON at all.
func appendValue(b []byte, v json.RawMessage) []byte {
	switch {
	case len(v) > 0 && validCompact(v):
		return append(b, v...)
	case len(v) > 0 && json.Valid(v):
		buf := bytes.NewBuffer(b)
		_ = json.Compact(buf, v) // valid: it compacts
		return buf.Bytes()
	}
	return append(b, "null"...)
}

// appendOmitEmpty appends key and s as a JSON string; nothing when s is "".
func appendOmitEmpty(b []byte, key, s string) []byte {
	if s == "" {
		return b
	}
	return appendString(append(b, key...), s)
}

// stampLayout is stamp's: RFC 3339 with milliseconds, used on UTC times.
const stampLayout = "2006-01-02T15:04:05.000Z07:00"

// appendStamp appends key and t as stamp formats it; nothing for the zero
// time. Years 0 to 9999 are written digit by digit, six times faster than
// AppendFormat, which reads its layout on every call; other years, which
// no row holds, by AppendFormat. Neither writes what a JSON string escapes.
func appendStamp(b []byte, key string, t time.Time) []byte {
	if t.IsZero() {
		return b
	}
	b = append(append(b, key...), '"')
	t = t.UTC()
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return append(t.AppendFormat(b, stampLayout), '"')
	}
	hour, minute, sec := t.Clock()
	ms := t.Nanosecond() / 1e6
	return append(b,
		digit(year/1000), digit(year/100), digit(year/10), digit(year), '-',
		digit(int(month)/10), digit(int(month)), '-', digit(day/10), digit(day), 'T',
		digit(hour/10), digit(hour), ':', digit(minute/10), digit(minute), ':', digit(sec/10), digit(sec),
		'.', digit(ms/100), digit(ms/10), digit(ms), 'Z', '"')
}

// digit is the last decimal digit of n >= 0.
func digit(n int) byte { return byte('0' + n%10) }

// appendString appends s as a JSON string, escaped as encoding/json escapes
// it with SetEscapeHTML(false): \" \\ \b \f \n \r \t, other control bytes as
// \u00XX, U+2028 and U+2029 as \u2028 and \u2029 (JSONP-safe), and each byte
// of invalid UTF-8 as \ufffd.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, `\b`...)
			case '\f':
				b = append(b, `\f`...)
			case '\n':
				b = append(b, `\n`...)
			case '\r':
				b = append(b, `\r`...)
			case '\t':
				b = append(b, `\t`...)
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(append(b, s[start:i]...), `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(append(b, s[start:i]...), '\\', 'u', '2', '0', '2', hex[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	return append(append(b, s[start:]...), '"')
}

// validCompact reports whether v is one JSON value with no space outside
// its strings: a value encoding/json would copy as it is. In one pass with
// no scanner state machine, it accepts nothing json.Valid refuses
// (FuzzJobJSON checks it); nesting deeper than maxRawDepth is left to
// encoding/json.
func validCompact(v []byte) bool {
	end, ok := scanValue(v, 0, 0)
	return ok && end == len(v)
}

const maxRawDepth = 512

// scanValue returns the end of the compact JSON value at v[i:].
func scanValue(v []byte, i, depth int) (int, bool) {
	if i >= len(v) {
		return i, false
	}
	switch c := v[i]; c {
	case '"':
		return scanString(v, i+1)
	case '[', '{':
		return scanNested(v, i, depth)
	case 't':
		return scanLiteral(v, i, "true")
	case 'f':
		return scanLiteral(v, i, "false")
	case 'n':
		return scanLiteral(v, i, "null")
	default:
		return scanNumber(v, i)
	}
}

// scanNested returns the end of the array or object at v[i:].
func scanNested(v []byte, i, depth int) (int, bool) {
	if depth >= maxRawDepth {
		return i, false
	}
	object, end := v[i] == '{', byte(']')
	if object {
		end = '}'
	}
	i++
	if i < len(v) && v[i] == end {
		return i + 1, true
	}
	var ok bool
	for {
		if object {
			if i >= len(v) || v[i] != '"' {
				return i, false
			}
			if i, ok = scanString(v, i+1); !ok || i >= len(v) || v[i] != ':' {
				return i, false
			}
			i++
		}
		if i, ok = scanValue(v, i, depth+1); !ok || i >= len(v) {
			return i, false
		}
		if v[i] == end {
			return i + 1, true
		}
		if v[i] != ',' {
			return i, false
		}
		i++
	}
}

// scanString returns the end of the string whose opening quote is just
// before v[i]. Any byte from 0x20 up may stand in it, as the scanner has it.
func scanString(v []byte, i int) (int, bool) {
	for i < len(v) {
		switch c := v[i]; {
		case c == '"':
			return i + 1, true
		case c < 0x20:
			return i, false
		case c != '\\':
			i++
		case i+1 < len(v) && strings.IndexByte("\"\\/bfnrt", v[i+1]) >= 0:
			i += 2
		case i+5 < len(v) && v[i+1] == 'u' && isHex(v[i+2]) && isHex(v[i+3]) && isHex(v[i+4]) && isHex(v[i+5]):
			i += 6
		default:
			return i, false
		}
	}
	return i, false
}

func isHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c|0x20 && c|0x20 <= 'f' }

// scanNumber returns the end of the number at v[i:]: -?(0|[1-9][0-9]*),
// then maybe a fraction and an exponent.
func scanNumber(v []byte, i int) (int, bool) {
	if i < len(v) && v[i] == '-' {
		i++
	}
	if i >= len(v) || v[i] < '0' || v[i] > '9' {
		return i, false
	}
	if v[i] == '0' {
		i++
	} else {
		i = digits(v, i)
	}
	if i < len(v) && v[i] == '.' {
		start := i + 1
		if i = digits(v, start); i == start {
			return i, false
		}
	}
	if i < len(v) && (v[i] == 'e' || v[i] == 'E') {
		if i++; i < len(v) && (v[i] == '+' || v[i] == '-') {
			i++
		}
		start := i
		if i = digits(v, start); i == start {
			return i, false
		}
	}
	return i, true
}

func digits(v []byte, i int) int {
	for i < len(v) && '0' <= v[i] && v[i] <= '9' {
		i++
	}
	return i
}

func scanLiteral(v []byte, i int, lit string) (int, bool) {
	end := i + len(lit)
	return end, end <= len(v) && string(v[i:end]) == lit
}

// bufPool holds answer buffers; one that grew past maxPooledBuf (a big
// batch) is left to the collector rather than kept.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 4<<10); return &b }}

const maxPooledBuf = 1 << 20

// getBuf is a pooled buffer with room for size bytes.
func getBuf(size int) *[]byte {
	b := bufPool.Get().(*[]byte)
	*b = slices.Grow(*b, size)
	return b
}

// writeBuf answers the JSON text in *b with status as writeJSON does, with
// its trailing newline, in one Write, and gives b back to the pool.
func writeBuf(w http.ResponseWriter, status int, b *[]byte) {
	*b = append(*b, '\n')
	w.Header().Set("Content-Type", "application/json")
	// The whole body is known: a length, not chunks, for any size.
	w.Header().Set("Content-Length", strconv.Itoa(len(*b)))
	w.WriteHeader(status)
	_, _ = w.Write(*b)
	if cap(*b) <= maxPooledBuf {
		*b = (*b)[:0]
		bufPool.Put(b)
	}
}
