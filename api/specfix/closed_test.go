package main

import (
	"bytes"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// TestCloseRequestsAndNames: a schema only a request reaches is closed to
// unknown fields, one an answer reaches too stays open; queue and id path
// parameters and a request's id get the names' patterns.
func TestCloseRequestsAndNames(t *testing.T) {
	in := `components:
  schemas:
    EnqueueRequest:
      properties:
        id:
          type: string
        backoff:
          $ref: '#/components/schemas/Backoff'
      type: object
    Backoff:
      type: object
    Job:
      properties:
        backoff:
          $ref: '#/components/schemas/Shared'
      type: object
    Shared:
      type: object
paths:
  /queues/{queue}/jobs/{id}:
    post:
      parameters:
        - in: path
          name: queue
          schema:
            type: string
        - in: path
          name: id
          schema:
            type: string
      requestBody:
        content:
          application/json:
            schema:
              $ref: '#/components/schemas/EnqueueRequest'
      responses:
        "200":
          content:
            application/json:
              schema:
                $ref: '#/components/schemas/Job'
        "500":
          description: its own
`
	var out bytes.Buffer
	if err := run(strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	root := doc.Content[0]
	for name, closed := range map[string]bool{"EnqueueRequest": true, "Backoff": true, "Job": false} {
		ap := path(root, "components", "schemas", name, "additionalProperties")
		if got := ap != nil && ap.Value == "false"; got != closed {
			t.Errorf("%s closed: %v, want %v", name, got, closed)
		}
	}
	if got := path(root, "components", "schemas", "EnqueueRequest", "properties", "id", "pattern"); got == nil || got.Value != newIDPattern {
		t.Errorf("EnqueueRequest.id pattern = %v", got)
	}
	params := path(root, "paths", "/queues/{queue}/jobs/{id}", "post", "parameters")
	for i, want := range []string{queuePattern, idPattern} {
		if got := path(params.Content[i], "schema", "pattern"); got == nil || got.Value != want {
			t.Errorf("parameter %d pattern = %v, want %s", i, got, want)
		}
	}
}
