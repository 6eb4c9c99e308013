"""tessera: run a model built by Tessera's `tune build` from Python.

One file over ctypes and numpy: copy it next to your program, or put its
folder on PYTHONPATH.

    import numpy as np, tessera
    model = tessera.load("build/resnet18")          # the build folder
    out = model.run({"input": np.zeros((1, 3, 224, 224), np.float32)})
    print(out["output"].argmax())

A loaded model serves concurrent run() calls from many threads (the call
releases the GIL; the weights are shared). Every failure raises
tessera.Error, whose status names the tessera.h status.
"""

import ctypes
import os

import numpy as np

ABI_VERSION = 3

# tessera_dtype (ONNX's numbers) <-> numpy.
_DTYPES = {
    1: np.float32, 2: np.uint8, 3: np.int8, 4: np.uint16, 5: np.int16,
    6: np.int32, 7: np.int64, 9: np.bool_, 10: np.float16, 12: np.uint32,
}
_CODES = {np.dtype(t): c for c, t in _DTYPES.items()}

_STATUS = [
    "TESSERA_OK", "TESSERA_INVALID_ARGUMENT", "TESSERA_SHAPE_MISMATCH",
    "TESSERA_DTYPE_MISMATCH", "TESSERA_BAD_WEIGHTS", "TESSERA_ABI_MISMATCH",
    "TESSERA_UNSUPPORTED_CPU", "TESSERA_OUT_OF_MEMORY", "TESSERA_KERNEL_FAILED",
    "TESSERA_DEVICE_ERROR",
]


class Error(Exception):
    """A failed call: status is the tessera_status name, message the library's."""

    def __init__(self, status, message):
        self.status = _STATUS[status] if 0 <= status < len(_STATUS) else "TESSERA_STATUS_%d" % status
        self.message = message
        super().__init__("%s (%s)" % (message, self.status))


class _Tensor(ctypes.Structure):
    _fields_ = [("dtype", ctypes.c_int32), ("rank", ctypes.c_int32),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("data", ctypes.c_void_p)]


_libraries = {}


def _library(path):
    path = os.path.abspath(path)
    lib = _libraries.get(path)
    if lib is not None:
        return lib
    try:
        lib = ctypes.CDLL(path, mode=os.RTLD_NOW | os.RTLD_LOCAL)
    except OSError as e:
        raise Error(1, "load %s: %s" % (path, e)) from None
    P, I32, U32 = ctypes.c_void_p, ctypes.c_int32, ctypes.c_uint32
    sig = {
        "tessera_abi_version": (U32, []),
        "tessera_open": (I32, [U32, ctypes.c_char_p, ctypes.POINTER(P)]),
        "tessera_close": (None, [P]),
        "tessera_num_inputs": (I32, [P]),
        "tessera_num_outputs": (I32, [P]),
        "tessera_input_info": (I32, [P, I32, ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(I32),
                                     ctypes.POINTER(I32), ctypes.POINTER(ctypes.POINTER(ctypes.c_int64))]),
        "tessera_output_info": (I32, [P, I32, ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(I32),
                                      ctypes.POINTER(I32), ctypes.POINTER(ctypes.POINTER(ctypes.c_int64))]),
        "tessera_run": (I32, [P, ctypes.POINTER(_Tensor), I32, ctypes.POINTER(_Tensor), I32]),
        "tessera_set_num_threads": (I32, [P, I32]),
        "tessera_target": (ctypes.c_char_p, [P]),
        "tessera_last_error": (ctypes.c_char_p, []),
        "tessera_batch_range": (I32, [P, ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(ctypes.c_int64),
                                      ctypes.POINTER(ctypes.c_int64)]),
        "tessera_dim_range": (I32, [P, ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(ctypes.c_int64),
                                    ctypes.POINTER(ctypes.c_int64)]),
    }
    for name, (res, args) in sig.items():
        try:
            fn = getattr(lib, name)
        except AttributeError:
            raise Error(1, "%s has no %s: not a library built by tune build with ABI version %d"
                        % (path, name, ABI_VERSION)) from None
        fn.restype, fn.argtypes = res, args
    if lib.tessera_abi_version() != ABI_VERSION:
        raise Error(5, "%s implements ABI version %d, this module version %d"
                    % (path, lib.tessera_abi_version(), ABI_VERSION))
    _libraries[path] = lib
    return lib


class TensorInfo:
    """An input or output: its name, numpy dtype and shape."""

    def __init__(self, name, dtype, shape):
        self.name, self.dtype, self.shape = name, dtype, shape

    def __repr__(self):
        return "TensorInfo(%r, %s, %r)" % (self.name, np.dtype(self.dtype).name, self.shape)


