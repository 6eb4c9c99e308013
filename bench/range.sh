#!/usr/bin/env bash
# Races one build of a model over the ranges of its dynamic dimensions
# against onnxruntime, and against builds tuned for single shapes, at
# shapes of the ranges:
#
#	bench/range.sh --model FILE --range NAME=lo..hi [--range NAME=lo..hi] --db FILE
#	               --shapes "N=3 N=5" | --shapes "B=1,S=37 B=4,S=200"
#	               [--shape-db SHAPE=FILE]... [--threads T] [--tuned-threads T] [--rounds K] [--repeat R]
#
# It builds the model once over the ranges (tune build --range, the records
# of --db: those of tune --range, measured with --tuned-threads, default
# --threads), and for each --shape-db SHAPE=DB (SHAPE as in --shapes) the
# model bound to that shape (tune build --input, the records of DB: a
# tuning of that shape alone). At each shape it writes random inputs (fixed
# seed; bench/ort/input.mjs: floats in [-1, 1), int64 ids and masks 0 or 1),
# checks that every build and onnxruntime compute the same first output on
# them (rtol 1e-3), then alternates the contenders, each in its own process
# (`tune bench --batch N --dim S`, `tune bench`, bench/ort/bench.mjs), for
# K rounds at T threads (default 1), the order rotating every round. It
# prints per shape and contender the min of the per-process minimums and
# the median of their medians, then
#
#	SHAPE onnxruntime/range = <onnxruntime median / range-build median>
#	SHAPE range/per-shape = <range-build median / per-shape-build median>
#
# (the first above 1 when the range build is faster than onnxruntime, the
# second at most 1.15 when it is within 15% of the build tuned for the
# shape). onnxruntime-node is installed as bench/onnxruntime.sh installs it.
set -euo pipefail
here=$PWD
cd "$(dirname "${BASH_SOURCE[0]}")/.."

