#!/usr/bin/env bash
# Races one build of a model over a dynamic batch against onnxruntime, and
# against builds tuned for single batches, at batches of the range:
#
#	bench/batch.sh --model FILE --range N=lo..hi --db FILE --batches "3 5 8"
#	               [--shape-db N=FILE]... [--threads T] [--tuned-threads T] [--rounds K] [--repeat R]
#
# It builds the model once over the range (tune build --range, the records
# of --db: tuned at batch 1 by tune --range, the records measured with
# --tuned-threads, default --threads), and for each --shape-db n=DB
# the model bound to batch n (tune build --input, the records of DB: a
# tuning of that batch alone). At each batch of --batches it writes random
# inputs (fixed seed), checks that every build and onnxruntime compute the
# same first output on them (rtol 1e-3), then alternates the contenders,
# each in its own process (`tune bench --batch n`, `tune bench`,
# bench/ort/bench.mjs), for K rounds at T threads (default 1), the order
# rotating every round. It prints per batch and contender the min of the
# per-process minimums and the median of their medians, then
#
#	N=n onnxruntime/range = <onnxruntime median / range-build median>
#	N=n range/per-shape = <range-build median / per-shape-build median>
#
# (the first above 1 when the range build is faster than onnxruntime, the
# second at most 1.15 when it is within 15% of the build tuned for n).
# onnxruntime-node is installed as bench/onnxruntime.sh installs it.
set -euo pipefail
here=$PWD
cd "$(dirname "${BASH_SOURCE[0]}")/.."

