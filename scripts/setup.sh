#!/usr/bin/env bash
# Installs what Tessera needs on a fresh Debian machine, builds it, installs
# the `tune` command (go install: into $GOBIN, by default $HOME/go/bin) and
# runs the main job: tuning the small model shipped in testdata/ (a few
# tasks, a few minutes), with its records in tuning.db.
set -euo pipefail
cd "$(dirname "$0")/.."
user_path=$PATH # deps.sh adds Go's folders to PATH for this script only
source scripts/deps.sh
go build ./...
# -buildvcs=auto: tune --version names the commit even where GOFLAGS
# turns stamping off (some containers set -buildvcs=false)
go install -buildvcs=auto ./cmd/tune
bin=$(go env GOBIN)
[ -n "$bin" ] || bin=$(go env GOPATH)/bin
echo "installed tune into $bin/tune"
if [ "$(PATH=$user_path command -v tune 2>/dev/null || true)" != "$bin/tune" ] ||
	! PATH=$user_path command -v go >/dev/null; then
	echo "put it and Go on your PATH (add the line to ~/.bashrc to keep it):"
	echo "  export PATH=\"\$PATH:$(dirname "$(command -v go)"):$bin\""
fi
"$bin/tune" --trials 128 --per-round 32 testdata/tiny.onnx
