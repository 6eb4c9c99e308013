#!/usr/bin/env bash
# The README's quick start as a test, so that the README cannot drift from
# the code; and a check of every relative link of the documentation.
#
#	scripts/quickstart.sh [--head] [--keep]
#
# 1. A fresh copy, in a temporary folder, of this checkout as `go test`
#    sees it: the files git tracks, as they are now, and the untracked ones
#    git does not ignore (git ls-files --cached --others --exclude-standard;
#    no models/, tuning.db, build folders or node_modules). On CI, a clean
#    checkout, that is the commit: what a clone has. --head copies the
#    commit itself instead (git archive HEAD), whatever the working tree.
# 2. tune built from the copy and installed as scripts/setup.sh installs it
#    (go install ./cmd/tune), into a folder put first on PATH.
# 3. The blocks of the copy's README.md marked for the test, run verbatim in
#    order by scripts/mdcheck.py's run.sh in one bash process: the marks are
#    HTML comments on the line before a fenced block (invisible on GitHub):
#
#	<!-- quickstart: repo -->            run it from the root of the copy
#	<!-- quickstart: scratch [DIR] -->   run it from folder DIR of a scratch folder
#	                                     outside the copy (created empty)
#	<!-- quickstart: file [DIR/]NAME --> write it into NAME there
#
#    (scripts/mdcheck.py says more.) A failing command fails the test, with
#    the README line of its block printed above its output.
# 4. Every relative link of README.md and docs/**/*.md, in the copy: the file
#    exists (in the repository), and its #anchor is a heading there.
# 5. docs/ops.md's list of lowered ops is the code's (scripts/docs-ops.sh).
#
# What it needs beyond Go and a C compiler is what scripts/deps.sh installs:
# python3 with numpy (Debian's python3-numpy: /usr/bin/python3 is used when
# the python3 first on PATH lacks numpy), node and the onnxruntime-node of
# bench/ort (its node_modules, git-ignored, is linked into the copy when this
# checkout has it; else bench/ort/ensure.sh installs it there). The quick
# start tunes the tiny model with few trials: a few minutes on 2 cores.
# --keep leaves the temporary folder (its path is printed).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
keep=0 head=0
for a in "$@"; do
	case "$a" in
	--keep) keep=1 ;;
	--head) head=1 ;;
	*)
		echo "usage: scripts/quickstart.sh [--head] [--keep]" >&2
		exit 2
		;;
	esac
done
for d in /usr/local/go/bin "$HOME/go/bin"; do
	case ":$PATH:" in *":$d:"*) ;; *) [ -d "$d" ] && PATH="$d:$PATH" ;; esac
done
export PATH
start=$SECONDS

tmp=$(mktemp -d "${TMPDIR:-/tmp}/tessera-quickstart.XXXXXX")
if [ "$keep" -eq 1 ]; then
	echo "quickstart: keeping $tmp"
else
	trap 'rm -rf "$tmp"' EXIT
fi
copy=$tmp/tessera scratch=$tmp/scratch bin=$tmp/bin
mkdir -p "$copy" "$scratch" "$bin"

# 1. The copy.
if [ "$head" -eq 1 ]; then
	git archive HEAD | tar -xf - -C "$copy"
else
	git ls-files -z --cached --others --exclude-standard |
		tar --null -T - --ignore-failed-read -cf - 2>/dev/null | tar -xf - -C "$copy"
fi
if [ -d bench/ort/node_modules ] && [ ! -e "$copy/bench/ort/node_modules" ]; then
	ln -s "$root/bench/ort/node_modules" "$copy/bench/ort/node_modules"
fi

# 2. tune, as setup.sh installs it, first on PATH; a python3 with numpy.
(cd "$copy" && GOBIN=$bin go install ./cmd/tune)
if ! python3 -c 'import numpy' 2>/dev/null && /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
	ln -s /usr/bin/python3 "$bin/python3"
fi
export PATH="$bin:$PATH"

# 3. The marked blocks.
python3 "$copy/scripts/mdcheck.py" blocks "$copy/README.md" "$tmp/blocks"
echo "quickstart: the README's blocks, in a fresh copy of this checkout ($copy), tune from it ($bin/tune)"
if ! QS_REPO=$copy QS_SCRATCH=$scratch timeout 1200 bash "$tmp/blocks/run.sh"; then
	echo "quickstart: FAILED: a block of README.md did not run as written (its line is printed above)" >&2
	exit 1
fi

# 4. The links, in the copy (what a clone has).
(cd "$copy" && python3 scripts/mdcheck.py links README.md $(find docs -name '*.md' | sort))

# 5. The op list.
(cd "$copy" && bash scripts/docs-ops.sh --check)
echo "quickstart: ok in $((SECONDS - start)) s"
