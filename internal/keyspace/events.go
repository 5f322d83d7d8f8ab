package keyspace

// Events is the key of the queue's event stream: a Redis Stream to which the
// scripts append one entry per state change, in the same atomic step.
func (q Queue) Events() string { return q.base + "events" }
