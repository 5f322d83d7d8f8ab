package http

import (
	"net/http"
	"strings"
)

// view says which members of a job an answer shows.
type view uint8

const (
	// whole is every member but the token.
	whole view = iota
	// claimed is every member and the token: a job just claimed.
	claimed
	// minimal leaves out payload and result: a job finished under
	// Prefer: return=minimal.
	minimal
)

// finishedView is the view of the jobs a complete, fail or batch complete
// finished: minimal when r prefers return=minimal (RFC 7240), which the
// answer then says in Preference-Applied; whole otherwise. Either way the
// answer varies with Prefer. Call it only for an answer that succeeded: a
// problem is the same whatever the request prefers.
func finishedView(w http.ResponseWriter, r *http.Request) view {
	w.Header().Add("Vary", "Prefer")
	if preference(r.Header, "return") != "minimal" {
		return whole
	}
	w.Header().Set("Preference-Applied", "return=minimal")
	return minimal
}

// preference is the value of the preference name in h's Prefer headers
// (RFC 7240 section 2), "" when none names it or it has no value. Names
// compare without case and values with it; a quoted value is unquoted;
// the first preference of a name holds, and its parameters (after ";")
// are ignored.
func preference(h http.Header, name string) string {
	for _, line := range h.Values("Prefer") {
		for rest := line; rest != ""; {
			var pref string
			pref, rest = cutUnquoted(rest, ',')
			pref, _ = cutUnquoted(pref, ';')
			token, value, _ := strings.Cut(pref, "=") // a token holds no "="
			if strings.EqualFold(strings.Trim(token, " \t"), name) {
				return unquote(strings.Trim(value, " \t"))
			}
		}
	}
	return ""
}

// cutUnquoted slices s around its first sep outside a quoted-string.
func cutUnquoted(s string, sep byte) (before, after string) {
	quoted := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case quoted && c == '\\':
			i++ // a quoted-pair: the next byte is taken as it is
		case c == '"':
			quoted = !quoted
		case c == sep && !quoted:
			return s[:i], s[i+1:]
		}
	}
	return s, ""
}

// unquote is the text of the quoted-string v, or v when it is a token.
func unquote(v string) string {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return v
	}
	v = v[1 : len(v)-1]
	if !strings.Contains(v, `\`) {
		return v
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] == '\\' && i+1 < len(v) {
			i++
		}
		b.WriteByte(v[i])
	}
	return b.String()
}
