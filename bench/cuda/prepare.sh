#!/bin/bash
# prepare.sh: makes .gpu/, what bench/cuda/device.sh runs on a GPU machine
# that has no Go toolchain: static builds of tune, genmodels, bench/gemm,
# bench/conv and the target package's tests (bin.tgz), and the inputs of
# tiny and ResNet-18 with Tessera's outputs for them on this CPU (data/).
# .gpu/records (records databases tuned on the GPU) is kept.
set -euo pipefail
cd "$(dirname "$0")/../.."
G=.gpu
rm -rf "$G/bin" "$G/data" "$G/bin.tgz"
mkdir -p "$G/bin" "$G/records"
export CGO_ENABLED=0
flags=(-trimpath -ldflags=-s)
go build "${flags[@]}" -o "$G/bin/tune" ./cmd/tune
go build "${flags[@]}" -o "$G/bin/genmodels" ./cmd/genmodels
go build "${flags[@]}" -o "$G/bin/gemm" ./bench/gemm
go build "${flags[@]}" -o "$G/bin/conv" ./bench/conv
go test -c "${flags[@]}" -o "$G/bin/target.test" ./target
# numpy is Debian's python3-numpy, /usr/bin/python3's; a python3 earlier on
# PATH (pyenv's) may lack it.
py=
for p in python3 /usr/bin/python3; do
	"$p" -c 'import numpy' 2>/dev/null && { py=$p; break; }
done
[ -n "$py" ] || { echo "prepare.sh: no python3 with numpy (scripts/deps.sh installs python3-numpy)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$G/bin/genmodels" -o "$tmp" resnet18 >/dev/null
# The inputs: uniform in [-1, 1), seed 1, of each model's input shape.
for m in tiny:768 resnet18:150528; do
	n=${m#*:} m=${m%:*}
	file=$tmp/$m.onnx
	[ $m = tiny ] && file=testdata/tiny.onnx
	mkdir -p "$G/data/$m"
	"$py" -c 'import sys, numpy as np; np.random.default_rng(1).uniform(-1, 1, int(sys.argv[2])).astype(np.float32).tofile(sys.argv[1])' "$G/data/$m/input.bin" "$n"
	"$G/bin/tune" build --no-records -o "$tmp/$m-cpu" "$file" >/dev/null 2>&1
	"$G/bin/tune" run "$tmp/$m-cpu" --input input="$G/data/$m/input.bin" -o "$G/data/$m/cpu" --format raw >/dev/null
done
tar czf "$G/bin.tgz" -C "$G" bin
rm -rf "$G/bin"
du -sh "$G"/*