class Model:
    """A built model loaded into this process. Use load()."""

    def __init__(self, path):
        lib_path, folder = path, path
        if os.path.isdir(path):
            lib_path = os.path.join(path, "libmodel.so")
        else:
            folder = os.path.dirname(os.path.abspath(path))
        if not os.path.exists(lib_path):
            raise Error(1, "open %s: no %s" % (path, lib_path))
        self._lib = _library(lib_path)
        self._h = ctypes.c_void_p()
        self._check(self._lib.tessera_open(ABI_VERSION, folder.encode(), ctypes.byref(self._h)), "open %s" % path)
        self.inputs = self._infos(self._lib.tessera_num_inputs, self._lib.tessera_input_info)
        self.outputs = self._infos(self._lib.tessera_num_outputs, self._lib.tessera_output_info)
        self.target = self._lib.tessera_target(self._h).decode()
        name, lo, hi = ctypes.c_char_p(), ctypes.c_int64(), ctypes.c_int64()
        self._check(self._lib.tessera_batch_range(self._h, ctypes.byref(name), ctypes.byref(lo), ctypes.byref(hi)),
                    "open %s" % path)
        # batch: (name, lo, hi) of a model built over a dynamic batch (a
        # batched tensor's shape starts with -1), else None.
        self.batch = (name.value.decode(), lo.value, hi.value) if name.value else None
        name, lo, hi = ctypes.c_char_p(), ctypes.c_int64(), ctypes.c_int64()
        self._check(self._lib.tessera_dim_range(self._h, ctypes.byref(name), ctypes.byref(lo), ctypes.byref(hi)),
                    "open %s" % path)
        # dim: (name, lo, hi) of a model built over a dimension given at run
        # time (a sequence length, -2 in the shapes of the tensors that have
        # it), else None.
        self.dim = (name.value.decode(), lo.value, hi.value) if name.value else None

    def _check(self, status, what):
        if status != 0:
            raise Error(status, "%s: %s" % (what, self._lib.tessera_last_error().decode(errors="replace")))

    def _infos(self, count, info):
        out = []
        for i in range(count(self._h)):
            name, dtype, rank = ctypes.c_char_p(), ctypes.c_int32(), ctypes.c_int32()
            shape = ctypes.POINTER(ctypes.c_int64)()
            self._check(info(self._h, i, ctypes.byref(name), ctypes.byref(dtype), ctypes.byref(rank),
                             ctypes.byref(shape)), "tensor %d" % i)
            out.append(TensorInfo(name.value.decode(), _DTYPES.get(dtype.value),
                                  tuple(shape[k] for k in range(rank.value))))
        return out

    def set_num_threads(self, n):
        """Sets the threads each later run uses (0: OMP_NUM_THREADS or every core)."""
        self._check(self._lib.tessera_set_num_threads(self._h, n), "set_num_threads")

    def run(self, inputs):
        """Runs the model on {name: array} (every input, of its dtype and
        shape; the leading dimension of a batched one, -1 in its shape, is
        the run's batch, and its dimensions -2 the value of the dimension
        given at run time) and returns {name: array} of its outputs."""
        if self._h is None:
            raise Error(1, "run: the model is closed")
        if not isinstance(inputs, dict):
            raise TypeError("run takes a dict {input name: numpy array}")
        unknown = set(inputs) - {t.name for t in self.inputs}
        if unknown:
            raise Error(1, "run: no input named %s (the model's: %s)"
                        % (", ".join(sorted(map(repr, unknown))), ", ".join(repr(t.name) for t in self.inputs)))
        keep = []

        def tensor(arr):
            code = _CODES.get(arr.dtype)
            if code is None:
                raise Error(3, "run: numpy dtype %s has no tessera dtype" % arr.dtype)
            shape = (ctypes.c_int64 * max(arr.ndim, 1))(*arr.shape)
            keep.append(shape)
            return _Tensor(code, arr.ndim, shape, arr.ctypes.data)

        ins = (_Tensor * max(len(self.inputs), 1))()
        for i, t in enumerate(self.inputs):
            if t.name not in inputs:
                raise Error(1, "run: input %r is missing" % t.name)
            arr = np.ascontiguousarray(inputs[t.name])
            keep.append(arr)
            ins[i] = tensor(arr)
        batch = 1
        for t in self.inputs:
            if t.shape and t.shape[0] == -1:
                batch = np.shape(inputs[t.name])[0] if np.ndim(inputs[t.name]) > 0 else 1
                break
        if self.batch and not self.batch[1] <= batch <= self.batch[2]:
            raise Error(2, "run: batch %s=%d is outside the range %d..%d the model was built for"
                        % (self.batch[0], batch, self.batch[1], self.batch[2]))
        dim = self.dim[2] if self.dim else 1
        for t in self.inputs:
            if -2 in t.shape and np.ndim(inputs[t.name]) == len(t.shape):
                dim = np.shape(inputs[t.name])[t.shape.index(-2)]
                break
        if self.dim and not self.dim[1] <= dim <= self.dim[2]:
            raise Error(2, "run: %s=%d is outside the range %d..%d the model was built for"
                        % (self.dim[0], dim, self.dim[1], self.dim[2]))
        outs = {t.name: np.empty(tuple(batch if d == -1 else dim if d == -2 else d for d in t.shape), t.dtype)
                for t in self.outputs}
        arr_outs = (_Tensor * max(len(self.outputs), 1))()
        for i, t in enumerate(self.outputs):
            arr_outs[i] = tensor(outs[t.name])
        self._check(self._lib.tessera_run(self._h, ins, len(self.inputs), arr_outs, len(self.outputs)), "run")
        return outs

    def close(self):
        """Frees the model (the library stays loaded)."""
        if self._h is not None:
            self._lib.tessera_close(self._h)
            self._h = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        if getattr(self, "_h", None) is not None and getattr(self, "_lib", None) is not None:
            self.close()


def load(path):
    """Loads a built model: its build folder, or its libmodel.so."""
    return Model(path)
