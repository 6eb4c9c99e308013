#!/usr/bin/env bash
# Installs what Tessera needs on a fresh Debian machine, builds it, and runs
# the main job. Until `tune` lands (issue #5), the main job is the GEMM
# benchmark: the expert schedule against the naive loop and OpenBLAS.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
go build ./...
go run ./bench/gemm -n 512 -rounds 3
