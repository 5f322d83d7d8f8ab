package lease

import "fmt"

// MaxDependencies is the most ids a job may depend on.
const MaxDependencies = 100

// DependencyError says which job of an enqueue names dependencies that
// cannot be: Index is its place in the enqueue.
type DependencyError struct {
	Index  int
	Reason string
}

func (e *DependencyError) Error() string {
	return fmt.Sprintf("job %d: %s", e.Index, e.Reason)
}

// CheckDependencies refuses, before anything is written, the dependencies
// of an enqueue's jobs that make a cycle: a job that depends on itself, or
// on a job of the same enqueue that (through others) depends on it. A
// dependency on a job not in the enqueue cannot close a cycle, since that
// job exists and the new ones do not; the script refuses one that is no
// job of the queue. A job with dependencies needs an id (the others name
// it), unless nothing in the enqueue depends on it.
func CheckDependencies(jobs []NewJob) error {
	index := make(map[string]int, len(jobs))
	for i, j := range jobs {
		if j.ID != "" {
			if _, seen := index[j.ID]; !seen {
				index[j.ID] = i
			}
		}
	}
	// Depth-first search over the enqueue's own jobs: 1 while a job is on
	// the path, 2 once all it leads to is known to be acyclic.
	mark := make([]uint8, len(jobs))
	var visit func(i int) bool
	visit = func(i int) bool {
		mark[i] = 1
		for _, d := range jobs[i].DependsOn {
			k, ok := index[d]
			if !ok || mark[k] == 2 {
				continue
			}
			if mark[k] == 1 || !visit(k) {
				return false
			}
		}
		mark[i] = 2
		return true
	}
	for i, j := range jobs {
		seen := make(map[string]bool, len(j.DependsOn))
		for _, d := range j.DependsOn {
			switch {
			case d == j.ID:
				return &DependencyError{Index: i, Reason: "a job cannot depend on itself"}
			case seen[d]:
				return &DependencyError{Index: i, Reason: fmt.Sprintf("names %s twice", d)}
			}
			seen[d] = true
		}
		if mark[i] == 0 && !visit(i) {
			return &DependencyError{Index: i, Reason: "its dependencies make a cycle"}
		}
	}
	return nil
}
