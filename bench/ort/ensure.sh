#!/usr/bin/env bash
# Installs onnxruntime-node, the version bench/ort/package.json pins, into
# bench/ort/node_modules (its CPU library only: ONNXRUNTIME_NODE_INSTALL=skip)
# unless that version is there already. The benches that race onnxruntime
# (bench/onnxruntime.sh, bench/range.sh) run it first.
set -euo pipefail
cd "$(dirname "$0")"
want=$(sed -n 's/.*"onnxruntime-node": "\([^"]*\)".*/\1/p' package.json)
have=$(sed -n 's/^  "version": "\([^"]*\)".*/\1/p' node_modules/onnxruntime-node/package.json 2>/dev/null || true)
if [ "$have" != "$want" ]; then
	echo "ort/ensure.sh: installing onnxruntime-node $want into bench/ort/node_modules (CPU library only)" >&2
	ONNXRUNTIME_NODE_INSTALL=skip npm ci --no-audit --no-fund --loglevel=error >&2
fi
