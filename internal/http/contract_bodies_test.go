package http

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"
)

// specURL names api/openapi.yaml inside the schema compiler; it is never
// fetched.
const specURL = "urn:echo-mq:openapi.json"

// bodySchemas checks JSON bodies against the schemas of api/openapi.yaml,
// each compiled once, the first time a body needs it, with the JSON Schema
// 2020-12 validator that kin-openapi itself uses for OpenAPI 3.1 (whose
// schemas are 2020-12 schemas). The whole document is one resource, so a
// schema's $ref to #/components/schemas/... resolves in it.
type bodySchemas struct {
	mu       sync.Mutex
	compiler *jsonschema.Compiler
	compiled map[string]*jsonschema.Schema // by JSON pointer
}

func newBodySchemas(spec []byte) (*bodySchemas, error) {
	var doc any
	if err := yaml.Unmarshal(spec, &doc); err != nil {
		return nil, fmt.Errorf("api/openapi.yaml: %w", err)
	}
	asJSON, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("api/openapi.yaml as JSON: %w", err)
	}
	resource, err := jsonschema.UnmarshalJSON(bytes.NewReader(asJSON))
	if err != nil {
		return nil, err
	}
	compiler := jsonschema.NewCompiler()
	compiler.DefaultDraft(jsonschema.Draft2020)
	compiler.UseRegexpEngine(schemaRegex)
	if err := compiler.AddResource(specURL, resource); err != nil {
		return nil, err
	}
	return &bodySchemas{compiler: compiler, compiled: map[string]*jsonschema.Schema{}}, nil
}

// check validates a JSON body against the schema at the JSON pointer made
// of tokens, e.g. "components", "schemas", "Job".
func (b *bodySchemas) check(body []byte, tokens ...string) error {
	schema, err := b.schema(tokens)
	if err != nil {
		return err
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("the body is not JSON: %w", err)
	}
	return schema.Validate(v)
}

// schema compiles the schema at tokens once.
func (b *bodySchemas) schema(tokens []string) (*jsonschema.Schema, error) {
	escaped := make([]string, len(tokens))
	for i, t := range tokens {
		escaped[i] = strings.NewReplacer("~", "~0", "/", "~1").Replace(t)
	}
	ptr := "/" + strings.Join(escaped, "/")
	b.mu.Lock()
	defer b.mu.Unlock()
	if s, ok := b.compiled[ptr]; ok {
		return s, nil
	}
	s, err := b.compiler.Compile(specURL + "#" + ptr)
	if err != nil {
		return nil, fmt.Errorf("compile the schema at %s: %w", ptr, err)
	}
	b.compiled[ptr] = s
	return s, nil
}
