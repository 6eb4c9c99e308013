#!/usr/bin/env bash
# Compares what opening and calling two builds of a model cost (A and B:
# two versions of tune, or two flags), alternating their processes:
#
#   bench/overhead/compare.sh A_DIR B_DIR [ROUNDS [OPENS [RUNS]]]
#
# Each build folder's overhead program is compiled against its own tessera.h
# (bench/overhead/overhead.c), then A and B run in turn ROUNDS times, one
# thread each. It prints every round, then per figure the min and median
# over the rounds of each side's median, and B/A.
set -euo pipefail
a=$1 b=$2 rounds=${3:-5} opens=${4:-30} runs=${5:-2000}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for side in a b; do
	dir=$(cd "${!side}" && pwd)
	cc -O2 -I "$dir" "$here/overhead.c" -L "$dir" -lmodel -Wl,-rpath,"$dir" -ldl -o "$work/$side"
	eval "${side}dir=\$dir"
done
for r in $(seq "$rounds"); do
	for side in a b; do
		d=${side}dir
		OMP_NUM_THREADS=1 "$work/$side" "${!d}" "$opens" "$runs" | sed "s/^/$side $r /" | tee -a "$work/all"
	done
done
awk '
	{ key = $3 " " $4; v[$1, key] = v[$1, key] " " $6; keys[key] = 1 }
	function stats(s,   n, x, i, j, t) {
		n = split(s, x, " ")
		for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (x[j] < x[i]) { t = x[i]; x[i] = x[j]; x[j] = t }
		mn = x[1]; md = x[int((n + 1) / 2)]
	}
	END {
		for (k in keys) {
			if (!(("a", k) in v) || !(("b", k) in v)) { stats(v["b", k]); printf "%-10s B only: min %.4f median %.4f\n", k, mn, md; continue }
			stats(v["a", k]); amin = mn; amed = md
			stats(v["b", k]); printf "%-10s A min %.4f median %.4f | B min %.4f median %.4f | B/A min %.3f median %.3f\n", k, amin, amed, mn, md, mn / amin, md / amed
		}
	}' "$work/all"
