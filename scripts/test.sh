#!/usr/bin/env bash
# Runs every check and test of the workspace: what CI runs, and what a developer runs
# before pushing.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== go vet"
go vet work

echo "== staticcheck"
go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 work 2>&1 || { echo "staticcheck failed"; exit 1; }

echo "== go test"
# -count=1: the generator check reads files outside its module, which the test cache
# does not track.
go test -count=1 -race work
