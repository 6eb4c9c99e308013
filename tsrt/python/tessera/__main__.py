"""The command line of the tessera package:

    python3 -m tessera info DIR
    python3 -m tessera run DIR --input NAME=FILE.npy ... [-o OUTDIR] [--threads N]
    python3 -m tessera --version

info prints a built model's inputs and outputs (dtypes and shapes), its
target, its batch and dimension ranges and its steps. run runs it once on
.npy inputs (a bare FILE for a model of one input) and writes each output
to OUTDIR/NAME.npy in its dtype. An input of another dtype is converted
where every value is one of the model's dtype, else refused.
"""

import argparse
import os
import sys

import numpy as np

import tessera


def _dims(model, shape):
    """A shape in words: -1 is the batch's name, -2 the dimension's."""
    names = {-1: model.batch[0] if model.batch else "batch", -2: model.dim[0] if model.dim else "dim"}
    return "[" + ", ".join(names.get(d, str(d)) for d in shape) + "]"


def info(args):
    with tessera.load(args.dir) as model:
        width = max([len(t.name) for t in model.inputs + model.outputs] + [1])
        print("model    %s" % args.dir)
        print("target   %s" % model.target)
        for what, ts in (("inputs", model.inputs), ("outputs", model.outputs)):
            print("%-8s %d" % (what, len(ts)))
            for t in ts:
                print("  %-*s  %-7s %s" % (width, t.name, np.dtype(t.dtype).name, _dims(model, t.shape)))
        if model.batch:
            print("batch    %s=%d..%d" % model.batch)
        if model.dim:
            print("dim      %s=%d..%d" % model.dim)
        steps = model.steps
        print("steps    %d" % len(steps))
        for s in steps:
            print("  %s" % s)
    return 0


def _file_name(name):
    """A tensor's name made a file name, as tune run makes it."""
    name = "".join("_" if c in "/\\\0" else c for c in name)
    return "_" + name if name in ("", ".", "..") else name


def _exact(arr, dtype, what):
    """arr as dtype where every value is one of dtype, else an error."""
    dtype = np.dtype(dtype)
    if arr.dtype == dtype:
        return arr
    if np.can_cast(arr.dtype, dtype, "safe"):
        return arr.astype(dtype)
    with np.errstate(all="ignore"):
        conv = arr.astype(dtype)
    if not np.array_equal(conv, arr, equal_nan=arr.dtype.kind == "f" and dtype.kind == "f"):
        raise tessera.Error(3, "%s: a %s array whose values are not all %s, the dtype the model takes"
                            % (what, arr.dtype, dtype))
    return conv


def run(args):
    with tessera.load(args.dir) as model:
        names = [t.name for t in model.inputs]
        files = {}
        for spec in args.input:
            name, sep, path = spec.partition("=")
            if not sep:
                if len(names) != 1:
                    raise SystemExit("tessera run: --input %s: the model has %d inputs (%s); say which: --input NAME=FILE"
                                     % (spec, len(names), ", ".join(names)))
                name, path = names[0], spec
            if name not in names:
                raise SystemExit("tessera run: --input %s: the model has no input %r (its inputs: %s)"
                                 % (spec, name, ", ".join(names)))
            if name in files:
                raise SystemExit("tessera run: --input: %s given twice" % name)
            files[name] = path
        missing = [n for n in names if n not in files]
        if missing:
            raise SystemExit("tessera run: no --input for %s" % ", ".join(missing))
        inputs = {}
        for t in model.inputs:
            arr = np.load(files[t.name], allow_pickle=False)
            inputs[t.name] = _exact(arr, t.dtype, "input %s (%s)" % (t.name, files[t.name]))
        if args.threads:
            model.set_num_threads(args.threads)
        outs = model.run(inputs)
        os.makedirs(args.o, exist_ok=True)
        paths = {}
        for t in model.outputs:
            path = os.path.join(args.o, _file_name(t.name) + ".npy")
            if path in paths:
                raise SystemExit("tessera run: outputs %r and %r would both be written to %s" % (paths[path], t.name, path))
            paths[path] = t.name
        for path, name in paths.items():
            np.save(path, outs[name])
            print("output %s %s%s -> %s" % (name, outs[name].dtype, list(outs[name].shape), path))
    return 0


def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m tessera", description="Inspect and run models built by Tessera's tune build.")
    p.add_argument("--version", action="version",
                   version="tessera %s (C ABI version %d)" % (tessera.__version__, tessera.ABI_VERSION))
    sub = p.add_subparsers(dest="command", required=True, metavar="{info,run}")
    pi = sub.add_parser("info", help="print the model's inputs, outputs, target and steps")
    pi.add_argument("dir", help="the build folder (or its libmodel.so)")
    pr = sub.add_parser("run", help="run the model once on .npy inputs; write OUTDIR/NAME.npy per output")
    pr.add_argument("dir", help="the build folder (or its libmodel.so)")
    pr.add_argument("--input", action="append", default=[], metavar="NAME=FILE",
                    help="an input's .npy file (repeatable; a bare FILE for a model of one input)")
    pr.add_argument("-o", default=".", metavar="OUTDIR", help="where the outputs are written (default .)")
    pr.add_argument("--threads", type=int, default=0, help="threads of the model (default: OMP_NUM_THREADS or every core)")
    args = p.parse_args(argv)
    try:
        return {"info": info, "run": run}[args.command](args)
    except (tessera.Error, OSError, ValueError) as e:
        print("tessera %s: %s" % (args.command, e), file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
