package main

import (
	"fmt"

	"gopkg.in/yaml.v3"
)

// The service is open until keys are set (EMQ_API_KEYS), and then takes a
// bearer key or an HMAC signature. swag can say neither the open default
// nor a signature that a client computes, so the handlers name both
// schemes (@Security BearerAuth, @Security Signature) and fixSecurity
// rewrites them: each such operation may be called with no key at all, or
// with a bearer key; the signature becomes two optional headers that say
// how to compute it (a generated client that took it for an API key would
// send the raw key in it); the Signature scheme goes.
const (
	timestampParam = `
description: 'With X-EMQ-Signature, instead of a bearer key: the Unix time in seconds at which the request was signed, within 5 minutes of the service''s clock.'
in: header
name: X-EMQ-Timestamp
required: false
schema:
  type: string
  pattern: '^[0-9]{1,12}$'
  example: '1764620797'`
	signatureParam = `
description: 'Instead of a bearer key: sha256= and the hex HMAC-SHA256, under a key of EMQ_API_KEYS, of "<X-EMQ-Timestamp>.<METHOD>.<path and query>.<body>". Each signature is accepted once: a sender that retries signs again.'
in: header
name: X-EMQ-Signature
required: false
schema:
  type: string
  pattern: '^sha256=[0-9a-f]{64}$'
  example: sha256=3f1c0e9b4a7d2c5e8f6a1b0d9c8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c1d0e`
	securityAnyOrBearer = `
- {}
- BearerAuth: []`
)

// fixSecurity rewrites the operations that name the Signature scheme, and
// drops the scheme.
func fixSecurity(doc *yaml.Node) error {
	root := doc.Content[0]
	schemes := path(root, "components", "securitySchemes")
	if schemes == nil || take(schemes, "Signature") == nil {
		return nil // nothing names it
	}
	params, err := componentParameters(root)
	if err != nil {
		return err
	}
	for _, p := range []struct{ name, text string }{{"SignatureTimestamp", timestampParam}, {"Signature", signatureParam}} {
		if err := setNode(params, p.name, p.text); err != nil {
			return err
		}
	}
	sortMapping(params)
	paths := path(root, "paths")
	for i := 1; paths != nil && i < len(paths.Content); i += 2 {
		item := paths.Content[i]
		for j := 0; j+1 < len(item.Content); j += 2 {
			op := item.Content[j+1]
			if !namesSignature(value(op, "security")) {
				continue
			}
			if err := setNode(op, "security", securityAnyOrBearer); err != nil {
				return err
			}
			if err := addParamRefs(op, "SignatureTimestamp", "Signature"); err != nil {
				return fmt.Errorf("%s %s: %w", item.Content[j].Value, paths.Content[i-1].Value, err)
			}
		}
	}
	return nil
}

// namesSignature reports whether a security list names the Signature scheme.
func namesSignature(security *yaml.Node) bool {
	if security == nil || security.Kind != yaml.SequenceNode {
		return false
	}
	for _, req := range security.Content {
		if value(req, "Signature") != nil {
			return true
		}
	}
	return false
}

// componentParameters is components.parameters, made when absent.
func componentParameters(root *yaml.Node) (*yaml.Node, error) {
	components := value(root, "components")
	if components == nil {
		return nil, fmt.Errorf("no components")
	}
	if p := value(components, "parameters"); p != nil {
		return p, nil
	}
	p := &yaml.Node{Kind: yaml.MappingNode}
	components.Content = append(components.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: "parameters"}, p)
	sortMapping(components)
	return p, nil
}

// addParamRefs appends $refs to components.parameters names to op's
// parameters.
func addParamRefs(op *yaml.Node, names ...string) error {
	params := value(op, "parameters")
	if params == nil {
		params = &yaml.Node{Kind: yaml.SequenceNode}
		op.Content = append(op.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: "parameters"}, params)
	}
	for _, name := range names {
		var n yaml.Node
		if err := yaml.Unmarshal([]byte("$ref: '#/components/parameters/"+name+"'"), &n); err != nil {
			return err
		}
		params.Content = append(params.Content, n.Content[0])
	}
	return nil
}

// setNode sets key of mapping m to the YAML text, replacing what is there.
func setNode(m *yaml.Node, key, text string) error {
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(text), &n); err != nil {
		return err
	}
	if v := value(m, key); v != nil {
		*v = *n.Content[0]
		return nil
	}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: key}, n.Content[0])
	return nil
}
