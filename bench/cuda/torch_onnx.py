"""torch_onnx.py: an ONNX model run by PyTorch eager, float32, on the GPU:
the baseline a model built by Tessera races (bench/cuda/device.sh).

usage: python3 torch_onnx.py MODEL.onnx --dir DIR [--repeat N] [--warmup N]
                             [--device cuda] [--no-graph]

The model is read with a small protobuf decoder of its own (no onnx
package) and every node runs as the torch.nn.functional call of its op,
one after another, as a PyTorch module's forward does; what depends only
on weights and static shapes (Shape, Reshape's shape inputs) is computed
once, before timing. Every float32 input NAME is DIR/NAME.bin (raw, of
the input's shape), or uniform in [-1, 1) (seed 1) written there if that
does not exist; the first output is written to DIR/torch_OUTPUT.bin (raw
float32), for `tune run --input NAME=DIR/NAME.bin --reference
OUTPUT=DIR/torch_OUTPUT.bin`.

Timed, R runs each after W warm-up runs, min and median lines:
  pytorch eager ms min X median Y          input copied in, output copied out
  pytorch eager+graph ms min X median Y    the same forward as one CUDA graph
TF32 is off; cuDNN's benchmark mode is on.
"""
import argparse
import math
import os
import struct
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

# ---- a minimal ONNX (protobuf) reader ----


def varint(b, i):
    v = shift = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        shift += 7
        if c < 0x80:
            return v, i


def fields(b):
    """Yields (field number, wire type, value) of a message."""
    i, n = 0, len(b)
    while i < n:
        key, i = varint(b, i)
        f, w = key >> 3, key & 7
        if w == 0:
            v, i = varint(b, i)
        elif w == 1:
            v, i = b[i:i + 8], i + 8
        elif w == 2:
            ln, i = varint(b, i)
            v, i = b[i:i + ln], i + ln
        elif w == 5:
            v, i = b[i:i + 4], i + 4
        else:
            raise ValueError(f"protobuf wire type {w}")
        yield f, w, v


def signed(v):
    return v - (1 << 64) if v >= 1 << 63 else v


def ints(w, v):
    if w == 0:
        return [signed(v)]
    out, i = [], 0
    while i < len(v):
        x, i = varint(v, i)
        out.append(signed(x))
    return out


DTYPES = {1: np.float32, 6: np.int32, 7: np.int64, 9: np.bool_, 11: np.float64, 10: np.float16}


def tensor(b):
    dims, dt, name, raw, fl, i64, i32 = [], 1, "", None, [], [], []
    for f, w, v in fields(b):
        if f == 1:
            dims += ints(w, v)
        elif f == 2:
            dt = v
        elif f == 4:
            fl += list(struct.unpack(f"<{len(v) // 4}f", v)) if w == 2 else [struct.unpack("<f", v)[0]]
        elif f == 5:
            i32 += ints(w, v)
        elif f == 7:
            i64 += ints(w, v)
        elif f == 8:
            name = v.decode()
        elif f == 9:
            raw = v
    t = DTYPES.get(dt)
    if t is None:
        raise ValueError(f"tensor {name}: data type {dt}")
    if raw is not None:
        a = np.frombuffer(raw, dtype=t)
    elif dt == 1:
        a = np.array(fl, dtype=t)
    elif dt == 7:
        a = np.array(i64, dtype=t)
    else:
        a = np.array(i32, dtype=t)
    return name, a.reshape(dims).copy()


def attribute(b):
    name, val, kind = "", None, 0
    fs, is_ = [], []
    for f, w, v in fields(b):
        if f == 1:
            name = v.decode()
        elif f == 2:
            val = struct.unpack("<f", v)[0]
        elif f == 3:
            val = signed(v)
        elif f == 4:
            val = v.decode()
        elif f == 5:
            val = tensor(v)[1]
        elif f == 7:
            fs += list(struct.unpack(f"<{len(v) // 4}f", v)) if w == 2 else [struct.unpack("<f", v)[0]]
        elif f == 8:
            is_ += ints(w, v)
        elif f == 20:
            kind = v
    if kind == 6 or (val is None and fs):
        val = fs
    if kind == 7 or (val is None and is_):
        val = is_
    if val is None:  # a proto3 writer leaves out a zero value
        val = {1: 0.0, 2: 0, 3: ""}.get(kind)
    return name, val


