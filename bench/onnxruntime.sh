#!/usr/bin/env bash
# Races Tessera builds of ONNX models against onnxruntime on the same files
# and the same inputs:
#
#	bench/onnxruntime.sh [--model FILE]... [--zoo] [--db FILE | --no-records]
#	                     [--rounds K] [--seconds S] [--warmup W] [--repeat R] [--cpu NAME]
#	                     [--int8 [--threads "1 2"] [--integer] [--reduce-range] [--agree N]]
#
# With no --model it races models/resnet18.onnx, resnet50, mobilenetv2 and
# bert_layer (cmd/genmodels), generating those that are missing. --zoo races
# the PyTorch model zoo (modelgen/zoo/models.txt, in models/zoo; export.py
# exports those missing, with PyTorch from scripts/deps.sh) on PyTorch's own
# input (NAME.input.npy), and checks both sides' outputs against PyTorch's
# (NAME.output.npy, rtol 1e-3) before the race; a model exported with its
# input and output .npy beside it is checked the same way when given with
# --model. It installs
# onnxruntime-node (pinned in bench/ort/package-lock.json, CPU library only:
# ONNXRUNTIME_NODE_INSTALL=skip) into bench/ort/node_modules if it is
# missing. For each model it writes random inputs (fixed seed), builds the
# model with `tune build` from the records in the db (--no-records, a
# missing db or a db without the model's records: default schedules),
# checks that both sides compute the same output on those inputs, then for 1
# and 2 threads alternates `tune bench` and bench/ort/bench.mjs, each in its
# own process, for K rounds (who goes first swaps every round). It reports
# the min of the per-process minimums and the median of their medians.
#
# Repeats adapt to the model, so that the whole race stays within minutes on
# 2 cores: a probe process of each side at 1 thread (one warm-up, the
# median of three runs) gives the time of one inference; every process of that model then does R = S seconds (default
# 1.5) over the slower side's time timed runs, at least 3 and at most 200,
# after W = R/5 warm-up runs, at least 1 and at most 10. --repeat and
# --warmup fix R and W for every model instead.
#
# It prints "name = value" lines: per model and thread count the times, and
# once every race is run, one line per model and thread count
#
#	MODEL threads=T tessera/onnxruntime = <onnxruntime median / tessera median>
#
# (above 1 means Tessera is faster); the last line is
#
#	tessera/onnxruntime = <the same ratio for the first model at 1 thread>
#
# ResNet-18 unless --model says otherwise. With more than one model, the
# lines before it give the geometric mean of the ratios at each thread count:
#
#	geomean threads=T tessera/onnxruntime = <g>
#
# --int8 races static int8 instead. For each model it writes a fixed
# calibration set of 8 random inputs (.npy, seeds 101 to 108, not the
# raced input), quantizes the model with `tune quantize` into
# onnxruntime's QDQ format, builds that file with `tune build` and checks
# the outputs on the raced input first: Tessera's against onnxruntime's
# int8 kernels made exact (session.x64quantprecision=1: without VNNI the
# default u8s8 kernels overflow 16 bits) within 3 steps of the output's
# scale, and it prints, in output steps, how far onnxruntime's default int8
# session and the float model are. Then it races three contenders in
# rotating order, each in its own process: onnxruntime on the float file
# (fp32), onnxruntime on the QDQ file (int8, its default session) and
# Tessera on the QDQ build, and Tessera on the float file (fp32, default
# schedules or the db's records as for the int8 build: with --db each
# thread count's builds take the records measured with that many threads,
# or, where it has none, with the count that has the most), at each thread
# count of --threads (default "1 2"), and prints per model and thread count
#
#	MODEL threads=T tessera-int8/onnxruntime-int8 = <onnxruntime int8 median / tessera median>
#	MODEL threads=T tessera-int8/tessera-fp32 = <tessera fp32 median / tessera int8 median>
#	MODEL threads=T onnxruntime-int8/onnxruntime-fp32 = <onnxruntime fp32 median / int8 median>
#
# and, with more than one model, geomean threads=T tessera-int8/onnxruntime-int8 = <g>
#
# (above 1: the first is faster), the last line the first of these for the
# first model and thread count. By default Tessera lowers the QDQ model's
# QuantizeLinear and DequantizeLinear to float arithmetic; --integer builds
# it with tune build --integer (integer kernels: dot-product micro-kernels
# on int8 data), and --reduce-range quantizes the weights to 7 bits (tune
# quantize --reduce-range, onnxruntime's reduce_range), with which the
# integer kernels use vpmaddubsw on AVX2 (exact: no pair of products can
# leave int16).
#
# --agree N (with --int8) checks, before the race, Tessera's int8 build
# against onnxruntime's exact int8 kernels on N more random inputs (seeds
# 201 on, neither the raced nor the calibration ones): within 3 steps on
# every value, and it prints on how many of the N each side's largest
# value (a classifier's top-1) is at the same index.
#
# --cpu NAME (default native) builds for that machine (tune build --cpu:
# native, x86-64-v2, x86-64-v3, x86-64-v4, a -march name) from the records
# tuned for it (tune --cpu); onnxruntime picks its kernels for this machine
# as it always does. The header names the CPU, the ISA level and one core's
# measured FMA peak (tune machine --peak).
set -euo pipefail
here=$PWD
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# The defaults are relative to the repository, paths given relative to the
# directory the script was started in.
models=()
default_models=(models/resnet18.onnx models/resnet50.onnx models/mobilenetv2.onnx models/bert_layer.onnx)
db=tuning.db
no_records=0
rounds=5
seconds=1.5
warmup=""
repeat=""
cpu=native
int8=0
integer=()
reduce_range=()
agree=0
threads_list="1 2"
# given PATH: a path from the command line, made usable from the repository.
given() {
	if [[ $1 == /* ]]; then echo "$1"; else echo "$here/$1"; fi
}
usage() {
	echo "usage: bench/onnxruntime.sh [--model FILE]... [--zoo] [--db FILE | --no-records] [--rounds K] [--seconds S] [--warmup W] [--repeat R] [--cpu NAME] [--int8 [--threads \"1 2\"] [--integer] [--reduce-range] [--agree N]]" >&2
	exit 2
}
while [ $# -gt 0 ]; do
	case "$1" in
	--model | --db | --rounds | --seconds | --warmup | --repeat | --cpu | --threads | --agree)
		[ $# -ge 2 ] || usage
		case "$1" in
		--agree) agree=$2 ;;
		--cpu) cpu=$2 ;;
		--threads) threads_list=${2//,/ } ;;
		--model) models+=("$(given "$2")") ;;
		--db) db=$(given "$2") ;;
		--rounds) rounds=$2 ;;
		--seconds) seconds=$2 ;;
		--warmup) warmup=$2 ;;
		--repeat) repeat=$2 ;;
		esac
		shift 2
		;;
	--model=* | --db=* | --rounds=* | --seconds=* | --warmup=* | --repeat=* | --cpu=* | --threads=* | --agree=*)
		set -- "${1%%=*}" "${1#*=}" "${@:2}"
		;;
	--no-records)
		no_records=1
		shift
		;;
	--int8)
		int8=1
		shift
		;;
	--integer)
		integer=(--integer)
		shift
		;;
	--reduce-range)
		reduce_range=(--reduce-range)
		shift
		;;
	--zoo)
		mapfile -t zoo <modelgen/zoo/models.txt
		for m in "${zoo[@]}"; do models+=("models/zoo/$m.onnx"); done
		shift
		;;
	-h | --help) usage ;;
	*)
		echo "onnxruntime.sh: unknown argument $1" >&2
		usage
		;;
	esac
done
[ ${#models[@]} -gt 0 ] || models=("${default_models[@]}")
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "onnxruntime.sh: --rounds wants a positive integer" >&2; exit 2; }
[ -z "$repeat" ] || [[ $repeat =~ ^[1-9][0-9]*$ ]] || { echo "onnxruntime.sh: --repeat wants a positive integer" >&2; exit 2; }
[ -z "$warmup" ] || [[ $warmup =~ ^[0-9]+$ ]] || { echo "onnxruntime.sh: --warmup wants an integer" >&2; exit 2; }
[[ $threads_list =~ ^[1-9][0-9]*( [1-9][0-9]*)*$ ]] || { echo "onnxruntime.sh: --threads wants thread counts, e.g. \"1 2\"" >&2; exit 2; }
[ "$int8" -eq 1 ] || [ "$threads_list" = "1 2" ] || { echo "onnxruntime.sh: --threads goes with --int8" >&2; exit 2; }
[[ $agree =~ ^[0-9]+$ ]] || { echo "onnxruntime.sh: --agree wants a number of inputs" >&2; exit 2; }
[ "$int8" -eq 1 ] || [ "$agree" -eq 0 ] || { echo "onnxruntime.sh: --agree goes with --int8" >&2; exit 2; }
if [ "$int8" -eq 0 ] && [ $((${#integer[@]} + ${#reduce_range[@]})) -gt 0 ]; then
	echo "onnxruntime.sh: --integer and --reduce-range go with --int8" >&2
	exit 2
fi
if ! [[ $seconds =~ ^[0-9]*\.?[0-9]+$ ]] || ! awk -v s="$seconds" 'BEGIN { exit !(s > 0) }'; then
	echo "onnxruntime.sh: --seconds wants a positive number" >&2
	exit 2
fi

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
bench/ort/ensure.sh || die "installing onnxruntime-node failed"

work=$(mktemp -d "${TMPDIR:-/tmp}/tessera-ort.XXXXXX")
trap 'rm -rf "$work"' EXIT
go build -o "$work/tune" ./cmd/tune
tune=$work/tune
# The header: what the code is compiled for, what the machine has, its peak.
"$tune" machine --cpu "$cpu" --peak | grep -E '^(cpu|peak)' || die "tune machine --cpu $cpu failed"
machine_key=$("$tune" machine --cpu "$cpu" | sed -n 's/^key: //p')

stats=""
if [ "$no_records" -eq 0 ] && [ -f "$db" ]; then
	stats=$("$tune" records stats --db "$db") || die "tune records stats --db $db failed"
fi
records=$(awk 'NR > 1 { n += $2 } END { print n + 0 }' <<<"$stats")

# field NAME < output: the value of the line "NAME = value".
field() { sed -n "s/^$1 = \([0-9.eE+-]*\).*/\1/p" | head -1; }
# minmed: "min median" of the numbers on stdin.
minmed() { sort -g | awk '{ x[NR] = $1 } END { m = NR % 2 ? x[(NR + 1) / 2] : (x[NR / 2] + x[NR / 2 + 1]) / 2; printf "%.3f %.3f\n", x[1], m }'; }
load() { cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo "?"; }

# ensure_model MODEL: a missing model of the zoo (models/zoo, as --zoo or
# --model names it) is exported with PyTorch, any other generated
# (cmd/genmodels).
ensure_model() {
	local model=$1 name dir
	name=$(basename "$model" .onnx)
	dir=$(dirname "$model")
	if [ ! -f "$model" ] && { [ "$dir" = models/zoo ] || [ "$dir" = "$PWD/models/zoo" ]; }; then
		note "$model is missing: exporting it (modelgen/zoo/export.py -o models/zoo $name)"
		"$(torch_python)" modelgen/zoo/export.py -o models/zoo "$name" >&2 || die "export.py $name failed"
	elif [ ! -f "$model" ]; then
		note "$model is missing: generating it (go run ./cmd/genmodels -o $dir $name)"
		go run ./cmd/genmodels -o "$dir" "$name" >&2
	fi
	[ -f "$model" ] || die "no $model was written"
}

# --- one model: build, check, race -----------------------------------------
# These are set by prepare for the model being raced.
model="" name="" input_flags=() keys=()
declare -A tuned_with build_threads out

# prepare MODEL: generates the model if it is missing, writes its inputs,
# builds it for 1 and 2 threads and checks both builds' outputs against
# onnxruntime's.
prepare() {
	model=$1
	name=$(basename "$model" .onnx)
	local base=${model%.onnx}
	ensure_model "$model"
	local dir=$work/$name written
	mkdir -p "$dir"
	# PyTorch's input and output, where the model was exported with them
	# (modelgen/zoo): its input is raced and both sides checked against
	# its output; otherwise random inputs.
	pytorch_ref=()
	if [ -f "$base.input.npy" ] && [ -f "$base.output.npy" ] && [ -f "$base.json" ]; then
		written=$(node -e 'const j = JSON.parse(require("fs").readFileSync(process.argv[1])); console.log(j.input.name + "\t" + j.output.name)' "$base.json") ||
			die "cannot read $base.json"
		written=${written%%$'\t'*}=$base.input.npy
		pytorch_ref=("$base.output.npy")
	else
		written=$(node "$ort_dir/input.mjs" "$model" "$dir/in" 1) || die "could not write inputs for $model"
	fi
	local inputs=()
	mapfile -t inputs <<<"$written"
	input_flags=()
	local i
	for i in "${inputs[@]}"; do input_flags+=(--input "$i"); done

	# Records are kept per target, and the target names the thread count
	# the kernels were measured with (tune --threads). For each thread count
	# of the race the build takes the records measured with that many
	# threads, or else those of the other count (a schedule tuned for 2
	# threads still runs on 1). With no record for the model's tasks at all
	# Tessera builds default schedules: say so loudly, the race then says
	# nothing about tuning.
	local listed
	listed=$("$tune" inspect "$model") || die "tune inspect $model failed"
	mapfile -t keys < <(awk '/^tasks:/ { t = 1; next } t && $1 ~ /^[0-9]+$/ && $2 ~ /^v[0-9]+-/ { print $2 }' <<<"$listed")
	[ ${#keys[@]} -gt 0 ] || die "tune inspect $model lists no tasks"
	tuned_with[1]=$(tuned 1)
	tuned_with[2]=$(tuned 2)
	if [ "$no_records" -eq 0 ] && [ "${tuned_with[1]}" -eq 0 ] && [ "${tuned_with[2]}" -eq 0 ]; then
		cat >&2 <<WARN
onnxruntime.sh: ************************************************************
onnxruntime.sh: WARNING: $db has no measured schedule for any task of
onnxruntime.sh: $model ($records records in all): Tessera builds DEFAULT
onnxruntime.sh: schedules, so this race measures untuned kernels. Tune first:
onnxruntime.sh:   go run ./cmd/tune --trials 2000 --threads 1 --db $db $model
onnxruntime.sh: ************************************************************
WARN
	fi
	local t o bt n
	for t in 1 2; do
		o=$((3 - t))
		bt=$t
		if [ "${tuned_with[$t]}" -eq 0 ] && [ "${tuned_with[$o]}" -gt 0 ]; then
			bt=$o
			note "$name: no records measured with $t thread(s) in $db: the $t-thread race uses those measured with $o"
		fi
		build_threads[$t]=$bt
		out[$t]=$dir/build-$bt
		if [ "${tuned_with[$bt]}" -eq 0 ]; then
			out[$t]=$dir/build-default # the same for every thread count
		fi
		n=${tuned_with[$bt]}
		if [ "$n" -gt 0 ] && [ "$n" -lt ${#keys[@]} ]; then
			note "warning: only $n of ${#keys[@]} tasks of $model have a schedule measured with $bt thread(s) in $db"
		fi
		[ -d "${out[$t]}" ] && continue
		if [ "$no_records" -eq 0 ] && [ -f "$db" ]; then
			"$tune" build "$model" --db "$db" --threads "$bt" --cpu "$cpu" -o "${out[$t]}" >"$dir/build.log" 2>&1 ||
				{ cat "$dir/build.log" >&2; die "tune build $model failed"; }
		else
			# no empty db left behind
			"$tune" build "$model" --no-records --cpu "$cpu" -o "${out[$t]}" >"$dir/build.log" 2>&1 ||
				{ cat "$dir/build.log" >&2; die "tune build $model failed"; }
		fi
		grep -E '^(built|tuned tasks|tuned FLOPs) ' "$dir/build.log" | sed "s/^/onnxruntime.sh: $name: /" >&2 || true
	done

	# Both sides run the input files; the model's first output is compared,
	# for every build the race uses.
	for t in 1 2; do
		[ "$t" -eq 1 ] || [ "${out[2]}" != "${out[1]}" ] || continue
		local ran first oname tfile what
		ran=$("$tune" run "${out[$t]}" "${input_flags[@]}" --threads "$t" -o "$dir/tessera-out-$t" --format raw) ||
			die "tune run ${out[$t]} failed"
		# "output NAME[d0,d1,...] → FILE"
		first=$(sed -n 's/^output \(.*\)\[[0-9, ]*\] → \(.*\)$/\1\t\2/p' <<<"$ran" | head -1)
		[ -n "$first" ] || die "tune run printed no output line: $ran"
		oname=${first%%$'\t'*}
		tfile=${first#*$'\t'}
		if [ ! -f "$dir/ort.out" ]; then
			node "$ort_dir/bench.mjs" "$model" "${input_flags[@]}" --threads 1 --warmup 0 --repeat 1 \
				--output "$oname=$dir/ort.out" >/dev/null 2>"$work/err" || {
				cat "$work/err" >&2
				die "onnxruntime failed on $model"
			}
			if [ ${#pytorch_ref[@]} -gt 0 ]; then
				printf 'onnxruntime.sh: %s: onnxruntime vs PyTorch: ' "$name" >&2
				node "$ort_dir/compare.mjs" "$dir/ort.out" "${pytorch_ref[0]}" "$rtol" "$atol_rel" >&2 ||
					die "$name: onnxruntime's output differs from PyTorch's: no race"
			fi
		fi
		if [ ${#pytorch_ref[@]} -gt 0 ]; then
			printf 'onnxruntime.sh: %s: Tessera (%s) vs PyTorch: ' "$name" "$(basename "${out[$t]}")" >&2
			node "$ort_dir/compare.mjs" "$tfile" "${pytorch_ref[0]}" "$rtol" "$atol_rel" >&2 ||
				die "$name: Tessera's output differs from PyTorch's: no race"
		fi
		what="records measured with ${build_threads[$t]} thread(s)"
		[ "${tuned_with[${build_threads[$t]}]}" -gt 0 ] || what="default schedules"
		printf 'onnxruntime.sh: %s: build from %s, output %s: ' "$name" "$what" "$oname" >&2
		node "$ort_dir/compare.mjs" "$tfile" "$dir/ort.out" "$rtol" "$atol_rel" >&2 ||
			die "$name: Tessera's and onnxruntime's outputs differ: no race"
	done
}

# torch_python: a Python that imports torch and torchvision (Debian's
# python3-torch is /usr/bin/python3's, which a python3 earlier on PATH may
# not see).
torch_python() {
	local p
	for p in python3 /usr/bin/python3; do
		if "$p" -c 'import torch, torchvision' 2>/dev/null; then
			echo "$p"
			return
		fi
	done
	die "no Python with PyTorch to export the zoo: run scripts/deps.sh (python3-torch, python3-torchvision)"
}

# tuned T: how many of the model's tasks have a valid record measured with T
# threads for --cpu's machine (stats columns: workload records errors
# best-ms target...).
tuned() {
	local n=0 k
	for k in "${keys[@]}"; do
		if awk -v k="$k" -v t=" threads=$1 " -v m="$machine_key" 'index($1, k) == 1 && $4 != "-" && index($0, t) && index($0, m) { f = 1 } END { exit !f }' <<<"$stats"; then
			n=$((n + 1))
		fi
	done
	echo "$n"
}

run_tessera() { # THREADS WARMUP REPEAT
	"$tune" bench "${out[$1]}" --threads "$1" --warmup "$2" --repeat "$3"
}
run_ort() { # THREADS WARMUP REPEAT
	node "$ort_dir/bench.mjs" "$model" "${input_flags[@]}" --threads "$1" --warmup "$2" --repeat "$3"
}
# one NAME THREADS WARMUP REPEAT: runs a contender once in its own process,
# appends its min and median to $work/NAME-MODEL-THREADS.{min,median} and
# prints the median.
one() {
	local r mn md
	if ! r=$("run_$1" "$2" "$3" "$4" 2>"$work/err"); then
		cat "$work/err" >&2
		die "$name: $1 with $2 thread(s) failed"
	fi
	mn=$(field "min ms" <<<"$r")
	md=$(field "median ms" <<<"$r")
	if [ -z "$mn" ] || [ -z "$md" ]; then
		die "$1 printed no 'min ms = ' and 'median ms = ' lines: $r"
	fi
	echo "$mn" >>"$work/$1-$name-$2.min"
	echo "$md" >>"$work/$1-$name-$2.median"
	echo "$md"
}

# race: the alternating rounds of the prepared model at 1 and 2 threads;
# records each ratio in ratio[MODEL-T].
declare -A ratio
summary=()
race() {
	local w=$warmup r=$repeat
	if [ -z "$r" ]; then
		# The probe: one warm-up and three timed runs of each side at 1
		# thread (their median).
		local pt po slow
		pt=$(one tessera 1 1 3) || exit 1
		po=$(one ort 1 1 3) || exit 1
		rm -f "$work"/*-"$name"-1.min "$work"/*-"$name"-1.median
		slow=$(awk -v a="$pt" -v b="$po" 'BEGIN { print (a > b ? a : b) }')
		r=$(awk -v s="$seconds" -v t="$slow" 'BEGIN { r = int(s * 1000 / t + 0.999); print (r < 3 ? 3 : (r > 200 ? 200 : r)) }')
		note "$name: one run takes $pt ms (Tessera) and $po ms (onnxruntime) at 1 thread: $r timed runs per process"
	fi
	if [ -z "$w" ]; then
		w=$((r / 5))
		((w >= 1)) || w=1
		((w <= 10)) || w=10
	fi
	echo "$name: $rounds alternating rounds per thread count, $w warm-up + $r timed runs per process;" \
		"tasks with records: ${tuned_with[1]} of ${#keys[@]} measured with 1 thread, ${tuned_with[2]} with 2"
	local t k tmin tmed omin omed
	for t in 1 2; do
		for ((k = 0; k < rounds; k++)); do
			if ((k % 2 == 0)); then
				one tessera "$t" "$w" "$r" >/dev/null
				one ort "$t" "$w" "$r" >/dev/null
			else
				one ort "$t" "$w" "$r" >/dev/null
				one tessera "$t" "$w" "$r" >/dev/null
			fi
		done
		read -r tmin _ < <(minmed <"$work/tessera-$name-$t.min")
		read -r _ tmed < <(minmed <"$work/tessera-$name-$t.median")
		read -r omin _ < <(minmed <"$work/ort-$name-$t.min")
		read -r _ omed < <(minmed <"$work/ort-$name-$t.median")
		echo "$name threads=$t tessera min ms = $tmin"
		echo "$name threads=$t tessera median ms = $tmed"
		echo "$name threads=$t onnxruntime min ms = $omin"
		echo "$name threads=$t onnxruntime median ms = $omed"
		ratio[$name-$t]=$(awk -v o="$omed" -v s="$tmed" 'BEGIN { printf "%.3g", o / s }')
		summary+=("$name threads=$t tessera/onnxruntime = ${ratio[$name-$t]}")
	done
}

# --- --int8: quantize, build, check, race three ways --------------------------
# These are set by prepare_int8 for the model being raced.
qmodel="" qbuild="" fbuild=""
declare -A qbuilds fbuilds # per thread count: the build raced (with --db, built with that count's records)

# prepare_int8 MODEL: generates the model if it is missing, writes the
# raced input and the calibration set, quantizes the model, builds the QDQ
# file and checks the outputs.
prepare_int8() {
	model=$1
	name=$(basename "$model" .onnx)
	ensure_model "$model"
	local dir=$work/$name inputs=() cal=() files=() s f
	mkdir -p "$dir"
	mapfile -t inputs < <(node "$ort_dir/input.mjs" "$model" "$dir/in" 1)
	[ ${#inputs[@]} -gt 0 ] || die "could not write inputs for $model"
	input_flags=()
	for f in "${inputs[@]}"; do input_flags+=(--input "$f"); done
	for s in 101 102 103 104 105 106 107 108; do
		mapfile -t files < <(node "$ort_dir/input.mjs" "$model" "$dir/cal-$s" "$s" --npy)
		[ ${#files[@]} -eq ${#inputs[@]} ] || die "could not write calibration inputs for $model"
		for f in "${files[@]}"; do cal+=(--calibrate "${f#*=}"); done
	done
	qmodel=$dir/$name.int8.onnx
	"$tune" quantize "$model" -o "$qmodel" "${cal[@]}" "${reduce_range[@]}" >"$dir/quantize.log" 2>&1 ||
		{ cat "$dir/quantize.log" >&2; die "tune quantize $model failed"; }
	sed "s/^/onnxruntime.sh: $name: /" "$dir/quantize.log" >&2
	local step
	step=$(sed -n 's/^output [^ ]*: scale \([^,]*\), zero point .*/\1/p' "$dir/quantize.log" | head -1)
	[ -n "$step" ] || die "$name: tune quantize printed no output scale (its first output is not quantized)"
	qbuild=$dir/build-int8 fbuild=$dir/build-fp32
	if [ "$no_records" -eq 0 ] && [ -f "$db" ]; then
		# Records carry their thread count: each raced thread count gets
		# the builds of its own records, or of the count that has the
		# most where it has none (tune --threads 1 is the usual tuning).
		local t kind src best n
		local -A tuned_n
		for t in $threads_list; do
			"$tune" build "$qmodel" --db "$db" "${integer[@]}" --threads "$t" --cpu "$cpu" -o "$qbuild-$t" >"$dir/build-$t.log" 2>&1 ||
				{ cat "$dir/build-$t.log" >&2; die "tune build $qmodel failed"; }
			"$tune" build "$model" --db "$db" --threads "$t" --cpu "$cpu" -o "$fbuild-$t" >"$dir/build-fp32-$t.log" 2>&1 ||
				{ cat "$dir/build-fp32-$t.log" >&2; die "tune build $model failed"; }
			tuned_n[$t]=$(sed -n 's/^tuned tasks = \([0-9]*\)\/.*/\1/p' "$dir/build-$t.log" | head -1)
			grep -E '^(built|tuned tasks|tuned FLOPs) ' "$dir/build-$t.log" | sed "s/^/onnxruntime.sh: $name: int8 build with $t thread(s)' records: /" >&2 || true
		done
		best=${threads_list%% *}
		for t in $threads_list; do
			[ "${tuned_n[$t]:-0}" -gt "${tuned_n[$best]:-0}" ] && best=$t
		done
		for t in $threads_list; do
			src=$t
			if [ "${tuned_n[$t]:-0}" -eq 0 ] && [ "${tuned_n[$best]:-0}" -gt 0 ]; then
				src=$best
				note "$name: no int8 records measured with $t thread(s) in $db: the $t-thread race uses those measured with $best"
			fi
			qbuilds[$t]=$qbuild-$src fbuilds[$t]=$fbuild-$src
		done
		qbuild=${qbuilds[${threads_list%% *}]}
	else
		"$tune" build "$qmodel" --no-records "${integer[@]}" --cpu "$cpu" -o "$qbuild" >"$dir/build.log" 2>&1 ||
			{ cat "$dir/build.log" >&2; die "tune build $qmodel failed"; }
		"$tune" build "$model" --no-records --cpu "$cpu" -o "$fbuild" >"$dir/build-fp32.log" 2>&1 ||
			{ cat "$dir/build-fp32.log" >&2; die "tune build $model failed"; }
		grep -E '^(built|tuned tasks|tuned FLOPs) ' "$dir/build.log" | sed "s/^/onnxruntime.sh: $name: int8 build: /" >&2 || true
		for t in $threads_list; do qbuilds[$t]=$qbuild fbuilds[$t]=$fbuild; done
	fi

	# The outputs on the raced input: Tessera's int8, onnxruntime's int8
	# exact and default, and the float model's, compared in output steps.
	local ran first tfile oname
	ran=$("$tune" run "$qbuild" "${input_flags[@]}" --threads 1 -o "$dir/tessera-out" --format raw) || die "tune run $qbuild failed"
	first=$(sed -n 's/^output \(.*\)\[[0-9, ]*\] → \(.*\)$/\1\t\2/p' <<<"$ran" | head -1)
	oname=${first%%$'\t'*}
	tfile=${first#*$'\t'}
	local exact=$dir/ort-exact fast=$dir/ort-int8 fp32=$dir/ort-fp32 file
	node "$ort_dir/run.mjs" "$qmodel" "$exact" "${input_flags[@]}" --config session.x64quantprecision=1 >/dev/null ||
		die "onnxruntime failed on $qmodel"
	node "$ort_dir/run.mjs" "$qmodel" "$fast" "${input_flags[@]}" >/dev/null || die "onnxruntime failed on $qmodel"
	node "$ort_dir/run.mjs" "$model" "$fp32" "${input_flags[@]}" >/dev/null || die "onnxruntime failed on $model"
	file=${oname//[^A-Za-z0-9_.-]/_}.bin
	printf 'onnxruntime.sh: %s: Tessera int8 vs onnxruntime int8 (exact kernels): ' "$name" >&2
	node "$ort_dir/steps.mjs" "$tfile" "$exact/$file" "$step" 3 >&2 ||
		die "$name: Tessera's and onnxruntime's int8 outputs differ: no race"
	printf 'onnxruntime.sh: %s: Tessera int8 vs onnxruntime int8 (default session, raced): ' "$name" >&2
	node "$ort_dir/steps.mjs" "$tfile" "$fast/$file" "$step" >&2
	printf 'onnxruntime.sh: %s: Tessera int8 vs onnxruntime fp32: ' "$name" >&2
	node "$ort_dir/steps.mjs" "$tfile" "$fp32/$file" "$step" >&2
	printf 'onnxruntime.sh: %s: onnxruntime int8 (default session) vs onnxruntime fp32: ' "$name" >&2
	node "$ort_dir/steps.mjs" "$fast/$file" "$fp32/$file" "$step" >&2
	local b distinct=()
	mapfile -t distinct < <(printf '%s\n' "${qbuilds[@]}" | sort -u)
	for b in "${distinct[@]}"; do
		[ "$b" != "$qbuild" ] || continue
		ran=$("$tune" run "$b" "${input_flags[@]}" --threads 1 -o "$dir/tessera-out-${b##*-}" --format raw) || die "tune run $b failed"
		printf 'onnxruntime.sh: %s: Tessera int8 (%s) vs onnxruntime int8 (exact kernels): ' "$name" "${b##*/}" >&2
		node "$ort_dir/steps.mjs" "$(sed -n 's/^output .*\[[0-9, ]*\] → \(.*\)$/\1/p' <<<"$ran" | head -1)" "$exact/$file" "$step" 3 >&2 ||
			die "$name: Tessera's (${b##*/}) and onnxruntime's int8 outputs differ: no race"
	done
	[ "$agree" -eq 0 ] || agree_int8 "$dir" "$file" "$step"
}

# agree_int8 DIR FILE STEP: Tessera's int8 build against onnxruntime's
# exact int8 kernels on --agree more random inputs (output FILE of each,
# in steps STEP).
agree_int8() {
	local dir=$1 file=$2 step=$3 pairs=() s f flags=() ran tfile
	for ((s = 201; s < 201 + agree; s++)); do
		mapfile -t files < <(node "$ort_dir/input.mjs" "$model" "$dir/agree-$s" "$s")
		flags=()
		for f in "${files[@]}"; do flags+=(--input "$f"); done
		ran=$("$tune" run "$qbuild" "${flags[@]}" --threads 1 -o "$dir/agree-$s/tessera" --format raw) || die "tune run $qbuild failed"
		tfile=$(sed -n 's/^output .*\[[0-9, ]*\] → \(.*\)$/\1/p' <<<"$ran" | head -1)
		node "$ort_dir/run.mjs" "$qmodel" "$dir/agree-$s/ort" "${flags[@]}" --config session.x64quantprecision=1 >/dev/null ||
			die "onnxruntime failed on $qmodel"
		pairs+=("$tfile" "$dir/agree-$s/ort/$file")
	done
	printf 'onnxruntime.sh: %s: Tessera int8 vs onnxruntime int8 (exact kernels): ' "$name" >&2
	node "$ort_dir/agree.mjs" "$step" 3 "${pairs[@]}" >&2 ||
		die "$name: Tessera's and onnxruntime's int8 outputs differ: no race"
}

run_tessera8() { "$tune" bench "${qbuilds[$1]:-$qbuild}" --threads "$1" --warmup "$2" --repeat "$3"; }
run_tesseraf() { "$tune" bench "${fbuilds[$1]:-$fbuild}" --threads "$1" --warmup "$2" --repeat "$3"; }
run_ort8() { node "$ort_dir/bench.mjs" "$qmodel" "${input_flags[@]}" --threads "$1" --warmup "$2" --repeat "$3"; }
run_ortf() { node "$ort_dir/bench.mjs" "$model" "${input_flags[@]}" --threads "$1" --warmup "$2" --repeat "$3"; }

# race_int8: rounds of the four contenders, in rotating order, at each
# thread count.
race_int8() {
	local w=$warmup r=$repeat c
	local contenders=(tessera8 ort8 ortf tesseraf)
	if [ -z "$r" ]; then
		local slow=0 p
		for c in "${contenders[@]}"; do
			p=$(one "$c" 1 1 3) || exit 1
			slow=$(awk -v a="$slow" -v b="$p" 'BEGIN { print (a > b ? a : b) }')
		done
		rm -f "$work"/*-"$name"-1.min "$work"/*-"$name"-1.median
		r=$(awk -v s="$seconds" -v t="$slow" 'BEGIN { r = int(s * 1000 / t + 0.999); print (r < 3 ? 3 : (r > 200 ? 200 : r)) }')
		note "$name: the slowest contender takes $slow ms at 1 thread: $r timed runs per process"
	fi
	if [ -z "$w" ]; then
		w=$((r / 5))
		((w >= 1)) || w=1
		((w <= 10)) || w=10
	fi
	echo "$name: $rounds rounds of ${#contenders[@]} contenders per thread count, $w warm-up + $r timed runs per process"
	local t k j
	local -A med
	for t in $threads_list; do
		for ((k = 0; k < rounds; k++)); do
			for ((j = 0; j < ${#contenders[@]}; j++)); do
				one "${contenders[(k + j) % ${#contenders[@]}]}" "$t" "$w" "$r" >/dev/null
			done
		done
		local what m md
		for c in "${contenders[@]}"; do
			read -r m _ < <(minmed <"$work/$c-$name-$t.min")
			read -r _ md < <(minmed <"$work/$c-$name-$t.median")
			what=${c/tessera8/tessera-int8}
			what=${what/ort8/onnxruntime-int8}
			what=${what/ortf/onnxruntime-fp32}
			what=${what/tesseraf/tessera-fp32}
			echo "$name threads=$t $what min ms = $m"
			echo "$name threads=$t $what median ms = $md"
			med[$c]=$md
		done
		ratio[$name-$t]=$(awk -v o="${med[ort8]}" -v s="${med[tessera8]}" 'BEGIN { printf "%.3g", o / s }')
		summary+=("$name threads=$t tessera-int8/onnxruntime-int8 = ${ratio[$name-$t]}")
		summary+=("$name threads=$t tessera-int8/tessera-fp32 = $(awk -v f="${med[tesseraf]}" -v i="${med[tessera8]}" 'BEGIN { printf "%.3g", f / i }')")
		summary+=("$name threads=$t onnxruntime-int8/onnxruntime-fp32 = $(awk -v f="${med[ortf]}" -v i="${med[ort8]}" 'BEGIN { printf "%.3g", f / i }')")
	done
}

# geomeans LABEL prints, with more than one model, the geometric mean of
# the ratios (ratio[MODEL-T]) at each thread count raced:
#	geomean threads=T LABEL = <g>
geomeans() {
	[ ${#models[@]} -gt 1 ] || return 0
	local t m
	for t in $threads_list; do
		for m in "${!ratio[@]}"; do
			if [[ $m == *-$t ]]; then echo "${ratio[$m]}"; fi
		done |
			awk -v t="$t" -v label="$1" '{ s += log($1); n++ } END { if (n) printf "geomean threads=%d %s = %.3g\n", t, label, exp(s / n) }'
	done
}

if [ "$int8" -eq 1 ]; then
	start=$SECONDS
	note "--int8: load average $(load) on $(nproc) cores before the race (above ~0.5 the figures are noisy)"
	declare -A ratio
	summary=()
	first=""
	for m in "${models[@]}"; do
		prepare_int8 "$m"
		race_int8
		[ -n "$first" ] || first=$name
	done
	note "load average $(load) after the race; $((SECONDS - start)) s in all"
	printf '%s\n' "${summary[@]}"
	geomeans tessera-int8/onnxruntime-int8
	echo "tessera-int8/onnxruntime-int8 = ${ratio[$first-${threads_list%% *}]}"
	exit 0
fi

if [ "$no_records" -eq 1 ]; then
	note "--no-records: every model is built with default schedules (the untuned build)"
elif [ ! -f "$db" ]; then
	note "$db does not exist: every model is built with default schedules (the untuned build)"
fi
start=$SECONDS
note "load average $(load) on $(nproc) cores before the race (above ~0.5 the figures are noisy)"
first=""
for m in "${models[@]}"; do
	prepare "$m"
	race
	[ -n "$first" ] || first=$name
done
note "load average $(load) after the race; $((SECONDS - start)) s in all"
printf '%s\n' "${summary[@]}"
geomeans tessera/onnxruntime
echo "tessera/onnxruntime = ${ratio[$first-1]}"
