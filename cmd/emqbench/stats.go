package main

import (
	"slices"
	"strings"
	"sync"
	"time"
)

// latencies holds the durations of one goroutine's calls, per route. Each
// goroutine has its own, so recording takes no lock; they are merged once
// the run ends.
type latencies map[string][]time.Duration

func (l latencies) add(route string, d time.Duration) {
	l[route] = append(l[route], d)
}

// merged collects every goroutine's latencies.
type merged struct {
	mu     sync.Mutex
	routes latencies
}

func (m *merged) merge(l latencies) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.routes == nil {
		m.routes = latencies{}
	}
	for route, ds := range l {
		m.routes[route] = append(m.routes[route], ds...)
	}
}

// routeStats is one route's figures over the measured window.
type routeStats struct {
	route    string
	calls    int
	p50, p99 time.Duration
}

// stats sorts each route's samples and reads their percentiles, routes in
// name order.
func (m *merged) stats() []routeStats {
	var out []routeStats
	for route, ds := range m.routes {
		slices.Sort(ds)
		out = append(out, routeStats{route: route, calls: len(ds),
			p50: percentile(ds, 0.50), p99: percentile(ds, 0.99)})
	}
	slices.SortFunc(out, func(a, b routeStats) int { return strings.Compare(a.route, b.route) })
	return out
}

// percentile reads the p-th quantile of sorted samples (nearest rank).
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p*float64(len(sorted))+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}
