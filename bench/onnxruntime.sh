#!/usr/bin/env bash
# Races a Tessera build of an ONNX model against onnxruntime on the same
# file and the same input:
#
#	bench/onnxruntime.sh [--model models/resnet18.onnx] [--db tuning.db] [--rounds K]
#	                     [--warmup W] [--repeat R]
#
# It installs onnxruntime-node (pinned in bench/ort/package-lock.json, CPU
# library only: ONNXRUNTIME_NODE_INSTALL=skip) into bench/ort/node_modules
# if it is missing, generates the model if it is missing, writes one random
# input (fixed seed), builds the model with `tune build` from the records in
# the db, checks that both sides compute the same output on that input, then
# for 1 and 2 threads alternates `tune bench` and bench/ort/bench.mjs, each
# in its own process, for K rounds (who goes first swaps every round). Each
# process does W warm-up and R timed runs and reports its min and median;
# the script reports the min of the mins and the median of the medians.
# It prints "name = value" lines; the last one is
#
#	tessera/onnxruntime = <onnxruntime median / tessera median, 1 thread>
#
# so above 1 means Tessera is faster.
set -euo pipefail
here=$PWD
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# The defaults are relative to the repository, paths given relative to the
# directory the script was started in.
model=models/resnet18.onnx
db=tuning.db
rounds=5
warmup=10
repeat=50
# given PATH: a path from the command line, made usable from the repository.
given() {
	if [[ $1 == /* ]]; then echo "$1"; else echo "$here/$1"; fi
}
usage() {
	echo "usage: bench/onnxruntime.sh [--model FILE] [--db FILE] [--rounds K] [--warmup W] [--repeat R]" >&2
	exit 2
}
while [ $# -gt 0 ]; do
	case "$1" in
	--model | --db | --rounds | --warmup | --repeat)
		[ $# -ge 2 ] || usage
		case "$1" in
		--model) model=$(given "$2") ;;
		--db) db=$(given "$2") ;;
		--rounds) rounds=$2 ;;
		--warmup) warmup=$2 ;;
		--repeat) repeat=$2 ;;
		esac
		shift 2
		;;
	--model=* | --db=* | --rounds=* | --warmup=* | --repeat=*)
		set -- "${1%%=*}" "${1#*=}" "${@:2}"
		;;
	-h | --help) usage ;;
	*)
		echo "onnxruntime.sh: unknown argument $1" >&2
		usage
		;;
	esac
done
for v in "$rounds" "$repeat"; do
	[[ $v =~ ^[1-9][0-9]*$ ]] || { echo "onnxruntime.sh: --rounds and --repeat want a positive integer" >&2; exit 2; }
done
[[ $warmup =~ ^[0-9]+$ ]] || { echo "onnxruntime.sh: --warmup wants an integer" >&2; exit 2; }

# Tolerance of the output check: every value within
# atol_rel·max|onnxruntime| + rtol·|onnxruntime|. The two sides sum the
# convolutions in different orders, so bit equality is not expected.
rtol=1e-3
atol_rel=1e-4

note() { echo "onnxruntime.sh: $*" >&2; }
die() {
	note "$*"
	exit 1
}

# --- tools -----------------------------------------------------------------
for d in /usr/local/go/bin "$HOME/go/bin"; do
	case ":$PATH:" in *":$d:"*) ;; *) [ -d "$d" ] && PATH="$d:$PATH" ;; esac
done
command -v go >/dev/null || die "Go is not installed (scripts/setup.sh says what Tessera needs)"
command -v "${CC:-cc}" >/dev/null || die "no C compiler (${CC:-cc}): run scripts/deps.sh"
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
	die "node and npm are needed for onnxruntime-node (Debian: apt-get install nodejs npm)"
fi

ort_dir=bench/ort
ort_want=$(sed -n 's/.*"onnxruntime-node": "\([^"]*\)".*/\1/p' "$ort_dir/package.json")
ort_have=$(sed -n 's/^  "version": "\([^"]*\)".*/\1/p' "$ort_dir/node_modules/onnxruntime-node/package.json" 2>/dev/null || true)
if [ "$ort_have" != "$ort_want" ]; then
	note "installing onnxruntime-node $ort_want into $ort_dir/node_modules (CPU library only)"
	(cd "$ort_dir" && ONNXRUNTIME_NODE_INSTALL=skip npm ci --no-audit --no-fund --loglevel=error >&2)
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/tessera-ort.XXXXXX")
trap 'rm -rf "$work"' EXIT
go build -o "$work/tune" ./cmd/tune
tune=$work/tune

# --- model and input -------------------------------------------------------
if [ ! -f "$model" ]; then
	name=$(basename "$model" .onnx)
	note "$model is missing: generating it (go run ./cmd/genmodels -o $(dirname "$model") $name)"
	go run ./cmd/genmodels -o "$(dirname "$model")" "$name" >&2
	[ -f "$model" ] || die "genmodels did not write $model"
fi

written=$(node "$ort_dir/input.mjs" "$model" "$work/in" 1) || die "could not write inputs for $model"
mapfile -t inputs <<<"$written"
input_flags=()
for i in "${inputs[@]}"; do input_flags+=(--input "$i"); done

# --- records and builds ----------------------------------------------------
# Records are kept per target, and the target names the thread count the
# kernels were measured with (tune --threads). For each thread count of the
# race the build takes the records measured with that many threads, or else
# those of the other count (a schedule tuned for 2 threads still runs on 1).
# With no record for the model's tasks at all Tessera builds default
# schedules: say so loudly, the race then says nothing about tuning.
listed=$("$tune" inspect "$model") || die "tune inspect $model failed"
mapfile -t keys < <(awk '/^tasks:/ { t = 1; next } t && $1 ~ /^[0-9]+$/ && $2 ~ /^v[0-9]+-/ { print $2 }' <<<"$listed")
[ ${#keys[@]} -gt 0 ] || die "tune inspect $model lists no tasks"
stats=""
if [ -f "$db" ]; then
	stats=$("$tune" records stats --db "$db") || die "tune records stats --db $db failed"
fi
# tuned T: how many of the model's tasks have a valid record measured with T
# threads (stats columns: workload records errors best-ms target...).
tuned() {
	local n=0 k
	for k in "${keys[@]}"; do
		if awk -v k="$k" -v t=" threads=$1 " 'index($1, k) == 1 && $4 != "-" && index($0, t) { f = 1 } END { exit !f }' <<<"$stats"; then
			n=$((n + 1))
		fi
	done
	echo "$n"
}
declare -A tuned_with build_threads out
tuned_with[1]=$(tuned 1)
tuned_with[2]=$(tuned 2)
records=$(awk 'NR > 1 { n += $2 } END { print n + 0 }' <<<"$stats")
if [ "${tuned_with[1]}" -eq 0 ] && [ "${tuned_with[2]}" -eq 0 ]; then
	cat >&2 <<WARN
onnxruntime.sh: ************************************************************
onnxruntime.sh: WARNING: $db has no measured schedule for any task of
onnxruntime.sh: $model ($records records in all): Tessera builds DEFAULT
onnxruntime.sh: schedules, so this race measures untuned kernels. Tune first:
onnxruntime.sh:   go run ./cmd/tune --trials 2000 --threads 1 --db $db $model
onnxruntime.sh: ************************************************************
WARN
fi
for t in 1 2; do
	o=$((3 - t))
	bt=$t
	if [ "${tuned_with[$t]}" -eq 0 ] && [ "${tuned_with[$o]}" -gt 0 ]; then
		bt=$o
		note "no records measured with $t thread(s) in $db: the $t-thread race uses those measured with $o"
	fi
	build_threads[$t]=$bt
	out[$t]=$work/build-$bt
	if [ "${tuned_with[$bt]}" -eq 0 ]; then
		out[$t]=$work/build-default # the same for every thread count
	fi
	n=${tuned_with[$bt]}
	if [ "$n" -gt 0 ] && [ "$n" -lt ${#keys[@]} ]; then
		note "warning: only $n of ${#keys[@]} tasks of $model have a schedule measured with $bt thread(s) in $db"
	fi
	[ -d "${out[$t]}" ] && continue
	if [ -f "$db" ]; then
		"$tune" build "$model" --db "$db" --threads "$bt" -o "${out[$t]}" >&2
	else
		"$tune" build "$model" --no-records -o "${out[$t]}" >&2 # no empty db left behind
	fi
done

# --- same output on the same input -----------------------------------------
# Both sides run the input files; the model's first output is compared, for
# every build the race uses.
for t in 1 2; do
	[ "$t" -eq 1 ] || [ "${out[2]}" != "${out[1]}" ] || continue
	ran=$("$tune" run "${out[$t]}" "${input_flags[@]}" --threads "$t" -o "$work/tessera-out-$t" --format raw) ||
		die "tune run ${out[$t]} failed"
	# "output NAME[d0,d1,...] → FILE"
	first=$(sed -n 's/^output \(.*\)\[[0-9, ]*\] → \(.*\)$/\1\t\2/p' <<<"$ran" | head -1)
	[ -n "$first" ] || die "tune run printed no output line: $ran"
	oname=${first%%$'\t'*}
	tfile=${first#*$'\t'}
	if [ ! -f "$work/ort.out" ]; then
		node "$ort_dir/bench.mjs" "$model" "${input_flags[@]}" --threads 1 --warmup 0 --repeat 1 \
			--output "$oname=$work/ort.out" >/dev/null 2>"$work/err" || {
			cat "$work/err" >&2
			die "onnxruntime failed"
		}
	fi
	what="records measured with ${build_threads[$t]} thread(s)"
	[ "${tuned_with[${build_threads[$t]}]}" -gt 0 ] || what="default schedules"
	printf 'onnxruntime.sh: build from %s, output %s: ' "$what" "$oname" >&2
	node "$ort_dir/compare.mjs" "$tfile" "$work/ort.out" "$rtol" "$atol_rel" >&2 ||
		die "Tessera's and onnxruntime's outputs differ: no race"
done

# --- the race --------------------------------------------------------------
# field NAME < output: the value of the line "NAME = value".
field() { sed -n "s/^$1 = \([0-9.eE+-]*\).*/\1/p" | head -1; }
# stats: "min median" of the numbers on stdin.
stats() { sort -g | awk '{ x[NR] = $1 } END { m = NR % 2 ? x[(NR + 1) / 2] : (x[NR / 2] + x[NR / 2 + 1]) / 2; printf "%.3f %.3f\n", x[1], m }'; }

run_tessera() {
	"$tune" bench "${out[$1]}" --threads "$1" --warmup "$warmup" --repeat "$repeat"
}
run_ort() {
	node "$ort_dir/bench.mjs" "$model" "${input_flags[@]}" --threads "$1" --warmup "$warmup" --repeat "$repeat"
}
# one NAME THREADS: runs a contender once in its own process and appends its
# min and median to $work/NAME-THREADS.{min,median}.
one() {
	local r mn md
	if ! r=$("run_$1" "$2" 2>"$work/err"); then
		cat "$work/err" >&2
		die "$1 with $2 thread(s) failed"
	fi
	mn=$(field "min ms" <<<"$r")
	md=$(field "median ms" <<<"$r")
	if [ -z "$mn" ] || [ -z "$md" ]; then
		die "$1 printed no 'min ms = ' and 'median ms = ' lines: $r"
	fi
	echo "$mn" >>"$work/$1-$2.min"
	echo "$md" >>"$work/$1-$2.median"
}

load() { cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo "?"; }
note "load average $(load) on $(nproc) cores before the race (above ~0.5 the figures are noisy)"
echo "$(basename "$model"): $rounds alternating rounds per thread count, $warmup warm-up + $repeat timed runs per process;" \
	"tasks with records in $db: ${tuned_with[1]} of ${#keys[@]} measured with 1 thread, ${tuned_with[2]} with 2"
declare -A ratio
for t in 1 2; do
	for ((k = 0; k < rounds; k++)); do
		if ((k % 2 == 0)); then
			one tessera "$t"
			one ort "$t"
		else
			one ort "$t"
			one tessera "$t"
		fi
	done
	read -r tmin _ < <(stats <"$work/tessera-$t.min")
	read -r _ tmed < <(stats <"$work/tessera-$t.median")
	read -r omin _ < <(stats <"$work/ort-$t.min")
	read -r _ omed < <(stats <"$work/ort-$t.median")
	echo "threads=$t tessera min ms = $tmin"
	echo "threads=$t tessera median ms = $tmed"
	echo "threads=$t onnxruntime min ms = $omin"
	echo "threads=$t onnxruntime median ms = $omed"
	ratio[$t]=$(awk -v o="$omed" -v s="$tmed" 'BEGIN { printf "%.3g", o / s }')
done
note "load average $(load) after the race"
echo "threads=2 tessera/onnxruntime = ${ratio[2]}"
echo "tessera/onnxruntime = ${ratio[1]}"
