#!/usr/bin/env bash
# Installs the Debian packages Tessera needs, if any is missing, and checks
# that the Go toolchain is new enough. Sourced by setup.sh and test.sh.
set -euo pipefail

# libdnnl-dev: oneDNN, a contender of go run ./bench/conv (no test needs it).
packages=(gcc libc6-dev libopenblas-dev libdnnl-dev libonnx-testdata xgboost nats-server util-linux)

missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
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
want=$(sed -n 's/^go \([0-9.]*\)$/\1/p' "$(dirname "$0")/../go.mod")
have=$(go env GOVERSION | sed 's/^go//')
if [ "$(printf '%s\n%s\n' "$want" "$have" | sort -V | head -1)" != "$want" ]; then
	echo "Go $have is too old: Tessera needs Go $want or newer." >&2
	exit 1
fi