def value_info(b):
    name, shape = "", []
    for f, w, v in fields(b):
        if f == 1:
            name = v.decode()
        elif f == 2:
            for f2, _, tt in fields(v):
                if f2 == 1:
                    for f3, _, sh in fields(tt):
                        if f3 == 2:
                            for f4, _, dim in fields(sh):
                                if f4 == 1:
                                    d = [x for f5, _, x in fields(dim) if f5 == 1]
                                    shape.append(d[0] if d else -1)
    return name, shape


def load(path):
    with open(path, "rb") as fh:
        b = fh.read()
    graph = next(v for f, _, v in fields(b) if f == 7)
    nodes, inits, inputs, outputs = [], {}, [], []
    for f, _, v in fields(graph):
        if f == 1:
            node = {"inputs": [], "outputs": [], "op": "", "attrs": {}, "name": ""}
            for g, _, x in fields(v):
                if g == 1:
                    node["inputs"].append(x.decode())
                elif g == 2:
                    node["outputs"].append(x.decode())
                elif g == 3:
                    node["name"] = x.decode()
                elif g == 4:
                    node["op"] = x.decode()
                elif g == 5:
                    k, a = attribute(x)
                    node["attrs"][k] = a
            nodes.append(node)
        elif f == 5:
            k, a = tensor(v)
            inits[k] = a
        elif f == 11:
            inputs.append(value_info(v))
        elif f == 12:
            outputs.append(value_info(v))
    inputs = [i for i in inputs if i[0] not in inits]
    return nodes, inits, inputs, outputs


# ---- the ops, as torch calls ----


def pads2d(a, kernel_rank=2):
    p = a.get("pads", [0] * 2 * kernel_rank)
    if any(p[i] != p[i + kernel_rank] for i in range(kernel_rank)):
        return None, p
    return p[:kernel_rank], p


def conv(x, w, b=None, a={}):
    pad, full = pads2d(a)
    if a.get("auto_pad", "NOTSET") not in ("NOTSET", "VALID"):
        raise ValueError("Conv auto_pad")
    if pad is None:
        x = F.pad(x, (full[1], full[3], full[0], full[2]))
        pad = [0, 0]
    return F.conv2d(x, w, b, stride=a.get("strides", [1, 1]), padding=pad, dilation=a.get("dilations", [1, 1]),
                    groups=a.get("group", 1))


def pool(kind, x, a):
    pad, full = pads2d(a)
    k, s = a["kernel_shape"], a.get("strides", [1, 1])
    if pad is None:
        x = F.pad(x, (full[1], full[3], full[0], full[2]), value=-math.inf if kind == "max" else 0.0)
        pad = [0, 0]
    if kind == "max":
        return F.max_pool2d(x, k, s, pad, ceil_mode=bool(a.get("ceil_mode", 0)))
    return F.avg_pool2d(x, k, s, pad, ceil_mode=bool(a.get("ceil_mode", 0)),
                        count_include_pad=bool(a.get("count_include_pad", 0)))


def gemm(a_, b_, c=None, a={}):
    if a.get("transA", 0):
        a_ = a_.t()
    if a.get("transB", 0):
        b_ = b_.t()
    y = a.get("alpha", 1.0) * (a_ @ b_)
    if c is not None:
        y = y + a.get("beta", 1.0) * c
    return y


def reshape(x, shape, a={}):
    shape = [int(v) for v in shape.tolist()]
    shape = [x.shape[i] if v == 0 and not a.get("allowzero", 0) else v for i, v in enumerate(shape)]
    return x.reshape(shape)


