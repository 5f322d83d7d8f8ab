// Command specfix finishes the OpenAPI 3.1 spec that swag writes: it reads
// the spec on stdin and writes it on stdout with the schema forms swag
// cannot make turned into their 3.1 spelling, each asked for by a struct
// tag on a DTO field:
//
//   - `extensions:"x-nullable"`: the field is null at times (a last page's
//     next_cursor): its type T becomes [T, "null"];
//   - `extensions:"x-any-json"`: the field holds any JSON value (a payload,
//     a result, progress): its schema loses its type, which in 3.1 means any
//     value, null included. (A list of the six types says the same, but
//     oapi-codegen and ogen stop on it, and openapi-typescript types it so
//     that an object payload does not compile without a flag.)
//   - `oneOf:"A,B"`: the field (or each item) is one of A and B. swag also
//     leaves the $ref of the field's Go type beside the oneOf, which would
//     have to match too: the $ref goes, and so does a component schema that
//     nothing refers to any more.
//
// It also adds the responses every operation gives alike (shared.go), so
// that the handlers' annotations say only what is their own, and says the
// security swag cannot (security.go): the open default, and the HMAC
// signature as the headers a client computes; and closes the request
// schemas to unknown fields, as the service does (closed.go); and names the
// shapes swag writes out more than once (shapes.go): the job states, and
// CompleteResponse as a Job with its next jobs; and gives every JSON body
// an example (examples.go).
//
// api/generate.sh runs it on swag's output; nothing else edits the spec.
package main

import (
	"bytes"
	"fmt"
	"io"
	"os"

	"gopkg.in/yaml.v3"
)

func main() {
	if err := run(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "specfix:", err)
		os.Exit(1)
	}
}

func run(in io.Reader, out io.Writer) error {
	var doc yaml.Node
	if err := yaml.NewDecoder(in).Decode(&doc); err != nil {
		return err
	}
	if err := fix(&doc); err != nil {
		return err
	}
	if err := addShared(&doc); err != nil {
		return err
	}
	if err := fixSecurity(&doc); err != nil {
		return err
	}
	closeRequests(&doc)
	patternNames(&doc)
	if err := nameJobState(&doc); err != nil {
		return err
	}
	if err := completeAsJob(&doc); err != nil {
		return err
	}
	if err := addExamples(&doc); err != nil {
		return err
	}
	dropUnused(&doc)
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return err
	}
	_, err := out.Write(buf.Bytes())
	return err
}

// fix rewrites every mapping under n that carries one of the markers.
func fix(n *yaml.Node) error {
	if n.Kind == yaml.MappingNode {
		if err := fixSchema(n); err != nil {
			return err
		}
	}
	for _, child := range n.Content {
		if err := fix(child); err != nil {
			return err
		}
	}
	return nil
}

// fixSchema applies the markers of one schema and removes them.
func fixSchema(m *yaml.Node) error {
	if isTrue(take(m, "x-any-json")) {
		take(m, "type") // no type: any JSON value, null included
	}
	if value(m, "oneOf") != nil {
		take(m, "$ref")
	}
	if isTrue(take(m, "x-nullable")) {
		typ := value(m, "type")
		if typ == nil || typ.Kind != yaml.ScalarNode {
			return fmt.Errorf("line %d: x-nullable on a schema without a single type", m.Line)
		}
		setType(m, typ.Value, "null")
	}
	return nil
}

// setType sets the type of schema m to the list types, in flow style:
// [string, "null"].
func setType(m *yaml.Node, types ...string) {
	list := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
	for _, t := range types {
		n := &yaml.Node{Kind: yaml.ScalarNode, Value: t}
		if t == "null" {
			n.Style = yaml.DoubleQuotedStyle // a bare null would be YAML's null
		}
		list.Content = append(list.Content, n)
	}
	if typ := value(m, "type"); typ != nil {
		*typ = *list
		return
	}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: "type"}, list)
}

// dropUnused removes the component schemas that no $ref names, until none
// is left: a schema only an unused one named goes too.
func dropUnused(doc *yaml.Node) {
	schemas := path(doc.Content[0], "components", "schemas")
	if schemas == nil {
		return
	}
	for {
		used := map[string]bool{}
		refs(doc, used)
		before := len(schemas.Content)
		for i := 0; i+1 < len(schemas.Content); {
			if used["#/components/schemas/"+schemas.Content[i].Value] {
				i += 2
				continue
			}
			schemas.Content = append(schemas.Content[:i], schemas.Content[i+2:]...)
		}
		if len(schemas.Content) == before {
			return
		}
	}
}

// refs adds to used every $ref under n.
func refs(n *yaml.Node, used map[string]bool) {
	if n.Kind == yaml.MappingNode {
		if ref := value(n, "$ref"); ref != nil {
			used[ref.Value] = true
		}
	}
	for _, child := range n.Content {
		refs(child, used)
	}
}

// path follows keys down from mapping n; nil when one is missing.
func path(n *yaml.Node, keys ...string) *yaml.Node {
	for _, k := range keys {
		if n = value(n, k); n == nil {
			return nil
		}
	}
	return n
}

// value is the value of key in mapping m, nil when absent.
func value(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// take removes key from mapping m and returns its value, nil when absent.
func take(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			v := m.Content[i+1]
			m.Content = append(m.Content[:i], m.Content[i+2:]...)
			return v
		}
	}
	return nil
}

func isTrue(n *yaml.Node) bool { return n != nil && n.Value == "true" }
