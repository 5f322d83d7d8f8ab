// Package examples holds workers and producers in other languages than Go
// (python/, node/, shell/), each a single file a user copies, and the test
// that runs every one of them against the real service on a real
// redis-server in CI (go test ./examples). It has no Go code to import.
package examples
