package http

import (
	"github.com/dlclark/regexp2"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The spec's patterns are ECMA-262 regular expressions, as JSON Schema
// says (the id pattern refuses "batch" with a lookahead, which Go's regexp
// lacks), so the contract checks compile them with regexp2 in its
// ECMAScript mode, as a client's validator in JavaScript or ogen's does.

// ecmaRegex is a compiled pattern for kin-openapi and jsonschema.
type ecmaRegex struct{ re *regexp2.Regexp }

func compileECMA(expr string) (*ecmaRegex, error) {
	re, err := regexp2.Compile(expr, regexp2.ECMAScript)
	if err != nil {
		return nil, err
	}
	return &ecmaRegex{re}, nil
}

// MatchString reports whether s holds a match; a match that regexp2 gives
// up on (a timeout, never set here) counts as none.
func (r *ecmaRegex) MatchString(s string) bool {
	ok, err := r.re.MatchString(s)
	return ok && err == nil
}

func (r *ecmaRegex) String() string { return r.re.String() }

// kinRegex is compileECMA for kin-openapi.
func kinRegex(expr string) (openapi3.RegexMatcher, error) { return compileECMA(expr) }

// schemaRegex is compileECMA for jsonschema.
func schemaRegex(expr string) (jsonschema.Regexp, error) { return compileECMA(expr) }
