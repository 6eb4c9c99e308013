#!/usr/bin/env bash
# Installs what Tessera needs on a fresh Debian machine, builds it, and runs
# the main job: tuning the small model shipped in testdata/ (a few tasks,
# a few minutes), with its records in tuning.db.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
go build ./...
go run ./cmd/tune --trials 128 --per-round 32 testdata/tiny.onnx
