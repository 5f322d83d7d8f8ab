// Package goclient is a Go client of the echo_mq API generated from
// api/openapi.yaml by oapi-codegen v2 (api/generate.sh writes
// client.gen.go; CI fails when it is stale). It is here to prove that a
// client a generator makes from the spec as shipped compiles and works a
// queue (worker_test.go); to write a worker in Go, use the hand-made
// package client, whose Work is the whole worker loop.
package goclient