model="" range="" db="" batches="" threads=1 tuned="" rounds=3 repeat=""
declare -A shape_db
given() { if [[ $1 == /* ]]; then echo "$1"; else echo "$here/$1"; fi; }
usage() {
	echo 'usage: bench/batch.sh --model FILE --range N=lo..hi --db FILE --batches "n ..." [--shape-db n=FILE]... [--threads T] [--tuned-threads T] [--rounds K] [--repeat R]' >&2
	exit 2
}
while [ $# -gt 0 ]; do
	[ $# -ge 2 ] || usage
	case "$1" in
	--model) model=$(given "$2") ;;
	--range) range=$2 ;;
	--db) db=$(given "$2") ;;
	--batches) batches=$2 ;;
	--shape-db) shape_db[${2%%=*}]=$(given "${2#*=}") ;;
	--threads) threads=$2 ;;
	--tuned-threads) tuned=$2 ;;
	--rounds) rounds=$2 ;;
	--repeat) repeat=$2 ;;
	*) usage ;;
	esac
	shift 2
done
[ -n "$model" ] && [ -n "$range" ] && [ -n "$db" ] && [ -n "$batches" ] || usage
tuned=${tuned:-$threads}
[[ $rounds =~ ^[1-9][0-9]*$ ]] && [[ $threads =~ ^[1-9][0-9]*$ ]] && [[ $tuned =~ ^[1-9][0-9]*$ ]] || usage
[ -z "$repeat" ] || [[ $repeat =~ ^[1-9][0-9]*$ ]] || usage
note() { echo "batch.sh: $*" >&2; }
die() {
	note "$*"
	exit 1
}

ort_dir=bench/ort
if [ ! -d "$ort_dir/node_modules/onnxruntime-node" ]; then
	note "installing onnxruntime-node into $ort_dir/node_modules (CPU library only)"
	(cd "$ort_dir" && ONNXRUNTIME_NODE_INSTALL=skip npm ci --no-audit --no-fund --loglevel=error >&2)
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/tessera-batch.XXXXXX")
trap 'rm -rf "$work"' EXIT
go build -o "$work/tune" ./cmd/tune
tune=$work/tune
"$tune" machine --peak | grep -E '^(cpu|peak)' || die "tune machine failed"

"$tune" build "$model" --range "$range" --db "$db" --threads "$tuned" -o "$work/range" >"$work/build.log" 2>&1 ||
	{ cat "$work/build.log" >&2; die "tune build --range $range failed"; }
grep -E '^(built|tuned tasks|tuned FLOPs|arena peak) ' "$work/build.log" | sed 's/^/batch.sh: range build: /' >&2 || true
# The batched input: "name d1,d2,..." (its dimensions after the batch).
read -r input rest < <(node -e '
	const m = JSON.parse(require("fs").readFileSync(process.argv[1]));
	const b = m.inputs.filter((t) => t.batched);
	if (m.inputs.length !== 1 || b.length !== 1) { console.error("want a model of one batched input"); process.exit(1); }
	console.log(b[0].name + " " + b[0].shape.slice(1).join(","));' "$work/range/manifest.json") || die "cannot read the range build's manifest"

field() { sed -n "s/^$1 = \([0-9.eE+-]*\).*/\1/p" | head -1; }
minmed() { sort -g | awk '{ x[NR] = $1 } END { m = NR % 2 ? x[(NR + 1) / 2] : (x[NR / 2] + x[NR / 2 + 1]) / 2; printf "%.3f %.3f\n", x[1], m }'; }

for n in $batches; do
	dir=$work/n$n
	mkdir -p "$dir"
	# n samples of random input, raw float32 (xorshift, seed n).
	node -e '
		const [file, count, seed] = [process.argv[1], Number(process.argv[2]), Number(process.argv[3])];
		let s = seed >>> 0 || 0x9e3779b9;
		const buf = Buffer.alloc(4 * count);
		for (let j = 0; j < count; j++) { s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0; buf.writeFloatLE(s / 2 ** 31 - 1, 4 * j); }
		require("fs").writeFileSync(file, buf);' "$dir/in.bin" "$((n * $(tr ',' '*' <<<"$rest")))" "$n"
	shape="$n,$rest"
	contenders=(range)
	if [ -n "${shape_db[$n]:-}" ]; then
		"$tune" build "$model" --input "$input=$shape" --db "${shape_db[$n]}" --threads "$tuned" -o "$dir/shape" >"$dir/build.log" 2>&1 ||
			{ cat "$dir/build.log" >&2; die "tune build --input $input=$shape failed"; }
		contenders+=(shape)
	fi
	contenders+=(ort)
	node "$ort_dir/bench.mjs" "$model" --input "$input=$dir/in.bin" --shape "$input=$shape" --threads 1 --warmup 0 --repeat 1 \
		--output "$dir/ort.out" >/dev/null 2>"$dir/err" || { cat "$dir/err" >&2; die "onnxruntime failed at $input=$shape"; }
	for c in range shape; do
		[ "$c" = range ] || [ -n "${shape_db[$n]:-}" ] || continue
		build=$dir/shape
		[ "$c" = shape ] || build=$work/range
		ran=$("$tune" run "$build" --input "$input=$dir/in.bin" --threads "$threads" -o "$dir/out-$c" --format raw) || die "tune run $c at $n failed"
		tfile=$(sed -n 's/^output .* → \(.*\)$/\1/p' <<<"$ran" | head -1)
		printf 'batch.sh: N=%s: %s build vs onnxruntime: ' "$n" "$c" >&2
		node "$ort_dir/compare.mjs" "$tfile" "$dir/ort.out" 1e-3 1e-4 >&2 || die "N=$n: the $c build's output differs from onnxruntime's"
	done
	r=$repeat
	if [ -z "$r" ]; then
		# about 1.5 s of runs per process at onnxruntime's pace
		ms=$(node "$ort_dir/bench.mjs" "$model" --input "$input=$dir/in.bin" --shape "$input=$shape" --threads "$threads" --warmup 1 --repeat 3 2>/dev/null | field "median ms")
		r=$(awk -v t="$ms" 'BEGIN { r = int(1500 / t + 0.999); print (r < 3 ? 3 : (r > 100 ? 100 : r)) }')
	fi
	w=$(((r + 4) / 5))
	for ((k = 0; k < rounds; k++)); do
		for ((j = 0; j < ${#contenders[@]}; j++)); do
			c=${contenders[$(((j + k) % ${#contenders[@]}))]}
			case $c in
			range) res=$("$tune" bench "$work/range" --batch "$n" --threads "$threads" --warmup "$w" --repeat "$r" 2>"$dir/err") ;;
			shape) res=$("$tune" bench "$dir/shape" --threads "$threads" --warmup "$w" --repeat "$r" 2>"$dir/err") ;;
			ort) res=$(node "$ort_dir/bench.mjs" "$model" --input "$input=$dir/in.bin" --shape "$input=$shape" --threads "$threads" --warmup "$w" --repeat "$r" 2>"$dir/err") ;;
			esac || { cat "$dir/err" >&2; die "N=$n: $c failed"; }
			field "min ms" <<<"$res" >>"$dir/$c.min"
			field "median ms" <<<"$res" >>"$dir/$c.median"
		done
	done
	declare -A med
	for c in "${contenders[@]}"; do
		read -r mn _ < <(minmed <"$dir/$c.min")
		read -r _ md < <(minmed <"$dir/$c.median")
		med[$c]=$md
		echo "N=$n threads=$threads $c min ms = $mn"
		echo "N=$n threads=$threads $c median ms = $md"
	done
	echo "N=$n onnxruntime/range = $(awk -v o="${med[ort]}" -v s="${med[range]}" 'BEGIN { printf "%.3g", o / s }')"
	if [ -n "${shape_db[$n]:-}" ]; then
		echo "N=$n range/per-shape = $(awk -v a="${med[range]}" -v b="${med[shape]}" 'BEGIN { printf "%.3g", a / b }')"
	fi
done
