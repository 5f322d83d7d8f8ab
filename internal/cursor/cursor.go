// Package cursor is the opaque cursor of a listing paged by a sorted set
// (a state's jobs, a queue's batches): the last (score, id) a page gave,
// base64url encoded so that clients pass it back as they got it and a
// word made up is not taken for one.
package cursor

import (
	"encoding/base64"
	"strconv"
	"strings"

	"github.com/echo-mq/echo_mq/internal/keyspace"
)

// Encode is the cursor of a page that ends at (score, id); "" when score
// is "" (the last page: no next one).
func Encode(score, id string) string {
	if score == "" {
		return ""
	}
	return base64.RawURLEncoding.EncodeToString([]byte(score + "/" + id))
}

// Decode reads Encode's cursor: "" is the first page ("", "", true); ok is
// false for a cursor Encode did not make (an integer score and a valid id).
func Decode(cursor string) (score, id string, ok bool) {
	if cursor == "" {
		return "", "", true
	}
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	score, id, cut := strings.Cut(string(raw), "/")
	if _, perr := strconv.ParseInt(score, 10, 64); err != nil || perr != nil || !cut || !keyspace.ValidJobID(id) {
		return "", "", false
	}
	return score, id, true
}
