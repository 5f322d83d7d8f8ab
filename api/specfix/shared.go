package main

import (
	"fmt"
	"slices"

	"gopkg.in/yaml.v3"
)

// The answers many operations give alike. addShared adds them, so that a
// handler's annotations say only what is its own (its 400, 403, 404, 409,
// its successes): 500 to every operation; 401 (with WWW-Authenticate) and
// 503 (with Retry-After) to every operation that takes a key; 413 and 415 to
// every operation that takes a body. A response an operation declares
// itself is kept as it is.
const (
	internalResponse = `
content:
  application/problem+json:
    schema:
      $ref: '#/components/schemas/Problem'
description: 'EMQINTERNAL: a bug, logged with the request id'`
	unauthorizedResponse = `
content:
  application/problem+json:
    schema:
      $ref: '#/components/schemas/Problem'
description: 'EMQUNAUTHORIZED: no key, a wrong one, or a bad signature'
headers:
  WWW-Authenticate:
    description: the Bearer scheme, realm echo_mq
    schema:
      type: string`
	unavailableResponse = `
content:
  application/problem+json:
    schema:
      $ref: '#/components/schemas/Problem'
description: EMQUNAVAILABLE
headers:
  Retry-After:
    description: seconds to wait before trying again
    schema:
      type: integer`
	tooLargeResponse = `
content:
  application/problem+json:
    schema:
      $ref: '#/components/schemas/Problem'
description: EMQTOOLARGE`
	mediaTypeResponse = `
content:
  application/problem+json:
    schema:
      $ref: '#/components/schemas/Problem'
description: EMQMEDIATYPE`
)

// methods are the keys of a path item that are operations.
var methods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// addShared adds the shared responses to every operation of doc, each
// operation's responses then in order of status.
func addShared(doc *yaml.Node) error {
	paths := path(doc.Content[0], "paths")
	if paths == nil {
		return nil
	}
	for i := 1; i < len(paths.Content); i += 2 {
		item := paths.Content[i]
		for j := 0; j+1 < len(item.Content); j += 2 {
			if !slices.Contains(methods, item.Content[j].Value) {
				continue
			}
			if err := addSharedTo(item.Content[j+1]); err != nil {
				return fmt.Errorf("%s %s: %w", item.Content[j].Value, paths.Content[i-1].Value, err)
			}
		}
	}
	return nil
}

func addSharedTo(op *yaml.Node) error {
	responses := value(op, "responses")
	if responses == nil {
		return fmt.Errorf("no responses")
	}
	add := map[string]string{"500": internalResponse}
	if value(op, "security") != nil {
		add["401"], add["503"] = unauthorizedResponse, unavailableResponse
	}
	if value(op, "requestBody") != nil {
		add["413"], add["415"] = tooLargeResponse, mediaTypeResponse
	}
	for status, text := range add {
		if value(responses, status) != nil {
			continue
		}
		var n yaml.Node
		if err := yaml.Unmarshal([]byte(text), &n); err != nil {
			return err
		}
		responses.Content = append(responses.Content,
			&yaml.Node{Kind: yaml.ScalarNode, Value: status, Tag: "!!str", Style: yaml.DoubleQuotedStyle}, n.Content[0])
	}
	sortMapping(responses)
	return nil
}

// sortMapping orders mapping m's entries by key.
func sortMapping(m *yaml.Node) {
	type entry struct{ k, v *yaml.Node }
	entries := make([]entry, 0, len(m.Content)/2)
	for i := 0; i+1 < len(m.Content); i += 2 {
		entries = append(entries, entry{m.Content[i], m.Content[i+1]})
	}
	slices.SortStableFunc(entries, func(a, b entry) int {
		switch {
		case a.k.Value < b.k.Value:
			return -1
		case a.k.Value > b.k.Value:
			return 1
		}
		return 0
	})
	m.Content = m.Content[:0]
	for _, e := range entries {
		m.Content = append(m.Content, e.k, e.v)
	}
}
