package main

import (
	"bytes"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// TestAddSharedResponses: an operation that takes a key and a body gets
// 401, 413, 415, 500 and 503, in order of status among its own; one that
// takes neither gets 500 only; a response an operation declares is kept.
func TestAddSharedResponses(t *testing.T) {
	in := `paths:
  /jobs:
    post:
      requestBody:
        content: {}
      responses:
        "400":
          description: EMQINVALID
        "201":
          description: created
      security:
        - BearerAuth: []
  /readyz:
    get:
      responses:
        "200":
          description: ready
        "503":
          description: its own
`
	var out bytes.Buffer
	if err := run(strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]struct {
			Responses yaml.Node `yaml:"responses"`
		} `yaml:"paths"`
	}
	if err := yaml.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	statuses := func(n yaml.Node) (keys []string, descs map[string]string) {
		descs = map[string]string{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			keys = append(keys, n.Content[i].Value)
			descs[n.Content[i].Value] = value(n.Content[i+1], "description").Value
		}
		return keys, descs
	}
	keys, descs := statuses(doc.Paths["/jobs"]["post"].Responses)
	if got := strings.Join(keys, " "); got != "201 400 401 413 415 500 503" {
		t.Errorf("POST /jobs answers %s", got)
	}
	if descs["400"] != "EMQINVALID" || descs["503"] != "EMQUNAVAILABLE" || !strings.HasPrefix(descs["401"], "EMQUNAUTHORIZED") {
		t.Errorf("POST /jobs descriptions %v", descs)
	}
	if !strings.Contains(out.String(), "WWW-Authenticate") || !strings.Contains(out.String(), "Retry-After") {
		t.Errorf("the shared 401 and 503 lost their headers:\n%s", out.String())
	}
	keys, descs = statuses(doc.Paths["/readyz"]["get"].Responses)
	if got := strings.Join(keys, " "); got != "200 500 503" || descs["503"] != "its own" {
		t.Errorf("GET /readyz answers %s, %v", got, descs)
	}
}
