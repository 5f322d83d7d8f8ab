#!/usr/bin/env bash
# Regenerates api/openapi.yaml (OpenAPI 3.1) from the swag annotations of the
# handlers in internal/http. swag is pinned as a Go tool in go.mod, so every
# run uses the same version; api/specfix then spells the two schema forms swag
# cannot make (nullable fields, any-JSON fields) as 3.1 does. CI fails when the
# committed spec is stale; `bash api/lint` lints it.
set -euo pipefail
cd "$(dirname "$0")/.."
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
go tool swag init --quiet --v3.1 --parseInternal --outputTypes yaml \
	--dir internal/http --generalInfo server.go --output "$out" >/dev/null
go run ./api/specfix <"$out/swagger.yaml" >"$out/openapi.yaml"
mv "$out/openapi.yaml" api/openapi.yaml