def axes_of(node_in, a, env, k=1):
    if len(node_in) > k and node_in[k]:
        return [int(v) for v in env(node_in[k]).tolist()]
    return a.get("axes")


def run_node(n, env):
    op, a, ins = n["op"], n["attrs"], n["inputs"]
    x = [env(i) if i else None for i in ins]
    if op == "Conv":
        return [conv(x[0], x[1], x[2] if len(x) > 2 else None, a)]
    if op == "BatchNormalization":
        return [F.batch_norm(x[0], x[3], x[4], x[1], x[2], False, 0.0, a.get("epsilon", 1e-5))]
    if op == "Relu":
        return [F.relu(x[0])]
    if op == "Clip":
        lo = x[1] if len(x) > 1 and x[1] is not None else a.get("min", -math.inf)
        hi = x[2] if len(x) > 2 and x[2] is not None else a.get("max", math.inf)
        return [torch.clamp(x[0], float(lo), float(hi))]
    if op == "MaxPool":
        return [pool("max", x[0], a)]
    if op == "AveragePool":
        return [pool("avg", x[0], a)]
    if op == "GlobalAveragePool":
        return [x[0].mean(dim=tuple(range(2, x[0].dim())), keepdim=True)]
    if op == "Flatten":
        ax = a.get("axis", 1)
        return [x[0].reshape(int(np.prod(x[0].shape[:ax])), -1)]
    if op == "Gemm":
        return [gemm(x[0], x[1], x[2] if len(x) > 2 else None, a)]
    if op == "MatMul":
        return [torch.matmul(x[0], x[1])]
    if op in ("Add", "Sub", "Mul", "Div", "Pow", "Equal"):
        f = {"Add": torch.add, "Sub": torch.sub, "Mul": torch.mul, "Div": torch.div, "Pow": torch.pow,
             "Equal": torch.eq}[op]
        return [f(x[0], x[1])]
    if op in ("Sqrt", "Erf", "Tanh", "Sigmoid", "Exp", "Neg"):
        return [getattr(torch, op.lower())(x[0])]
    if op == "Softmax":
        return [F.softmax(x[0], dim=a.get("axis", -1))]
    if op == "Gelu":
        return [F.gelu(x[0], approximate=a.get("approximate", "none"))]
    if op == "LayerNormalization":
        ax = a.get("axis", -1) % x[0].dim()
        return [F.layer_norm(x[0], x[0].shape[ax:], x[1], x[2] if len(x) > 2 else None, a.get("epsilon", 1e-5))]
    if op == "ReduceMean":
        axes = axes_of(ins, a, env)
        return [x[0].mean(dim=tuple(axes), keepdim=bool(a.get("keepdims", 1)))]
    if op == "Reshape":
        return [reshape(x[0], x[1], a)]
    if op == "Transpose":
        return [x[0].permute(a.get("perm", list(reversed(range(x[0].dim())))))]
    if op == "Concat":
        return [torch.cat(x, dim=a["axis"])]
    if op == "Unsqueeze":
        y = x[0]
        for ax in sorted(axes_of(ins, a, env)):
            y = y.unsqueeze(ax)
        return [y]
    if op == "Squeeze":
        return [x[0].squeeze(tuple(axes_of(ins, a, env)))]
    if op == "Shape":
        return [torch.tensor(list(x[0].shape), dtype=torch.int64, device=x[0].device)]
    if op == "Gather":
        return [torch.index_select(x[0], a.get("axis", 0), x[1].reshape(-1)).reshape(
            list(x[0].shape[:a.get("axis", 0)]) + list(x[1].shape) + list(x[0].shape[a.get("axis", 0) + 1:]))]
    if op == "Cast":
        return [x[0].to({1: torch.float32, 6: torch.int32, 7: torch.int64, 9: torch.bool}[a["to"]])]
    if op == "Where":
        return [torch.where(x[0], x[1], x[2])]
    if op == "Constant":
        return [torch.from_numpy(a["value"])]
    if op == "Identity":
        return [x[0]]
    raise ValueError(f"node {n['name'] or n['outputs'][0]}: op {op} is not in torch_onnx.py")


