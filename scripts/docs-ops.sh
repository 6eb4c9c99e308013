#!/usr/bin/env bash
# The list of ONNX ops that lower to kernels, from the code (ops.LoweredNames),
# as docs/ops.md holds it between its two "ops.LoweredNames" marks.
#
#	scripts/docs-ops.sh           print the list
#	scripts/docs-ops.sh --write   write it into docs/ops.md
#	scripts/docs-ops.sh --check   fail when docs/ops.md's list is not the code's
#
# It runs a throwaway main package (in a temporary folder inside the module,
# removed afterwards) that prints ops.LoweredNames(), one line per op.
set -euo pipefail
cd "$(dirname "$0")/.."
for d in /usr/local/go/bin "$HOME/go/bin"; do
	case ":$PATH:" in *":$d:"*) ;; *) [ -d "$d" ] && PATH="$d:$PATH" ;; esac
done
mode=${1:-print}
tmp=$(mktemp -d ./.docs-ops.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/main.go" <<'EOF'
package main

import (
	"fmt"
	"strings"

	"github.com/tessera-ml/tessera/ops"
)

func main() { fmt.Println(strings.Join(ops.LoweredNames(), ", ") + ".") }
EOF
list=$(go run "./$tmp" | fold -s -w 76 | sed 's/ *$//')
begin='<!-- ops.LoweredNames: begin (scripts/docs-ops.sh --write) -->'
end='<!-- ops.LoweredNames: end -->'
current=$(sed -n "\|^$begin\$|,\|^$end\$|p" docs/ops.md | sed '1d;$d')
case $mode in
print) echo "$list" ;;
--check)
	if [ "$current" != "$list" ]; then
		diff <(echo "$current") <(echo "$list") >&2 || true
		echo "docs/ops.md: its list of lowered ops is not the code's (ops.LoweredNames): run scripts/docs-ops.sh --write" >&2
		exit 1
	fi
	echo "docs/ops.md: the $(echo "$list" | tr ',' '\n' | grep -c .) lowered ops of ops.LoweredNames"
	;;
--write)
	awk -v b="$begin" -v e="$end" -v list="$list" '
		$0 == b { print; print list; skip = 1; next }
		$0 == e { skip = 0 }
		!skip' docs/ops.md >"$tmp/ops.md"
	grep -qxF "$begin" docs/ops.md || { echo "docs/ops.md has no line $begin" >&2; exit 1; }
	mv "$tmp/ops.md" docs/ops.md
	;;
*)
	echo "usage: scripts/docs-ops.sh [--write | --check]" >&2
	exit 2
	;;
esac
