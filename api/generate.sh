#!/usr/bin/env bash
# Regenerates api/openapi.yaml (OpenAPI 3.1) from the swag annotations of the
# handlers in internal/http. swag is pinned as a Go tool in go.mod, so every
# run uses the same version; api/specfix then spells the two schema forms swag
# cannot make (nullable fields, any-JSON fields, the shared answers, the open
# default and the signature headers) as 3.1 does. Then oapi-codegen (pinned as
# a Go tool in go.mod) writes the Go client of api/goclient from it. CI fails
# when either is stale; `bash api/lint` lints the spec and `bash api/clients`
# has ogen generate and build a client from it.
set -euo pipefail
cd "$(dirname "$0")/.."
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
go tool swag init --quiet --v3.1 --parseInternal --outputTypes yaml \
	--dir internal/http --generalInfo server.go --output "$out" >/dev/null
go run ./api/specfix <"$out/swagger.yaml" >"$out/openapi.yaml"
mv "$out/openapi.yaml" api/openapi.yaml
go tool oapi-codegen -config api/goclient/oapi-codegen.yaml api/openapi.yaml
