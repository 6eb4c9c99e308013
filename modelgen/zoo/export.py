"""export.py: the model zoo as PyTorch users export it (issue 25).

usage: python3 modelgen/zoo/export.py -o DIR [--opset 14] [--dynamic] [NAME ...]

NAME is a model of the zoo (default: all of them) or one of issue 47's
single layers (LAYERS: gru_layer, dcgan_layer, bmm, seg_head, aspp),
exported the same way.

Each model is built by torchvision (or, for "text_encoder", from
torch.nn.TransformerEncoder with an embedding), given random weights from
a fixed seed (batch-norm statistics too, so that they are not the identity),
put in eval mode and exported by PyTorch's own exporter (torch.onnx.export)
with a static batch of 1. Beside each DIR/NAME.onnx it writes the input it
was run on (DIR/NAME.input.npy: float32, int64 token ids for the text
model), PyTorch's output (DIR/NAME.output.npy, float32), for `tune run
--input input=DIR/NAME.input.npy --reference output=DIR/NAME.output.npy`,
and DIR/NAME.json: the
input's name, shape and type, the output's name and shape, the opset, and
PyTorch's eager latency on this CPU at 1 and 2 threads (min and median of
20 runs after 3). Needs python3-torch and python3-torchvision
(scripts/deps.sh).
"""
import argparse
import json
import os
import time

import numpy as np
import torch
import torchvision.models as tvm


class TextEncoder(torch.nn.Module):
    """A text classifier as users write one: token embedding plus learned
    positions, torch.nn.TransformerEncoder (4 layers, 4 heads, GELU), mean
    pooling and a linear head."""

    def __init__(self, vocab=8000, seq=128, d=256, heads=4, layers=4, classes=4):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, d)
        self.pos = torch.nn.Parameter(torch.randn(1, seq, d) * 0.02)
        layer = torch.nn.TransformerEncoderLayer(d, heads, dim_feedforward=4 * d, activation="gelu", batch_first=True)
        self.encoder = torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = torch.nn.Linear(d, classes)

    def forward(self, ids):
        x = self.embed(ids) + self.pos
        return self.head(self.encoder(x).mean(dim=1))


