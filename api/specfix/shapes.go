package main

import (
	"slices"

	"gopkg.in/yaml.v3"
)

// jobStates are a job's states, as the spec's enum lists them.
var jobStates = []string{"pending", "active", "delayed", "waiting", "completed", "dead", "cancelled"}

// nameJobState makes the job states one component schema, JobState, that
// every place listing them refers to, where swag writes the enum out at
// each: a generated client then has one type for a job's state.
func nameJobState(doc *yaml.Node) error {
	root := doc.Content[0]
	schemas := path(root, "components", "schemas")
	if schemas == nil {
		return nil
	}
	found := false
	walk(root, func(m *yaml.Node) {
		if !isStateEnum(m) {
			return
		}
		found = true
		take(m, "enum")
		take(m, "type")
		m.Content = append([]*yaml.Node{{Kind: yaml.ScalarNode, Value: "$ref"},
			{Kind: yaml.ScalarNode, Value: "#/components/schemas/JobState", Style: yaml.SingleQuotedStyle}}, m.Content...)
	})
	if !found {
		return nil
	}
	if err := setNode(schemas, "JobState", `
description: 'A job''s state: pending (claimable), active (leased to a holder), delayed (until its run_at), waiting (for its dependencies), or finished: completed, dead or cancelled.'
enum: [pending, active, delayed, waiting, completed, dead, cancelled]
type: string`); err != nil {
		return err
	}
	sortMapping(schemas)
	return nil
}

// isStateEnum reports whether m is a string schema whose enum is exactly
// the job states.
func isStateEnum(m *yaml.Node) bool {
	enum, typ := value(m, "enum"), value(m, "type")
	if enum == nil || enum.Kind != yaml.SequenceNode || typ == nil || typ.Value != "string" {
		return false
	}
	var values []string
	for _, v := range enum.Content {
		values = append(values, v.Value)
	}
	slices.Sort(values)
	want := slices.Clone(jobStates)
	slices.Sort(want)
	return slices.Equal(values, want)
}

// completeAsJob writes CompleteResponse as what it is, a Job and its next
// jobs (allOf), where swag copies every field of Job into it.
func completeAsJob(doc *yaml.Node) error {
	schemas := path(doc.Content[0], "components", "schemas")
	if schemas == nil || value(schemas, "CompleteResponse") == nil || value(schemas, "Job") == nil {
		return nil
	}
	next := path(schemas, "CompleteResponse", "properties", "next")
	if next == nil {
		return nil
	}
	var out yaml.Node
	if err := yaml.Unmarshal([]byte(`
allOf:
  - $ref: '#/components/schemas/Job'
  - properties:
      next: {}
    type: object
description: 'The completed job; with claim-next, next holds the jobs claimed in the same step, each with its token.'`), &out); err != nil {
		return err
	}
	m := out.Content[0]
	*path(m, "allOf").Content[1].Content[1].Content[1] = *next
	return setNode(schemas, "CompleteResponse", mustYAML(m))
}

func mustYAML(n *yaml.Node) string {
	b, err := yaml.Marshal(n)
	if err != nil {
		panic(err)
	}
	return string(b)
}
