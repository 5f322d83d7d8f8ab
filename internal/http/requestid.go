package http

import (
	"net/http"

	"github.com/go-chi/chi/v5/middleware"
)

// maxRequestID is the longest client X-Request-Id kept as the request's id.
const maxRequestID = 128

// checkRequestID drops a client's X-Request-Id that is longer than
// maxRequestID or holds anything but printable ASCII (no spaces, no
// control characters), so that middleware.RequestID, next, makes a fresh
// id: a request id goes into the request's log lines as it is.
func checkRequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id := r.Header.Get(middleware.RequestIDHeader); id != "" && !printableID(id) {
			r.Header.Del(middleware.RequestIDHeader)
		}
		next.ServeHTTP(w, r)
	})
}

// printableID reports whether id may be kept as a request id.
func printableID(id string) bool {
	if len(id) > maxRequestID {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] <= ' ' || id[i] > '~' {
			return false
		}
	}
	return true
}
