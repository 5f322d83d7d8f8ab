// Package examples holds workers and producers in other languages than Go
// (python/, node/, shell/ and typescript/), each a small program a user
// copies, and the test that runs every one of them against the real service
// on a real redis-server in CI (go test ./examples): through a proxy that
// injects 502s, 503s and refusals, with jobs cancelled or removed under the
// worker, and with signals at every step. The service and the proxy come
// from internal/servicetest, as the Go client's tests' do. It has no Go
// code to import.
package examples
