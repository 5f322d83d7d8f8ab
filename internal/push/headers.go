package push

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// The bounds of a target's headers.
const (
	MaxHeaders     = 20
	MaxHeaderBytes = 8 * 1024 // names and values together
)

// reservedHeaders are the header names a target may not set (lower-case):
// the ones each delivery sets itself (its body's type and length, the
// Standard Webhooks headers, its user agent, the trace), and the ones
// that would break the exchange (the host, hop-by-hop headers, an
// encoding the body does not have, an encoding of the answer the
// deliverer would not read). Any "webhook-" name is refused too.
var reservedHeaders = map[string]bool{
	"host": true, "content-type": true, "content-length": true, "content-encoding": true,
	"transfer-encoding": true, "connection": true, "keep-alive": true, "proxy-connection": true,
	"proxy-authenticate": true, "proxy-authorization": true, "te": true, "trailer": true,
	"upgrade": true, "expect": true, "accept-encoding": true, "user-agent": true,
	"traceparent": true, "tracestate": true, "baggage": true,
}

// checkHeaders reports what is wrong with a target's headers: at most
// MaxHeaders, each name an HTTP token that is not reserved and given once
// (case does not matter), each value printable ASCII (spaces and tabs
// too, no CR or LF), all of them at most MaxHeaderBytes.
func checkHeaders(headers map[string]string) error {
	if len(headers) > MaxHeaders {
		return &FieldError{"headers", fmt.Sprintf("must have at most %d headers", MaxHeaders)}
	}
	names := make([]string, 0, len(headers))
	for name := range headers {
		names = append(names, name)
	}
	slices.Sort(names) // the same refusal every time
	size, seen := 0, map[string]bool{}
	for _, name := range names {
		value := headers[name]
		lower := strings.ToLower(name)
		switch {
		case !isToken(name):
			return &FieldError{"headers", fmt.Sprintf("%q is not a header name (an HTTP token)", name)}
		case reservedHeaders[lower] || strings.HasPrefix(lower, "webhook-"):
			return &FieldError{"headers", fmt.Sprintf("%s is set by each delivery, or would break it: it cannot be set", name)}
		case seen[lower]:
			return &FieldError{"headers", fmt.Sprintf("%s is given twice (header names do not differ by case)", name)}
		case !printable(value):
			return &FieldError{"headers", fmt.Sprintf("the value of %s must be printable ASCII, without CR or LF", name)}
		}
		seen[lower] = true
		size += len(name) + len(value)
	}
	if size > MaxHeaderBytes {
		return &FieldError{"headers", fmt.Sprintf("must be at most %d bytes, names and values together", MaxHeaderBytes)}
	}
	return nil
}

// HeaderNames are the names of headers, in their canonical form
// (Authorization, X-Api-Key), sorted: what the service answers of them.
func HeaderNames(headers map[string]string) []string {
	names := make([]string, 0, len(headers))
	for name := range headers {
		names = append(names, http.CanonicalHeaderKey(name))
	}
	slices.Sort(names)
	return names
}

// isToken reports whether s is an HTTP token (RFC 9110, 5.6.2).
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// printable reports whether v is visible ASCII, spaces and tabs.
func printable(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c != '\t' && (c < ' ' || c > '~') {
			return false
		}
	}
	return true
}

// setHeaders puts a target's headers on a delivery's request; the
// delivery's own headers are set after them.
func setHeaders(h http.Header, headers map[string]string) {
	for name, value := range headers {
		h.Set(name, value)
	}
}
