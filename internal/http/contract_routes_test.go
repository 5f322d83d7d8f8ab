package http

import (
	"sort"
	"testing"
)

// Every route of the API table is an operation of api/openapi.yaml, and
// every operation of the spec is a route of the table (or a probe): a route
// added without its annotations, or an annotation left behind, fails here
// even before a test calls it.
func TestEveryRouteIsInTheSpec(t *testing.T) {
	c := mustContract(t)
	// The probes, and /metrics (routed unless EMQ_METRICS=off), are not in
	// the API table.
	inTable := map[string]bool{"GET /healthz": true, "GET /readyz": true, "GET /metrics": true}
	for _, rt := range (&server{}).apiRoutes() {
		key := rt.method + " " + rt.pattern
		inTable[key] = true
		path := c.doc.Paths.Value(rt.pattern)
		if path == nil || path.GetOperation(rt.method) == nil {
			t.Errorf("route %s is not in api/openapi.yaml: annotate its handler and run api/generate.sh", key)
		}
	}
	var extra []string
	for pattern, item := range c.doc.Paths.Map() {
		for method := range item.Operations() {
			if !inTable[method+" "+pattern] {
				extra = append(extra, method+" "+pattern)
			}
		}
	}
	sort.Strings(extra)
	for _, key := range extra {
		t.Errorf("api/openapi.yaml describes %s, which the service does not route", key)
	}
}