class FirstOutput(torch.nn.Module):
    """A torchvision segmentation model's "out" alone (its forward returns a
    dict, which the exporter cannot name)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x)["out"]


class LanguageModel(torch.nn.Module):
    """An LSTM language model as torch.nn users write one: token embedding,
    two LSTM layers, a linear head over the vocabulary at every step."""

    def __init__(self, vocab=4000, d=256, hidden=512, layers=2):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, d)
        self.lstm = torch.nn.LSTM(d, hidden, layers, batch_first=True)
        self.head = torch.nn.Linear(hidden, vocab)

    def forward(self, ids):
        y, _ = self.lstm(self.embed(ids))
        return self.head(y)


class SpeechGRU(torch.nn.Module):
    """A small speech model: a 1-D convolution over 80 mel bins, two GRU
    layers, a per-frame classifier (a keyword spotter's or CTC head's shape)."""

    def __init__(self, mels=80, channels=128, hidden=192, classes=32):
        super().__init__()
        self.conv = torch.nn.Conv1d(mels, channels, 5, padding=2)
        self.gru = torch.nn.GRU(channels, hidden, 2, batch_first=True)
        self.head = torch.nn.Linear(hidden, classes)

    def forward(self, x):  # x: [N, mels, T]
        h = torch.relu(self.conv(x)).transpose(1, 2)
        y, _ = self.gru(h)
        return self.head(y)


class DCGANGenerator(torch.nn.Module):
    """The DCGAN generator (Radford et al.): a latent vector to a 64×64 image
    through ConvTranspose 4×4 stride 2, BatchNorm and ReLU, Tanh at the end."""

    def __init__(self, z=100, f=64):
        super().__init__()
        def up(i, o, s=2, p=1):
            return [torch.nn.ConvTranspose2d(i, o, 4, s, p, bias=False), torch.nn.BatchNorm2d(o), torch.nn.ReLU(True)]
        self.net = torch.nn.Sequential(*up(z, f * 8, 1, 0), *up(f * 8, f * 4), *up(f * 4, f * 2), *up(f * 2, f),
                                       torch.nn.ConvTranspose2d(f, 3, 4, 2, 1, bias=False), torch.nn.Tanh())

    def forward(self, z):
        return self.net(z)


class SmallUNet(torch.nn.Module):
    """A small U-Net: three levels of two 3×3 convolutions, max pooling down,
    ConvTranspose 2×2 stride 2 up, skip connections by concatenation."""

    def __init__(self, c=3, f=32, classes=2):
        super().__init__()
        def block(i, o):
            return torch.nn.Sequential(torch.nn.Conv2d(i, o, 3, padding=1), torch.nn.BatchNorm2d(o), torch.nn.ReLU(True),
                                       torch.nn.Conv2d(o, o, 3, padding=1), torch.nn.BatchNorm2d(o), torch.nn.ReLU(True))
        self.d1, self.d2, self.bottom = block(c, f), block(f, 2 * f), block(2 * f, 4 * f)
        self.u2, self.c2 = torch.nn.ConvTranspose2d(4 * f, 2 * f, 2, 2), block(4 * f, 2 * f)
        self.u1, self.c1 = torch.nn.ConvTranspose2d(2 * f, f, 2, 2), block(2 * f, f)
        self.out = torch.nn.Conv2d(f, classes, 1)

    def forward(self, x):
        a = self.d1(x)
        b = self.d2(torch.nn.functional.max_pool2d(a, 2))
        m = self.bottom(torch.nn.functional.max_pool2d(b, 2))
        b = self.c2(torch.cat([self.u2(m), b], 1))
        a = self.c1(torch.cat([self.u1(b), a], 1))
        return self.out(a)


# name: (constructor, input shape); images are 224×224 but Inception's 299.
MODELS = {
    "resnext50_32x4d": (lambda: tvm.resnext50_32x4d(), (1, 3, 224, 224)),
    "mobilenet_v3_large": (lambda: tvm.mobilenet_v3_large(), (1, 3, 224, 224)),
    "mnasnet1_0": (lambda: tvm.mnasnet1_0(), (1, 3, 224, 224)),
    "densenet121": (lambda: tvm.densenet121(), (1, 3, 224, 224)),
    # init_weights=False: PyTorch's default initialization; torchvision's
    # (truncated normal, std 0.1) makes random activations grow to 1e9.
    "inception_v3": (lambda: tvm.inception_v3(aux_logits=False, init_weights=False), (1, 3, 299, 299)),
    "swin_t": (lambda: tvm.swin_t(), (1, 3, 224, 224)),
    "vit_b_32": (lambda: tvm.vit_b_32(), (1, 3, 224, 224)),
    "text_encoder": (lambda: TextEncoder(), (1, 128)),
    # Architectures beyond the classifiers (issue 47): segmentation, more
    # efficient CNNs, a larger Swin, recurrent models, decoders.
    "fcn_resnet50": (lambda: FirstOutput(tvm.segmentation.fcn_resnet50(weights=None, weights_backbone=None, aux_loss=False)), (1, 3, 224, 224)),
    "lraspp_mobilenet_v3_large": (lambda: FirstOutput(tvm.segmentation.lraspp_mobilenet_v3_large(weights=None, weights_backbone=None)), (1, 3, 224, 224)),
    "efficientnet_b1": (lambda: tvm.efficientnet_b1(), (1, 3, 240, 240)),
    "efficientnet_v2_s": (lambda: tvm.efficientnet_v2_s(), (1, 3, 224, 224)),
    "regnet_x_1_6gf": (lambda: tvm.regnet_x_1_6gf(), (1, 3, 224, 224)),
    "swin_s": (lambda: tvm.swin_s(), (1, 3, 224, 224)),
    "lstm_lm": (lambda: LanguageModel(), (1, 32)),
    "gru_speech": (lambda: SpeechGRU(), (1, 80, 100)),
    "dcgan_generator": (lambda: DCGANGenerator(), (1, 100, 1, 1)),
    "unet_small": (lambda: SmallUNet(), (1, 3, 128, 128)),
}


class Layer(torch.nn.Module):
    """One layer of issue 47's single-layer races (docs/results/zoo.md)."""

    def __init__(self, f):
        super().__init__()
        self.f = f

    def forward(self, x):
        return self.f(x)


