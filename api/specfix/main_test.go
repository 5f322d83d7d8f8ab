package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestRunSpellsTheMarkers turns each marker into its 3.1 form, and drops
// the schemas only the $ref beside a oneOf named (Merged, then OnlyMerged).
func TestRunSpellsTheMarkers(t *testing.T) {
	in := `components:
  schemas:
    Job:
      properties:
        payload:
          type: object
          x-any-json: true
        next_cursor:
          description: null on the last page
          type: string
          x-nullable: true
      type: object
    Page:
      properties:
        results:
          items:
            $ref: '#/components/schemas/Merged'
            oneOf:
              - $ref: '#/components/schemas/Job'
          type: array
    Merged:
      properties:
        inner:
          $ref: '#/components/schemas/OnlyMerged'
    OnlyMerged:
      type: object
paths:
  /page:
    get:
      responses:
        "200":
          description: OK
          content:
            application/json:
              schema:
                $ref: '#/components/schemas/Page'
        "500":
          description: its own (addShared adds none)
`
	want := `components:
  schemas:
    Job:
      properties:
        payload:
          example:
            to: ada@example.com
        next_cursor:
          description: null on the last page
          type: [string, "null"]
      type: object
    Page:
      properties:
        results:
          items:
            oneOf:
              - $ref: '#/components/schemas/Job'
          type: array
paths:
  /page:
    get:
      responses:
        "200":
          description: OK
          content:
            application/json:
              schema:
                $ref: '#/components/schemas/Page'
        "500":
          description: its own (addShared adds none)
`
	var out bytes.Buffer
	if err := run(strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestRunRefusesNullableWithoutType(t *testing.T) {
	in := "components:\n  schemas:\n    A:\n      x-nullable: true\n"
	if err := run(strings.NewReader(in), &bytes.Buffer{}); err == nil {
		t.Error("x-nullable on a schema without a type: no error, want one")
	}
}
