package http

import (
	"os"
	"strings"
	"testing"
)

// TestProblemTypesLead: every problem's type links to the README's
// error codes, and every code has its anchor there, so that a client that
// follows a problem's type lands on what it means.
func TestProblemTypesLead(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for code := range kinds {
		p := newProblem(code, "")
		base, anchor, ok := strings.Cut(p.Type, "#")
		if !ok || base != "https://github.com/echo-mq/echo_mq" {
			t.Errorf("%s: type %q does not link to the README", code, p.Type)
		}
		if !strings.Contains(string(readme), `<a id="`+anchor+`"></a>`+"`"+code+"`") {
			t.Errorf("%s: the README has no anchor %q beside the code", code, anchor)
		}
	}
}
