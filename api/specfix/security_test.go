package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestFixSecurity: an operation that names both schemes may then be called
// with no key or a bearer key, and takes the signature as two optional
// headers; the Signature scheme goes; an operation with no security keeps
// none.
func TestFixSecurity(t *testing.T) {
	in := `components:
  securitySchemes:
    BearerAuth:
      scheme: bearer
      type: http
    Signature:
      in: header
      name: X-EMQ-Signature
      type: apiKey
paths:
  /jobs:
    post:
      responses:
        "201":
          description: created
      security:
        - BearerAuth: []
        - Signature: []
  /healthz:
    get:
      responses:
        "200":
          description: ok
`
	var out bytes.Buffer
	if err := run(strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"security:\n        - {}\n        - BearerAuth: []\n",
		"$ref: '#/components/parameters/SignatureTimestamp'",
		"$ref: '#/components/parameters/Signature'",
		"name: X-EMQ-Timestamp",
		"name: X-EMQ-Signature",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in\n%s", want, got)
		}
	}
	if strings.Contains(got, "type: apiKey") || strings.Count(got, "security:") != 1 {
		t.Errorf("the Signature scheme stayed, or /healthz gained security:\n%s", got)
	}
	// The same input gives the same spec every time (CI compares it with
	// the committed one), and the output is a fixed point.
	for range 20 {
		var again bytes.Buffer
		if err := run(strings.NewReader(in), &again); err != nil {
			t.Fatal(err)
		}
		if again.String() != got {
			t.Fatalf("a second run differs:\n%s\nfrom\n%s", again.String(), got)
		}
	}
	var twice bytes.Buffer
	if err := run(strings.NewReader(got), &twice); err != nil {
		t.Fatal(err)
	}
	if twice.String() != got {
		t.Errorf("specfix of its own output changes it:\n%s", twice.String())
	}
}