model="" db="" shapes="" threads=1 tuned="" rounds=3 repeat=""
ranges=()
declare -A shape_db
given() { if [[ $1 == /* ]]; then echo "$1"; else echo "$here/$1"; fi; }
usage() {
	echo 'usage: bench/range.sh --model FILE --range NAME=lo..hi [--range ...] --db FILE --shapes "NAME=V[,NAME=V] ..." [--shape-db SHAPE=FILE]... [--threads T] [--tuned-threads T] [--rounds K] [--repeat R]' >&2
	exit 2
}
while [ $# -gt 0 ]; do
	[ $# -ge 2 ] || usage
	case "$1" in
	--model) model=$(given "$2") ;;
	--range) ranges+=(--range "$2") ;;
	--db) db=$(given "$2") ;;
	--shapes) shapes=$2 ;;
	--shape-db) shape_db[${2%=*}]=$(given "${2##*=}") ;;
	--threads) threads=$2 ;;
	--tuned-threads) tuned=$2 ;;
	--rounds) rounds=$2 ;;
	--repeat) repeat=$2 ;;
	*) usage ;;
	esac
	shift 2
done
[ -n "$model" ] && [ ${#ranges[@]} -gt 0 ] && [ -n "$db" ] && [ -n "$shapes" ] || usage
tuned=${tuned:-$threads}
[[ $rounds =~ ^[1-9][0-9]*$ ]] && [[ $threads =~ ^[1-9][0-9]*$ ]] && [[ $tuned =~ ^[1-9][0-9]*$ ]] || usage
[ -z "$repeat" ] || [[ $repeat =~ ^[1-9][0-9]*$ ]] || usage
note() { echo "range.sh: $*" >&2; }
die() {
	note "$*"
	exit 1
}

ort_dir=bench/ort
bench/ort/ensure.sh || die "installing onnxruntime-node failed"
work=$(mktemp -d "${TMPDIR:-/tmp}/tessera-range.XXXXXX")
trap 'rm -rf "$work"' EXIT
go build -o "$work/tune" ./cmd/tune
tune=$work/tune
"$tune" machine --peak | grep -E '^(cpu|peak)' || die "tune machine failed"

"$tune" build "$model" "${ranges[@]}" --db "$db" --threads "$tuned" -o "$work/range" >"$work/build.log" 2>&1 ||
	{ cat "$work/build.log" >&2; die "tune build ${ranges[*]} failed"; }
grep -E '^(built|tuned tasks|tuned FLOPs|arena peak) ' "$work/build.log" | sed 's/^/range.sh: range build: /' >&2 || true

field() { sed -n "s/^$1 = \([0-9.eE+-]*\).*/\1/p" | head -1; }
minmed() { sort -g | awk '{ x[NR] = $1 } END { m = NR % 2 ? x[(NR + 1) / 2] : (x[NR / 2] + x[NR / 2 + 1]) / 2; printf "%.3f %.3f\n", x[1], m }'; }

for shape in $shapes; do
	dir=$work/$(tr ',=' '__' <<<"$shape")
	mkdir -p "$dir"
	# The inputs (NAME=FILE lines), the range build's flags for this shape
	# (--batch N --dim S) and each input bound (--input NAME=d0,d1,...).
	mapfile -t files < <(node "$ort_dir/input.mjs" "$model" "$dir/in" 1 --dims "$shape") || die "cannot write inputs at $shape"
	[ ${#files[@]} -gt 0 ] || die "no inputs written at $shape"
	inputs=()
	for f in "${files[@]}"; do inputs+=(--input "$f"); done
	read -r -a at < <(node -e '
		const m = JSON.parse(require("fs").readFileSync(process.argv[1]));
		const v = Object.fromEntries(process.argv[2].split(",").map((kv) => kv.split("=")));
		const flags = [];
		if (m.batch) flags.push("--batch", v[m.batch.name] ?? m.batch.hi);
		if (m.dim) flags.push("--dim", v[m.dim.name] ?? m.dim.hi);
		console.log(flags.join(" "));' "$work/range/manifest.json" "$shape") || die "cannot read the range build's manifest"
	bound=()
	for f in "${files[@]}"; do
		dims=$(node --input-type=module -e '
			import { readNpy } from "./'"$ort_dir"'/npy.mjs";
			console.log(readNpy(process.argv[1]).dims.join(","));' "${f#*=}") || die "cannot read $f"
		bound+=(--input "${f%%=*}=$dims")
	done
	contenders=(range)
	if [ -n "${shape_db[$shape]:-}" ]; then
		"$tune" build "$model" "${bound[@]}" --db "${shape_db[$shape]}" --threads "$tuned" -o "$dir/shape" >"$dir/build.log" 2>&1 ||
			{ cat "$dir/build.log" >&2; die "tune build ${bound[*]} failed"; }
		contenders+=(shape)
	fi
	contenders+=(ort)
	node "$ort_dir/bench.mjs" "$model" "${inputs[@]}" --threads 1 --warmup 0 --repeat 1 \
		--output "$dir/ort.out" >/dev/null 2>"$dir/err" || { cat "$dir/err" >&2; die "onnxruntime failed at $shape"; }
	for c in "${contenders[@]}"; do
		[ "$c" != ort ] || continue
		build=$dir/shape
		[ "$c" = shape ] || build=$work/range
		ran=$("$tune" run "$build" "${inputs[@]}" --threads "$threads" -o "$dir/out-$c" --format raw) || die "tune run $c at $shape failed"
		tfile=$(sed -n 's/^output .* → \(.*\)$/\1/p' <<<"$ran" | head -1)
		printf 'range.sh: %s: %s build vs onnxruntime: ' "$shape" "$c" >&2
		node "$ort_dir/compare.mjs" "$tfile" "$dir/ort.out" 1e-3 1e-4 >&2 || die "$shape: the $c build's output differs from onnxruntime's"
	done
	r=$repeat
	if [ -z "$r" ]; then
		# about 1.5 s of runs per process at onnxruntime's pace
		ms=$(node "$ort_dir/bench.mjs" "$model" "${inputs[@]}" --threads "$threads" --warmup 1 --repeat 3 2>/dev/null | field "median ms")
		r=$(awk -v t="$ms" 'BEGIN { r = int(1500 / t + 0.999); print (r < 3 ? 3 : (r > 200 ? 200 : r)) }')
	fi
	w=$(((r + 4) / 5))
	for ((k = 0; k < rounds; k++)); do
		for ((j = 0; j < ${#contenders[@]}; j++)); do
			c=${contenders[$(((j + k) % ${#contenders[@]}))]}
			case $c in
			range) res=$("$tune" bench "$work/range" "${at[@]}" --threads "$threads" --warmup "$w" --repeat "$r" 2>"$dir/err") ;;
			shape) res=$("$tune" bench "$dir/shape" --threads "$threads" --warmup "$w" --repeat "$r" 2>"$dir/err") ;;
			ort) res=$(node "$ort_dir/bench.mjs" "$model" "${inputs[@]}" --threads "$threads" --warmup "$w" --repeat "$r" 2>"$dir/err") ;;
			esac || { cat "$dir/err" >&2; die "$shape: $c failed"; }
			field "min ms" <<<"$res" >>"$dir/$c.min"
			field "median ms" <<<"$res" >>"$dir/$c.median"
		done
	done
	declare -A med
	for c in "${contenders[@]}"; do
		read -r mn _ < <(minmed <"$dir/$c.min")
		read -r _ md < <(minmed <"$dir/$c.median")
		med[$c]=$md
		echo "$shape threads=$threads $c min ms = $mn"
		echo "$shape threads=$threads $c median ms = $md"
	done
	echo "$shape onnxruntime/range = $(awk -v o="${med[ort]}" -v s="${med[range]}" 'BEGIN { printf "%.3g", o / s }')"
	if [ -n "${shape_db[$shape]:-}" ]; then
		echo "$shape range/per-shape = $(awk -v a="${med[range]}" -v b="${med[shape]}" 'BEGIN { printf "%.3g", a / b }')"
	fi
done
