"""torch_op.py: one op of PyTorch on the GPU (cuBLAS, cuDNN) for gpubench's
races, timed by the protocol of Tessera's GPU runner.

usage: python3 torch_op.py OP IN_FILE OUT_FILE REPEAT MIN_REPEAT_MS SHAPE...

OP is "matmul" (inputs A, B) or "conv2d:PAD:STRIDE" (inputs X in NCHW, W in
OIHW). IN_FILE holds the inputs as float32, one after another, each of the
SHAPE given (d0xd1x...). The output of one call is written to OUT_FILE
(float32) unless it is "-". Then the call is timed with CUDA events: NUMBER
calls grown until they last MIN_REPEAT_MS, REPEAT times; one line
"cost SECONDS" per repetition (per call). TF32 is off: float32 as Tessera
computes it. PyTorch is what the machine has (python3 -c 'import torch').
TORCH_DEVICE names another device than "cuda" (the tests use "cpu").
"""
import os
import sys
import time

import numpy as np
import torch


def sync(dev):
    if dev.type == "cuda":
        torch.cuda.synchronize()


def main(argv):
    op, in_file, out_file = argv[1], argv[2], argv[3]
    repeat, min_ms = int(argv[4]), float(argv[5])
    shapes = [tuple(int(d) for d in s.split("x")) for s in argv[6:]]
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    dev = torch.device(os.environ.get("TORCH_DEVICE", "cuda"))
    data = np.fromfile(in_file, dtype=np.float32)
    want = sum(int(np.prod(s)) for s in shapes)
    if data.size != want:
        sys.exit(f"torch_op: {in_file} holds {data.size} floats, the shapes {shapes} take {want}")
    xs, at = [], 0
    for s in shapes:
        n = int(np.prod(s))
        xs.append(torch.from_numpy(data[at:at + n].reshape(s).copy()).to(dev))
        at += n
    if op == "matmul":
        fn = lambda: torch.matmul(xs[0], xs[1])
    elif op.startswith("conv2d:"):
        _, pad, stride = op.split(":")
        fn = lambda: torch.nn.functional.conv2d(xs[0], xs[1], padding=int(pad), stride=int(stride))
    else:
        sys.exit(f"torch_op: unknown op {op!r}")
    with torch.no_grad():
        y = fn()
        sync(dev)
        if out_file != "-":
            y.float().cpu().numpy().tofile(out_file)
        for _ in range(3):  # warm-up: cuDNN's benchmark picks its algorithm here
            fn()
        def timed(number):
            if dev.type != "cuda":
                t0 = time.perf_counter()
                for _ in range(number):
                    fn()
                return (time.perf_counter() - t0) * 1e3
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(number):
                fn()
            end.record()
            end.synchronize()
            return start.elapsed_time(end)  # ms

        number = 1
        while True:
            ms = timed(number)
            if ms >= min_ms or number >= 1 << 20:
                break
            number = max(number * 2, int(number * min_ms / max(ms, 1e-3)) + 1)
        for _ in range(repeat):
            print(f"cost {timed(number) / number / 1e3:.9g}")
    print(f"number {number}")


if __name__ == "__main__":
    main(sys.argv)
