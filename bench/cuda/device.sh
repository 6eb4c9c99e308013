#!/bin/bash
# device.sh: the CUDA checks, run on a machine with an NVIDIA GPU and no Go
# toolchain or network. Everything it runs is prepared on another machine
# by bench/cuda/prepare.sh (static builds of tune, genmodels, the benches
# and the target tests, with the inputs and Tessera's CPU outputs of the
# shipped models) into .gpu/; what it writes goes to $OUT (default ./out):
# log.txt, and records.tgz with the records databases it tuned into.
#
# usage: bench/cuda/device.sh STEP...
#   env       the GPU, driver, compilers, NVRTC and PyTorch
#   sweep     random GPU schedules of every op, run as CUDA, checked
#   models    tiny and ResNet-18 built for cuda (default schedules or the
#             records of .gpu/records), checked against Tessera's CPU
#             build and PyTorch, and raced against PyTorch eager
#   kernels   bench/gemm 1024 and 4096, bench/conv (ResNet 3x3) against
#             cuBLAS and cuDNN; with TUNE_SECONDS, each tuned that long first
#   tune      ResNet-18 tuned with tune --target cuda for TUNE_SECONDS
#             (resumable: its records go on in .gpu/records/resnet18.db)
set -u
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
LOG=$OUT/log.txt
ROOT=$PWD
G=$ROOT/.gpu
W=/tmp/tessera-gpu
mkdir -p "$W" "$G/records"
TUNE_SECONDS=${TUNE_SECONDS:-0}
TARGET=${TARGET:-cuda}             # opencl: a dry run of the steps on PoCL
TORCH_DEVICE=${TORCH_DEVICE:-cuda} # cpu: likewise
MODELS=${MODELS:-tiny resnet18}
ROUNDS=${ROUNDS:-3}
PYTHON=${PYTHON:-python3}          # the Python with PyTorch (and numpy)

say() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$LOG"; }
# step NAME SECONDS CMD...: one command, bounded, its output in the log.
step() {
	local name=$1 secs=$2
	shift 2
	say "$name: $*"
	local t0=$SECONDS
	timeout -k 15 "$secs" "$@" >>"$LOG" 2>&1
	local rc=$?
	say "$name: exit $rc after $((SECONDS - t0)) s"
	return $rc
}

setup() {
	[ -x "$W/bin/tune" ] || tar xzf "$G/bin.tgz" -C "$W"
	export PATH=$W/bin:$PATH
	# NVRTC: the CUDA toolkit's, else the one PyTorch's wheels carry.
	if [ -z "${TESSERA_NVRTC:-}" ]; then
		local lib
		lib=$(ls /usr/local/cuda/lib64/libnvrtc.so.1[0-9]* /usr/local/cuda*/lib64/libnvrtc.so.1[0-9]* \
			/usr/local/cuda/targets/x86_64-linux/lib/libnvrtc.so.1[0-9]* 2>/dev/null | grep -v builtins | head -1)
		[ -n "$lib" ] || lib=$(find / -xdev -name 'libnvrtc.so.1[0-9]*' 2>/dev/null | grep -v builtins | head -1)
		if [ -n "$lib" ]; then
			export TESSERA_NVRTC=$lib
			export LD_LIBRARY_PATH=$(dirname "$lib")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
		fi
	fi
}

env_step() {
	{
		nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
		nvidia-smi | head -4
		uname -r
		cc --version | head -1
		echo "TESSERA_NVRTC=${TESSERA_NVRTC:-none}"
		"$PYTHON" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version(), torch.cuda.get_device_name())'
		nproc
	} >>"$LOG" 2>&1
}

sweep_step() {
	step sweep 240 env TESSERA_CUDA_SWEEP=${SWEEP:-2} target.test -test.run 'TestCUDA' -test.v -test.timeout 230s
}

# model NAME FILE: build for cuda (records of .gpu/records/NAME.db where
# there are any), check against Tessera's CPU outputs and PyTorch's, race.
model() {
	local name=$1 file=$2 d=$W/$1
	mkdir -p "$d/in"
	cp "$G/data/$name/input.bin" "$d/in/input.bin"
	local db=(--no-records)
	[ -f "$G/records/$name.db" ] && db=(--db "$G/records/$name.db")
	step "$name build" 300 tune build --target "$TARGET" "${db[@]}" -o "$d/cuda" "$file" || return
	step "$name pytorch" 240 "$PYTHON" "$ROOT/bench/cuda/torch_onnx.py" "$file" --dir "$d/in" --repeat 100 --warmup 20 --device "$TORCH_DEVICE"
	step "$name check vs cpu" 120 tune run "$d/cuda" --input input="$d/in/input.bin" --reference output="$G/data/$name/cpu/output.bin" -o "$d/out"
	step "$name check vs pytorch" 120 tune run "$d/cuda" --input input="$d/in/input.bin" --reference output="$d/in/torch_output.bin" -o "$d/out"
	for round in $(seq "$ROUNDS"); do
		step "$name race $round tessera graph" 120 tune bench "$d/cuda" --warmup 20 --repeat 100
		step "$name race $round tessera no-graph" 120 env TESSERA_CUDA_GRAPH=0 tune bench "$d/cuda" --warmup 20 --repeat 100
		step "$name race $round pytorch" 120 "$PYTHON" "$ROOT/bench/cuda/torch_onnx.py" "$file" --dir "$d/in" --repeat 100 --warmup 20 --device "$TORCH_DEVICE"
	done
}

models_step() {
	for m in $MODELS; do
		if [ "$m" = tiny ]; then
			model tiny "$ROOT/testdata/tiny.onnx"
			continue
		fi
		[ -f "$W/models/$m.onnx" ] || step genmodels 120 genmodels -o "$W/models" "$m"
		model "$m" "$W/models/$m.onnx"
	done
}

kernels_step() {
	local tune=()
	if [ "$TUNE_SECONDS" -gt 0 ]; then
		tune=(-trials 100000 -tune-for "${TUNE_SECONDS}s")
	fi
	step "gemm 1024" 600 gemm -target cuda -n 1024 -rounds "$ROUNDS" -gpu-db "$G/records/gemm1024.db" "${tune[@]}"
	step "gemm 4096" 600 gemm -target cuda -n 4096 -rounds "$ROUNDS" -gpu-db "$G/records/gemm4096.db" "${tune[@]}"
	step "conv" 600 conv -target cuda -rounds "$ROUNDS" -gpu-db "$G/records/conv.db" "${tune[@]}"
}

tune_step() {
	[ -f "$W/models/resnet18.onnx" ] || step genmodels 120 genmodels -o "$W/models" resnet18
	step "tune resnet18" $((TUNE_SECONDS + 60)) timeout -s INT "$TUNE_SECONDS" \
		tune --target cuda --cost-model none --trials 20000 --db "$G/records/resnet18.db" "$W/models/resnet18.onnx"
}

setup
say "device.sh $* on $(hostname)"
for s in "$@"; do
	case $s in
	env) env_step ;;
	sweep) sweep_step ;;
	models) models_step ;;
	kernels) kernels_step ;;
	tune) tune_step ;;
	*) say "unknown step $s" ;;
	esac
	(cd "$G" && tar czf "$OUT/records.tgz" records)
done
say "done"
