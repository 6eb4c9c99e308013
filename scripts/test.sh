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
# The onnxruntime race is a shell script and node programs: check that they
# parse, and lint the script where shellcheck is installed (not required).
bash -n bench/onnxruntime.sh
if command -v node >/dev/null; then
	for f in bench/ort/*.mjs; do node --check "$f"; done
fi
if command -v shellcheck >/dev/null; then
	shellcheck bench/onnxruntime.sh
fi
go vet ./...
# deps.sh installed clang-16 and PoCL: the GPU tests must run, not skip.
export TESSERA_REQUIRE_GPU_TOOLS=1
# deps.sh installed gcc-aarch64-linux-gnu and qemu-user: the aarch64 checks must run.
export TESSERA_REQUIRE_CROSS=1
# deps.sh installed python3-numpy: the Python module's test must run.
export TESSERA_REQUIRE_PYTHON=1
go test -timeout 40m ./...
bash scripts/quickstart.sh # the README's quick start, run as written in a fresh copy; the docs' links
# The runtime's hostile suite (tsrt/hostile_test.go) once more, the Go side
# under the race detector; it prints "runtime hostile: N cases, C crashes, W
# silent wrong answers" and fails unless both are 0.
hostile=$(mktemp)
if ! go test -race -count=1 -v -run 'TestHostile$|TestConcurrentRuns|TestTwoModels' ./tsrt/ >"$hostile" 2>&1; then
	cat "$hostile"
	rm -f "$hostile"
	exit 1
fi
grep -E '^(runtime hostile:|ok)' "$hostile"
rm -f "$hostile"
