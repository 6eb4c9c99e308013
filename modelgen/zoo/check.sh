#!/bin/bash
# check.sh: every model of the zoo exported (export.py, when DIR lacks it),
# built with default schedules and run on its input, its output compared
# with PyTorch's (rtol 1e-3); the last line is "N of M models match".
#
# With --dynamic it checks the exports with a dynamic batch instead
# (export.py --dynamic, NAME_dynamic.onnx): `tune inspect --range N=1..16`
# must derive each one's tasks over the range ("N of M models give their
# tasks over N=1..16"), and those whose groups compute each sample apart
# are built over the range (tune build --range, default schedules) and run
# on PyTorch's input of batch 3 (NAME_dynamic.input.npy), their output
# compared with PyTorch's; the last line is "N of M models build over
# N=1..16 one sample at a time and match PyTorch at N=3".
#
# usage: modelgen/zoo/check.sh [--dynamic] [-o DIR] [NAME ...]   (DIR: models/zoo)
set -u
cd "$(dirname "$0")/../.."
dir=models/zoo
dynamic=0
if [ "${1:-}" = --dynamic ]; then
	dynamic=1
	shift
fi
if [ "${1:-}" = -o ]; then
	dir=$2
	shift 2
fi
names=("$@")
[ ${#names[@]} -gt 0 ] || mapfile -t names <modelgen/zoo/models.txt
# PyTorch is Debian's python3-torch, /usr/bin/python3's; a python3 earlier on
# PATH (pyenv's) may lack it.
py=
for p in python3 /usr/bin/python3; do
	"$p" -c 'import torch, torchvision' 2>/dev/null && { py=$p; break; }
done
if [ -z "$py" ]; then
	echo "check.sh: no PyTorch (scripts/deps.sh installs python3-torch and python3-torchvision)" >&2
	exit 2
fi
mkdir -p "$dir"
go build -o "$dir/.tune" ./cmd/tune || exit 1
ok=0
# exported FILE NAME [FLAG]: FILE exists, or export.py FLAG writes it.
exported() {
	[ -f "$1" ] && return 0
	"$py" modelgen/zoo/export.py -o "$dir" ${3:+"$3"} "$2" 2>&1 | grep -v Warning || { echo "$2: export failed"; return 1; }
}
# checked NAME MODEL OUT LOG INPUT OUTPUT [BUILD FLAG...]: builds MODEL
# with default schedules into OUT and runs it on INPUT against PyTorch's
# OUTPUT; prints the outcome after "NAME: " and says whether it matched.
checked() {
	local name=$1 model=$2 out=$3 log=$4 input=$5 output=$6 t0=$SECONDS res
	shift 6
	if ! "$dir/.tune" build --no-records "$@" -o "$out" "$model" >"$log" 2>&1; then
		echo "$name: build failed: $(grep -v '^warning' "$log" | tail -1)"
		return 1
	fi
	local built=$((SECONDS - t0))
	if res=$("$dir/.tune" run "$out" --input input="$input" --reference output="$output" -o "$out-out" 2>&1); then
		echo "$name: matches PyTorch ($(echo "$res" | grep -o 'max abs error = [^,]*'), built in ${built}s)"
		return 0
	fi
	echo "$name: differs: $(echo "$res" | tail -1)"
	return 1
}
if [ $dynamic = 1 ]; then
	batched=0
	for m in "${names[@]}"; do
		base=$dir/${m}_dynamic
		[ -f "$base.input.npy" ] || rm -f "$base.onnx" # exported before the check inputs were
		exported "$base.onnx" "$m" --dynamic || continue
		if ! out=$("$dir/.tune" inspect "$base.onnx" --range N=1..16 2>&1); then
			echo "$m: no plan over N=1..16: $(echo "$out" | tail -1)"
			continue
		fi
		ok=$((ok + 1))
		verdict=$(echo "$out" | tail -1)
		echo "$m: $verdict"
		case $verdict in *": yes,"*) ;; *) continue ;; esac
		# Built over the batch (default schedules) and run on PyTorch's
		# input of batch 3.
		if checked "$m over N=1..16, at N=3" "$base.onnx" "$dir/build/${m}_dynamic" "$base.build.log" "$base.input.npy" "$base.output.npy" --range N=1..16; then
			batched=$((batched + 1))
		fi
	done
	echo "$ok of ${#names[@]} models give their tasks over N=1..16"
	echo "$batched of ${#names[@]} models build over N=1..16 one sample at a time and match PyTorch at N=3"
	exit 0
fi
for m in "${names[@]}"; do
	exported "$dir/$m.onnx" "$m" || continue
	if checked "$m" "$dir/$m.onnx" "$dir/build/$m" "$dir/$m.build.log" "$dir/$m.input.npy" "$dir/$m.output.npy"; then
		ok=$((ok + 1))
	fi
done
echo "$ok of ${#names[@]} models match"
