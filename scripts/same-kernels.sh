#!/usr/bin/env bash
# Proves that a change which should not alter generated code did not:
# builds a model set with default schedules at a base revision and at the
# working tree, and compares every generated file (each kernel's C, the
# model's C with its executor, the GPU module) byte for byte.
#
#   scripts/same-kernels.sh [BASE]        (default BASE: HEAD)
#
# The set: the tiny model, ResNet-18, the BERT layer and the BERT encoder
# (cmd/genmodels), the BERT encoder built over B=1..4, S=16..64 (a range
# build: its kernel families), ResNet-18 for x86-64-v3 (the AVX2 code),
# the tiny model for OpenCL (the GPU printer), and Inception v3 from the
# PyTorch zoo where python3 has torch and torchvision (modelgen/zoo). It
# prints one line per model and "same kernels: N files, D differ"; it
# exits 1 when any file differs, naming them.
set -euo pipefail
cd "$(dirname "$0")/.."
base=${1:-HEAD}
work=$(mktemp -d)
trap 'git worktree remove --force "$work/src" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
git worktree add --detach "$work/src" "$base" >/dev/null 2>&1
(cd "$work/src" && go build -o "$work/tune-base" ./cmd/tune)
go build -o "$work/tune-head" ./cmd/tune
go run ./cmd/genmodels -o "$work/models" tiny resnet18 bert_layer bert_encoder bert_encoder_dynamic >/dev/null
py=""
for p in python3 /usr/bin/python3; do
	if "$p" -c "import torch, torchvision" 2>/dev/null; then py=$p; break; fi
done
if [ -n "$py" ]; then
	"$py" modelgen/zoo/export.py -o "$work/models" inception_v3 >/dev/null 2>&1 || py=""
fi
builds=(
	"tiny|tiny.onnx|"
	"resnet18|resnet18.onnx|"
	"resnet18-v3|resnet18.onnx|--cpu x86-64-v3"
	"bert_layer|bert_layer.onnx|"
	"bert_encoder|bert_encoder.onnx|"
	"bert_range|bert_encoder_dynamic.onnx|--range B=1..4 --range S=16..64"
	"tiny-opencl|tiny.onnx|--target opencl"
)
[ -n "$py" ] && [ -f "$work/models/inception_v3.onnx" ] && builds+=("inception_v3|inception_v3.onnx|")
files=0
differ=()
for b in "${builds[@]}"; do
	IFS='|' read -r name model flags <<<"$b"
	for side in base head; do
		# shellcheck disable=SC2086
		"$work/tune-$side" build --no-records $flags "$work/models/$model" -o "$work/out-$side/$name" >"$work/$side-$name.log" 2>&1 ||
			{ echo "$name: the $side build failed:" >&2; tail -5 "$work/$side-$name.log" >&2; exit 1; }
	done
	n=0
	while IFS= read -r f; do
		n=$((n + 1))
		cmp -s "$work/out-base/$name/$f" "$work/out-head/$name/$f" || differ+=("$name/$f")
	done < <(cd "$work/out-base/$name" && find . -name '*.c' -o -name '*.cl' -o -name '*.cu' | sort)
	files=$((files + n))
	echo "$name: $n generated files"
done
echo "same kernels: $files files, ${#differ[@]} differ"
if [ ${#differ[@]} -gt 0 ]; then
	printf '  %s\n' "${differ[@]}"
	exit 1
fi
