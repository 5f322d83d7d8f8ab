package main

import "gopkg.in/yaml.v3"

// The names the service takes (internal/keyspace), as patterns: a queue
// (and a schedule) name of [A-Za-z0-9._-], a job id and a group name of
// [A-Za-z0-9._:-], none only dots (a client rewrites "." and ".." path
// segments), and an id never "batch" (it names a route). Their lengths are
// the parameters' own minLength and maxLength.
const (
	queuePattern = `^[A-Za-z0-9._-]*[A-Za-z0-9_-][A-Za-z0-9._-]*$`
	idPattern    = `^(?!batch$)[A-Za-z0-9._:-]*[A-Za-z0-9_:-][A-Za-z0-9._:-]*$`
	groupPattern = `^[A-Za-z0-9._:-]*[A-Za-z0-9_:-][A-Za-z0-9._:-]*$`
	// newIDPattern is the id of a job an enqueue names: an id, not
	// starting "batch:" (kept for batches' callback jobs).
	newIDPattern = `^(?!batch$)(?!batch:)[A-Za-z0-9._:-]*[A-Za-z0-9_:-][A-Za-z0-9._:-]*$`
)

// patternNames gives every queue, schedule name, job id and group path
// parameter, and every id field of a request schema, its pattern: swag
// cannot write one on a parameter.
func patternNames(doc *yaml.Node) {
	root := doc.Content[0]
	walk(path(root, "paths"), func(m *yaml.Node) {
		in, name, schema := value(m, "in"), value(m, "name"), value(m, "schema")
		if in == nil || in.Value != "path" || name == nil || schema == nil {
			return
		}
		switch name.Value {
		case "queue", "name":
			setScalar(schema, "pattern", queuePattern)
		case "group":
			setScalar(schema, "pattern", groupPattern)
		case "id":
			setScalar(schema, "pattern", idPattern)
		}
	})
	for s, pattern := range map[string]string{"EnqueueRequest": newIDPattern, "CompleteItem": idPattern, "CreateBatchRequest": idPattern} {
		if id := path(root, "components", "schemas", s, "properties", "id"); id != nil {
			setScalar(id, "pattern", pattern)
		}
	}
}

// walk calls fn on every mapping under n.
func walk(n *yaml.Node, fn func(m *yaml.Node)) {
	if n == nil {
		return
	}
	if n.Kind == yaml.MappingNode {
		fn(n)
	}
	for _, child := range n.Content {
		walk(child, fn)
	}
}

// setScalar sets key of mapping m to the string v, keeping m's keys sorted
// as swag writes them.
func setScalar(m *yaml.Node, key, v string) {
	if old := value(m, key); old != nil {
		old.Value = v
		return
	}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: key}, &yaml.Node{Kind: yaml.ScalarNode, Value: v, Style: yaml.SingleQuotedStyle})
	sortMapping(m)
}