class GRULayer(torch.nn.Module):
    """torch.nn.GRU(80, 256), batch-first: its output sequence."""

    def __init__(self):
        super().__init__()
        self.gru = torch.nn.GRU(80, 256, batch_first=True)

    def forward(self, x):
        return self.gru(x)[0]


class ASPP(torch.nn.Module):
    """DeepLab's atrous spatial pyramid pooling core: a 1×1 and two 3×3
    convolutions of dilation 12 and 24 of a 256-channel map, each with ReLU,
    concatenated and projected back to 256 channels by a 1×1."""

    def __init__(self, c=256):
        super().__init__()
        self.b0 = torch.nn.Conv2d(c, c, 1)
        self.b1 = torch.nn.Conv2d(c, c, 3, padding=12, dilation=12)
        self.b2 = torch.nn.Conv2d(c, c, 3, padding=24, dilation=24)
        self.project = torch.nn.Conv2d(3 * c, c, 1)

    def forward(self, x):
        r = torch.relu
        return r(self.project(torch.cat([r(self.b0(x)), r(self.b1(x)), r(self.b2(x))], 1)))


# The single layers of issue 47's races, exported by name only (not part of
# the default export of every model, nor of models.txt's zoo).
LAYERS = {
    "gru_layer": (lambda: GRULayer(), (1, 50, 80)),
    "dcgan_layer": (lambda: torch.nn.Sequential(torch.nn.ConvTranspose2d(256, 128, 4, 2, 1), torch.nn.ReLU()), (1, 256, 16, 16)),
    "bmm": (lambda: Layer(lambda x: torch.matmul(x, x.transpose(1, 2))), (12, 128, 64)),
    "seg_head": (lambda: Layer(lambda x: torch.nn.functional.interpolate(x, size=(224, 224), mode="bilinear", align_corners=False)), (1, 21, 28, 28)),
    "aspp": (lambda: ASPP(), (1, 256, 33, 33)),
}


def spec(name):
    """The constructor and input shape of model or layer NAME."""
    if name in MODELS:
        return MODELS[name]
    if name in LAYERS:
        return LAYERS[name]
    raise SystemExit(f"export.py: unknown model {name!r} (models: {', '.join(MODELS)}; layers: {', '.join(LAYERS)})")


