package main

import (
	"strings"

	"gopkg.in/yaml.v3"
)

// anyJSONExamples are the examples of the any-JSON fields, by name: swag
// has none to give a schema without a type.
var anyJSONExamples = map[string]any{
	"payload":  map[string]any{"to": "ada@example.com"},
	"result":   map[string]any{"sent": true},
	"progress": map[string]any{"pct": 50},
}

// addExamples gives every JSON request body and every JSON 2xx answer an
// example, made of its schema's field examples (required fields, and those
// with an example), so that a client author sees a whole body and the
// spec's rules test can send it.
func addExamples(doc *yaml.Node) error {
	root := doc.Content[0]
	schemas := path(root, "components", "schemas")
	if schemas == nil {
		return nil
	}
	for i := 1; i < len(schemas.Content); i += 2 {
		props := value(schemas.Content[i], "properties")
		for j := 0; props != nil && j+1 < len(props.Content); j += 2 {
			p := props.Content[j+1]
			if value(p, "type") == nil && value(p, "$ref") == nil && value(p, "allOf") == nil && value(p, "example") == nil {
				if ex, ok := anyJSONExamples[props.Content[j].Value]; ok {
					if err := setValue(p, "example", ex); err != nil {
						return err
					}
				}
			}
		}
	}
	paths := path(root, "paths")
	for i := 1; paths != nil && i < len(paths.Content); i += 2 {
		item := paths.Content[i]
		for j := 1; j < len(item.Content); j += 2 {
			op := item.Content[j]
			media := []*yaml.Node{path(op, "requestBody", "content", "application/json")}
			if answers := value(op, "responses"); answers != nil {
				for k := 0; k+1 < len(answers.Content); k += 2 {
					if strings.HasPrefix(answers.Content[k].Value, "2") {
						media = append(media, path(answers.Content[k+1], "content", "application/json"))
					}
				}
			}
			for _, m := range media {
				if m == nil || value(m, "example") != nil || value(m, "schema") == nil {
					continue
				}
				ex := compose(value(m, "schema"), schemas, 0)
				if ex == nil {
					continue
				}
				if err := setValue(m, "example", ex); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// compose is an example value of schema s: its example, or one made of its
// parts.
func compose(s, schemas *yaml.Node, depth int) any {
	if depth > 8 {
		return nil
	}
	if ex := value(s, "example"); ex != nil {
		var v any
		if ex.Decode(&v) == nil {
			return v
		}
	}
	if ref := value(s, "$ref"); ref != nil {
		name, _ := strings.CutPrefix(ref.Value, "#/components/schemas/")
		if target := value(schemas, name); target != nil {
			return compose(target, schemas, depth+1)
		}
		return nil
	}
	if all := value(s, "allOf"); all != nil {
		out := map[string]any{}
		for _, part := range all.Content {
			if m, ok := compose(part, schemas, depth+1).(map[string]any); ok {
				for k, v := range m {
					out[k] = v
				}
			}
		}
		return out
	}
	if one := value(s, "oneOf"); one != nil && len(one.Content) > 0 {
		return compose(one.Content[0], schemas, depth+1)
	}
	if enum := value(s, "enum"); enum != nil && len(enum.Content) > 0 {
		return enum.Content[0].Value
	}
	typ := ""
	if t := value(s, "type"); t != nil {
		typ = t.Value
	}
	switch typ {
	case "object":
		out := map[string]any{}
		props := value(s, "properties")
		required := map[string]bool{}
		if req := value(s, "required"); req != nil {
			for _, r := range req.Content {
				required[r.Value] = true
			}
		}
		for i := 0; props != nil && i+1 < len(props.Content); i += 2 {
			name, p := props.Content[i].Value, props.Content[i+1]
			if required[name] || value(p, "example") != nil {
				out[name] = compose(p, schemas, depth+1)
			}
		}
		return out
	case "array":
		if items := value(s, "items"); items != nil {
			return []any{compose(items, schemas, depth+1)}
		}
		return []any{}
	case "integer", "number":
		return 1
	case "boolean":
		return false
	case "string":
		return "text"
	}
	return nil
}

// setValue sets key of mapping m to the YAML of v.
func setValue(m *yaml.Node, key string, v any) error {
	var n yaml.Node
	if err := n.Encode(v); err != nil {
		return err
	}
	if old := value(m, key); old != nil {
		*old = n
		return nil
	}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: key}, &n)
	sortMapping(m)
	return nil
}
