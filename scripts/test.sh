#!/usr/bin/env bash
# Installs what the tests need, then runs the checks and the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
	echo "gofmt would change: $unformatted" >&2
	exit 1
fi
go vet ./...
go test -timeout 40m ./...