def randomize(model, seed):
    """Seeded random weights, and batch-norm statistics that are not the
    identity (a freshly built model's running mean is 0 and variance 1).
    A weight its model initializes to zeros (ViT's head) is drawn too: a
    zero output would match anything's."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() >= 2 and not p.any():
                p.copy_(torch.randn(p.shape, generator=g) * 0.02)
        for m in model.modules():
            if isinstance(m, (torch.nn.BatchNorm2d, torch.nn.BatchNorm1d)):
                m.running_mean.copy_(torch.randn(m.running_mean.shape, generator=g) * 0.1)
                m.running_var.copy_(torch.rand(m.running_var.shape, generator=g) * 0.5 + 0.75)
    return model


def latency(model, x, threads):
    torch.set_num_threads(threads)
    with torch.no_grad():
        for _ in range(3):
            model(x)
        ts = []
        for _ in range(20):
            t0 = time.perf_counter()
            model(x)
            ts.append((time.perf_counter() - t0) * 1e3)
    ts.sort()
    return {"min_ms": round(ts[0], 3), "median_ms": round(ts[len(ts) // 2], 3)}


def sample_input(name, shape, g):
    """A random input of the shape: token ids for the text models, else
    values uniform in [-1, 1)."""
    if name == "text_encoder":
        return torch.randint(0, 8000, shape, generator=g)
    if name == "lstm_lm":
        return torch.randint(0, 4000, shape, generator=g)
    return torch.rand(shape, generator=g) * 2 - 1


def export_dynamic(name, out, opset, seed):
    """DIR/NAME_dynamic.onnx: the same model exported with a dynamic batch
    (dynamic_axes: the input's and output's axis 0 named N), as users export
    one model for every batch size; `tune inspect --range N=lo..hi` reads it.
    With it NAME_dynamic.input.npy, a batch of 3, and NAME_dynamic.output.npy,
    PyTorch's output for it."""
    build, shape = spec(name)
    torch.manual_seed(seed)
    model = randomize(build(), seed).eval()
    g = torch.Generator().manual_seed(seed)
    shape = (2,) + tuple(shape[1:])  # traced at 2: a batch of 1 may be specialized away
    x = sample_input(name, shape, g)
    path = os.path.join(out, name + "_dynamic.onnx")
    torch.onnx.export(model, x, path, opset_version=opset, input_names=["input"], output_names=["output"],
                      do_constant_folding=True, dynamic_axes={"input": {0: "N"}, "output": {0: "N"}})
    # An input of batch 3 (neither the traced batch nor 1) and PyTorch's
    # output for it: what a build over the batch is checked with.
    x3 = sample_input(name, (3,) + tuple(shape[1:]), g)
    with torch.no_grad():
        y3 = model(x3)
    np.save(os.path.join(out, name + "_dynamic.input.npy"), x3.numpy())
    np.save(os.path.join(out, name + "_dynamic.output.npy"), y3.numpy().astype(np.float32))
    print(f"{path}: input [N, {', '.join(map(str, shape[1:]))}]", flush=True)


def export(name, out, opset, seed):
    build, shape = spec(name)
    torch.manual_seed(seed)
    model = randomize(build(), seed).eval()
    g = torch.Generator().manual_seed(seed)
    x = sample_input(name, shape, g)
    with torch.no_grad():
        y = model(x)
    path = os.path.join(out, name + ".onnx")
    torch.onnx.export(model, x, path, opset_version=opset, input_names=["input"], output_names=["output"],
                      do_constant_folding=True)
    np.save(os.path.join(out, name + ".input.npy"), x.numpy())
    np.save(os.path.join(out, name + ".output.npy"), y.numpy().astype(np.float32))
    meta = {
        "model": name, "opset": opset, "seed": seed, "torch": torch.__version__,
        "input": {"name": "input", "shape": list(shape), "type": str(x.dtype).replace("torch.", "")},
        "output": {"name": "output", "shape": list(y.shape)},
        "pytorch_eager": {"threads_1": latency(model, x, 1), "threads_2": latency(model, x, 2)},
    }
    with open(os.path.join(out, name + ".json"), "w") as f:
        json.dump(meta, f, indent=1)
    print(f"{path}: input {list(shape)}, output {list(y.shape)}, eager 1 thread {meta['pytorch_eager']['threads_1']['min_ms']} ms",
          flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-o", required=True, help="output directory")
    ap.add_argument("--opset", type=int, default=14)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--dynamic", action="store_true", help="export NAME_dynamic.onnx, a dynamic batch N, instead")
    ap.add_argument("names", nargs="*", help=f"models (default all: {', '.join(MODELS)}) or single layers ({', '.join(LAYERS)})")
    o = ap.parse_args()
    os.makedirs(o.o, exist_ok=True)
    for name in o.names or MODELS:
        spec(name)
        (export_dynamic if o.dynamic else export)(name, o.o, o.opset, o.seed)


if __name__ == "__main__":
    main()