class Model:
    """The graph as an eager forward: static values folded once."""

    def __init__(self, path, device):
        self.nodes, inits, self.inputs, self.outputs = load(path)
        self.device = device
        self.static = {k: torch.from_numpy(v).to(device) for k, v in inits.items()}
        self.shapes = {name: shape for name, shape in self.inputs}

    def forward(self, feeds, fold=False):
        env = dict(self.static)
        env.update(feeds)
        for n in self.nodes:
            ys = run_node(n, env.__getitem__)
            for name, y in zip(n["outputs"], ys):
                env[name] = y.to(self.device) if y.device != self.device else y
        return [env[name] for name, _ in self.outputs]

    def fold(self, feeds):
        """Runs once and keeps every value that does not depend on a
        graph input (through anything but its static shape)."""
        dynamic = set(feeds)
        env = dict(self.static)
        env.update(feeds)
        keep = []
        for n in self.nodes:
            ys = run_node(n, env.__getitem__)
            for name, y in zip(n["outputs"], ys):
                env[name] = y.to(self.device) if y.device != self.device else y
            if n["op"] != "Shape" and any(i in dynamic for i in n["inputs"] if i):
                dynamic.update(n["outputs"])
                keep.append(n)
            else:
                for name in n["outputs"]:
                    self.static[name] = env[name]
        self.nodes = keep


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--dir", required=True)
    ap.add_argument("--repeat", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--no-graph", action="store_true")
    o = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    dev = torch.device(o.device)
    m = Model(o.model, dev)
    os.makedirs(o.dir, exist_ok=True)
    rng = np.random.default_rng(1)
    hosts = {}
    for name, shape in m.inputs:
        n, path = int(np.prod(shape)), os.path.join(o.dir, name + ".bin")
        if os.path.exists(path):
            x = np.fromfile(path, dtype=np.float32)
            if x.size != n:
                sys.exit(f"{path}: {x.size} floats, input {name} {shape} takes {n}")
        else:
            x = rng.uniform(-1, 1, n).astype(np.float32)
            x.tofile(path)
        h = torch.from_numpy(x.reshape(shape))
        hosts[name] = h.pin_memory() if dev.type == "cuda" else h

    def feeds():
        return {k: h.to(dev, non_blocking=True) for k, h in hosts.items()}

    with torch.no_grad():
        m.fold(feeds())
        y = m.forward(feeds())[0]
        y.float().cpu().numpy().tofile(os.path.join(o.dir, "torch_" + m.outputs[0][0] + ".bin"))
        print(f"pytorch {torch.__version__} on {torch.cuda.get_device_name() if dev.type == 'cuda' else dev.type}: "
              f"{len(m.nodes)} nodes run per call, output {m.outputs[0][0]} {list(y.shape)}")

        def sync():
            if dev.type == "cuda":
                torch.cuda.synchronize()

        def eager():
            return m.forward(feeds())[0].cpu()

        def timed(fn, label):
            for _ in range(o.warmup):
                fn()
            sync()
            ts = []
            for _ in range(o.repeat):
                t0 = time.perf_counter()
                fn()
                sync()
                ts.append((time.perf_counter() - t0) * 1e3)
            ts.sort()
            print(f"pytorch {label} ms min {ts[0]:.4f} median {ts[len(ts) // 2]:.4f}")

        timed(eager, "eager")
        if dev.type == "cuda" and not o.no_graph:
            static_in = feeds()
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                for _ in range(3):
                    m.forward(static_in)
            torch.cuda.current_stream().wait_stream(s)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                static_out = m.forward(static_in)[0]

            def graphed():
                for k, h in hosts.items():
                    static_in[k].copy_(h, non_blocking=True)
                g.replay()
                return static_out.cpu()

            timed(graphed, "eager+graph")


if __name__ == "__main__":
    main()
