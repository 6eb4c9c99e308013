#!/usr/bin/env bash
# Times the ways of running a recurrent layer's steps of bench/recurrent/step.c
# (a kernel per step against one region for the layer), for a GRU of
# gru_speech's size (H 192, 3 gates: R is 442 KB, in L2) and an LSTM of
# lstm_lm's (H 512, 4 gates: 4 MB, in L3), alternating the ways' processes:
#
#   bench/recurrent/step.sh [ROUNDS]
#
# The serial ways run on one thread, the others on two (OMP_NUM_THREADS).
# Prints per size and way the min and median over the rounds of the best
# microseconds per step.
set -euo pipefail
rounds=${1:-5}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
sizes="192:3 512:4"
for s in $sizes; do
	cc -O3 -march=native -fopenmp -DH="${s%:*}" -DGATES="${s#*:}" "$here/step.c" -o "$work/step-${s%:*}"
done
for r in $(seq "$rounds"); do
	for s in $sizes; do
		for m in 0 1 2 3 4; do
			threads=2
			if [ "$m" = 0 ] || [ "$m" = 4 ]; then threads=1; fi
			OMP_NUM_THREADS=$threads "$work/step-${s%:*}" "$m" | sed "s/^/H=${s%:*} threads=$threads /" >>"$work/all"
		done
	done
done
awk '
	{ key = $1 " " $3 " " $2; v[key] = v[key] " " $4; if (!(key in seen)) { seen[key] = 1; order[++n] = key } }
	END {
		for (i = 1; i <= n; i++) {
			k = split(v[order[i]], x, " ")
			for (a = 1; a <= k; a++) for (b = a + 1; b <= k; b++) if (x[b] < x[a]) { t = x[a]; x[a] = x[b]; x[b] = t }
			printf "%-28s us/step min %.3f median %.3f\n", order[i], x[1], x[int((k + 1) / 2)]
		}
	}' "$work/all"
