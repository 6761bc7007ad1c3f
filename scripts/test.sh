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
# does not track. The race detector needs cgo and a C compiler; without one the tests
# still run, and say so.
race=-race
if [ "$(go env CGO_ENABLED)" != "1" ] || ! command -v "$(go env CC)" >/dev/null 2>&1; then
	echo "no C compiler for cgo: running the tests without -race"
	race=
fi
go test -count=1 $race work
