#!/usr/bin/env bash
# Regenerates api/openapi.yaml (OpenAPI 3.1) from the swag annotations of the
# handlers in internal/http. swag is pinned as a Go tool in go.mod, so every
# run uses the same version; CI fails when the committed spec is stale.
set -euo pipefail
cd "$(dirname "$0")/.."
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
go tool swag init --quiet --v3.1 --parseInternal --outputTypes yaml \
	--dir internal/http --generalInfo server.go --output "$out" >/dev/null
mv "$out/swagger.yaml" api/openapi.yaml
