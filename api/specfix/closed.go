package main

import (
	"strings"

	"gopkg.in/yaml.v3"
)

// closeRequests sets additionalProperties: false on every object schema a
// request body reaches (through $refs, properties and items) that no answer
// reaches: the service refuses a request with an unknown field (400
// EMQINVALID), and says so; an answer's schemas stay open, so that a client
// generated today still reads the answers of a service that adds a field.
func closeRequests(doc *yaml.Node) {
	root := doc.Content[0]
	schemas := path(root, "components", "schemas")
	paths := path(root, "paths")
	if schemas == nil || paths == nil {
		return
	}
	inRequest, inAnswer := map[string]bool{}, map[string]bool{}
	for i := 1; i < len(paths.Content); i += 2 {
		item := paths.Content[i]
		for j := 1; j < len(item.Content); j += 2 {
			op := item.Content[j]
			if body := value(op, "requestBody"); body != nil {
				reach(body, schemas, inRequest)
			}
			if answers := value(op, "responses"); answers != nil {
				reach(answers, schemas, inAnswer)
			}
		}
	}
	for name := range inRequest {
		if s := value(schemas, name); s != nil && !inAnswer[name] && isObject(s) && value(s, "additionalProperties") == nil {
			s.Content = append(s.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: "additionalProperties"},
				&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: "false"})
		}
	}
}

// reach adds to seen every component schema named by a $ref under n, and
// every one those name in turn.
func reach(n, schemas *yaml.Node, seen map[string]bool) {
	if n.Kind == yaml.MappingNode {
		if ref := value(n, "$ref"); ref != nil {
			name, ok := strings.CutPrefix(ref.Value, "#/components/schemas/")
			if ok && !seen[name] {
				seen[name] = true
				if s := value(schemas, name); s != nil {
					reach(s, schemas, seen)
				}
			}
		}
	}
	for _, child := range n.Content {
		reach(child, schemas, seen)
	}
}

func isObject(s *yaml.Node) bool {
	t := value(s, "type")
	return t != nil && t.Value == "object"
}
