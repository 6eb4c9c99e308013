"""An example: load a model built by `tune build`, run it on one input and
print the top-1 class and the time of a run.

    PYTHONPATH=tsrt/python python3 examples/python/classify.py MODEL [INPUT.bin [OUTPUT.bin]]

MODEL is the build folder. INPUT.bin holds the first input's elements as raw
float32 (as `tune run --format raw` reads and writes them); without it the
input is x[i] = (i % 255) / 255. OUTPUT.bin, when given, receives the first
output, raw.
"""

import sys
import time

import numpy as np

import tessera


def main(args):
    if not 1 <= len(args) <= 3:
        sys.exit("usage: classify.py MODEL [INPUT.bin [OUTPUT.bin]]")
    with tessera.load(args[0]) as model:  # closed (after its runs end) on leaving the block
        (inp,), out = model.inputs, model.outputs[0]
        if len(args) > 1:
            x = np.fromfile(args[1], np.float32).reshape(inp.shape)
        else:
            x = ((np.arange(np.prod(inp.shape)) % 255).astype(np.float32) / np.float32(255)).reshape(inp.shape)
        model.run({inp.name: x})  # the first run: warm-up
        ys = {t.name: np.empty(t.shape, t.dtype) for t in model.outputs}
        y = ys[out.name]
        best = float("inf")
        for _ in range(10):
            t0 = time.perf_counter()
            model.run_into({inp.name: x}, ys)  # into preallocated arrays: no allocation per run
            best = min(best, time.perf_counter() - t0)
        top = int(y.reshape(-1).argmax())
        print("%s: top-1 class %d (%s = %g), %.3f ms per run (best of 10)"
              % (args[0], top, out.name, y.reshape(-1)[top], best * 1e3))
        if len(args) > 2:
            y.tofile(args[2])

if __name__ == "__main__":
    main(sys.argv[1:])
