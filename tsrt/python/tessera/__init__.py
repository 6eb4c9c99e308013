"""tessera: run a model built by Tessera's `tune build` from Python.

A package over ctypes and numpy (pip install ./tsrt/python, or put
tsrt/python on PYTHONPATH; `python3 -m tessera` is its command line:
info and run).

    import numpy as np, tessera
    model = tessera.load("build/resnet18")          # the build folder
    out = model.run({"input": np.zeros((1, 3, 224, 224), np.float32)})
    print(out["output"].argmax())

A loaded model serves concurrent run() calls from many threads (the call
releases the GIL; the weights are shared); close() waits for the runs in
progress, and a model is a context manager (`with tessera.load(d) as m:`).
Every failure raises tessera.Error, whose status names the tessera.h
status, the same for each mistake as the C ABI and the Go package give.

The library is checked before it is loaded, as the Go package and
tessera_load.h do: a truncated file, one built for another architecture,
or one whose size or SHA-256 is not what the build's manifest.json records
is an error, never a crash inside the dynamic loader.
"""

import ctypes
import hashlib
import json
import os
import platform
import struct
import threading

import numpy as np

# The package's version: pyproject.toml reads it from here.
__version__ = "0.2.0.dev0"

ABI_VERSION = 4

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
    "TESSERA_DEVICE_ERROR", "TESSERA_VALUE_OUT_OF_RANGE", "TESSERA_NOT_FOUND",
    "TESSERA_BAD_LIBRARY",
]
_INVALID_ARGUMENT, _SHAPE_MISMATCH, _DTYPE_MISMATCH, _ABI_MISMATCH = 1, 2, 3, 5
_UNSUPPORTED_CPU, _NOT_FOUND, _BAD_LIBRARY = 6, 11, 12


class Error(Exception):
    """A failed call: status is the tessera_status name, message the library's."""

    def __init__(self, status, message):
        self.status = _STATUS[status] if 0 <= status < len(_STATUS) else "TESSERA_STATUS_%d" % status
        self.message = message
        super().__init__("%s (%s)" % (message, self.status))


class _Tensor(ctypes.Structure):
    _fields_ = [("dtype", ctypes.c_int32), ("rank", ctypes.c_int32),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("data", ctypes.c_void_p),
                ("name", ctypes.c_char_p)]


_libraries = {}
_libraries_lock = threading.Lock()

# ELF machine numbers of the architectures a model is built for.
_ELF_MACHINES = {"x86_64": 62, "amd64": 62, "aarch64": 183, "arm64": 183}
_ELF_NAMES = {62: "x86-64", 183: "aarch64", 3: "i386", 40: "32-bit ARM", 243: "RISC-V"}


def verify_library(path):
    """Checks the library file at path before it is loaded: that it is a
    whole ELF shared library of this machine's architecture, and, when the
    manifest.json beside it names it, that its size and SHA-256 are those
    the build recorded. Raises Error (TESSERA_NOT_FOUND, TESSERA_BAD_LIBRARY,
    TESSERA_UNSUPPORTED_CPU)."""
    try:
        size = os.stat(path).st_size
        with open(path, "rb") as f:
            head = f.read(64)
            if len(head) < 64 or head[:4] != b"\x7fELF":
                raise Error(_BAD_LIBRARY, "%s: not a whole ELF shared library (%d bytes): truncated or damaged? "
                            "rebuild it or copy it again" % (path, size))
            if head[4] != 2 or head[5] != 1:
                raise Error(_BAD_LIBRARY, "%s: not a 64-bit little-endian ELF shared library" % path)
            machine = struct.unpack_from("<H", head, 18)[0]
            want = _ELF_MACHINES.get(platform.machine())
            if want is not None and machine != want:
                raise Error(_UNSUPPORTED_CPU, "%s is built for %s (ELF machine %d); this process runs on %s: "
                            "build the model for this machine" % (path, _ELF_NAMES.get(machine, "another architecture"),
                                                                  machine, _ELF_NAMES[want]))
            e_type = struct.unpack_from("<H", head, 16)[0]
            if e_type != 3:
                raise Error(_BAD_LIBRARY, "%s: not an ELF shared library" % path)
            phoff, shoff = struct.unpack_from("<QQ", head, 32)
            phentsize, phnum, shentsize, shnum = struct.unpack_from("<HHHH", head, 54)
            if shoff + shnum * shentsize > size:
                raise Error(_BAD_LIBRARY, "%s: %d bytes, too short for its section headers: truncated "
                            "(rebuild it or copy it again)" % (path, size))
            if phentsize != 56 or phoff + phnum * 56 > size:
                raise Error(_BAD_LIBRARY, "%s: %d bytes, too short for its program headers: truncated "
                            "(rebuild it or copy it again)" % (path, size))
            f.seek(phoff)
            table = f.read(phnum * 56)
            for i in range(phnum):
                p_type, = struct.unpack_from("<I", table, 56 * i)
                p_offset, = struct.unpack_from("<Q", table, 56 * i + 8)
                p_filesz, = struct.unpack_from("<Q", table, 56 * i + 32)
                if p_type in (1, 2) and p_offset + p_filesz > size:
                    raise Error(_BAD_LIBRARY, "%s: %d bytes, but its segment %d reaches byte %d: truncated "
                                "(rebuild it or copy it again)" % (path, size, i, p_offset + p_filesz))
    except FileNotFoundError:
        raise Error(_NOT_FOUND, "%s: no such file (not a build folder, or its library is missing)" % path) from None
    except OSError as e:
        raise Error(_BAD_LIBRARY, "%s: %s" % (path, e)) from None
    manifest = os.path.join(os.path.dirname(path), "manifest.json")
    try:
        with open(manifest, "rb") as f:
            rec = json.load(f)
    except FileNotFoundError:
        return
    except (OSError, ValueError) as e:
        raise Error(_BAD_LIBRARY, "%s: %s (a damaged manifest: rebuild the model)" % (manifest, e)) from None
    if not isinstance(rec, dict) or rec.get("library") != os.path.basename(path):
        return
    want_bytes, want_sum = rec.get("library_bytes"), rec.get("library_sha256")
    if not want_sum:
        raise Error(_BAD_LIBRARY, "%s records no size or SHA-256 of %s: built by an older tune (rebuild the model)"
                    % (manifest, rec.get("library")))
    if size != want_bytes:
        raise Error(_BAD_LIBRARY, "%s is %d bytes, the build wrote %s (truncated, or replaced since the build: "
                    "rebuild it or copy it again)" % (path, size, want_bytes))
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    if h.hexdigest() != want_sum:
        raise Error(_BAD_LIBRARY, "%s has SHA-256 %s..., the build wrote %s... (damaged, or changed since the build: "
                    "rebuild it or copy it again)" % (path, h.hexdigest()[:16], str(want_sum)[:16]))


def _library(path):
    path = os.path.abspath(path)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise Error(_NOT_FOUND, "%s: no such file (not a build folder, or its library is missing)" % path) from None
    key = (path, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
    with _libraries_lock:
        lib = _libraries.get(key)
        if lib is not None:
            return lib
        verify_library(path)
        try:
            lib = ctypes.CDLL(path, mode=os.RTLD_NOW | os.RTLD_LOCAL)
        except OSError as e:
            raise Error(_BAD_LIBRARY, "load %s: %s" % (path, e)) from None
        _bind(lib, path)
        _libraries[key] = lib
        return lib


def _bind(lib, path):
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
        "tessera_num_steps": (I32, [P]),
        "tessera_step_name": (ctypes.c_char_p, [P, I32]),
        "tessera_profile": (I32, [P, ctypes.POINTER(ctypes.c_double), I32]),
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
            raise Error(_ABI_MISMATCH, "%s has no %s: not a library built by tune build with ABI version %d "
                        "(rebuild the model)" % (path, name, ABI_VERSION)) from None
        fn.restype, fn.argtypes = res, args
    if lib.tessera_abi_version() != ABI_VERSION:
        raise Error(_ABI_MISMATCH, "%s implements ABI version %d, this module version %d"
                    % (path, lib.tessera_abi_version(), ABI_VERSION))


class TensorInfo:
    """An input or output: its name, numpy dtype and shape."""

    def __init__(self, name, dtype, shape):
        self.name, self.dtype, self.shape = name, dtype, shape

    def __repr__(self):
        return "TensorInfo(%r, %s, %r)" % (self.name, np.dtype(self.dtype).name, self.shape)


class Model:
    """A built model loaded into this process. Use load()."""

    def __init__(self, path):
        self._h = None
        # Runs count themselves in and out; close() waits for them.
        self._cond = threading.Condition()
        self._running = 0
        path = os.fspath(path)
        lib_path, folder = path, path
        if not os.path.exists(path):
            raise Error(_NOT_FOUND, "open %s: no such model folder or library" % path)
        if os.path.isdir(path):
            lib_path = os.path.join(path, "libmodel.so")
        else:
            folder = os.path.dirname(os.path.abspath(path))
        self._lib = _library(lib_path)
        h = ctypes.c_void_p()
        self._check(self._lib.tessera_open(ABI_VERSION, folder.encode(), ctypes.byref(h)), "open %s" % path)
        self._h = h
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
        with self._using("set_num_threads") as h:
            self._check(self._lib.tessera_set_num_threads(h, n), "set_num_threads")

    @property
    def steps(self):
        """The names of the executor's steps (one kernel call each), for profile()."""
        with self._using("steps") as h:
            return [self._lib.tessera_step_name(h, i).decode() for i in range(self._lib.tessera_num_steps(h))]

    def profile(self, seconds):
        """Makes every later run add the seconds of each step to seconds, a
        float64 numpy array of at least len(steps) elements that the model
        keeps a reference to; None stops it."""
        with self._using("profile") as h:
            if seconds is None:
                self._check(self._lib.tessera_profile(h, None, 0), "profile")
                self._profile = None
                return
            if not isinstance(seconds, np.ndarray) or seconds.dtype != np.float64 or not seconds.flags.c_contiguous \
                    or not seconds.flags.writeable:
                raise Error(_INVALID_ARGUMENT, "profile: seconds must be a writable, contiguous float64 numpy array")
            self._check(self._lib.tessera_profile(h, seconds.ctypes.data_as(ctypes.POINTER(ctypes.c_double)),
                                                  min(seconds.size, 2**31 - 1)), "profile")
            self._profile = seconds

    class _Use:
        def __init__(self, model, what):
            self.model, self.what = model, what

        def __enter__(self):
            m = self.model
            with m._cond:
                if m._h is None:
                    raise Error(_INVALID_ARGUMENT, "%s: the model is closed" % self.what)
                m._running += 1
                return m._h

        def __exit__(self, *exc):
            m = self.model
            with m._cond:
                m._running -= 1
                if m._running == 0:
                    m._cond.notify_all()

    def _using(self, what):
        """A context in which the model stays open (close() waits for it)."""
        return Model._Use(self, what)

    def _shapes(self, inputs):
        """The run's batch and value of the dimension given at run time, from
        the inputs {name: array}, checked against the model's ranges."""
        batch = 1
        for t in self.inputs:
            if t.shape and t.shape[0] == -1:
                batch = np.shape(inputs[t.name])[0] if np.ndim(inputs[t.name]) > 0 else 1
                break
        if self.batch and not self.batch[1] <= batch <= self.batch[2]:
            raise Error(_SHAPE_MISMATCH, "run: batch %s=%d is outside the range %d..%d the model was built for"
                        % (self.batch[0], batch, self.batch[1], self.batch[2]))
        dim = self.dim[2] if self.dim else 1
        for t in self.inputs:
            if -2 in t.shape and np.ndim(inputs[t.name]) == len(t.shape):
                dim = np.shape(inputs[t.name])[t.shape.index(-2)]
                break
        if self.dim and not self.dim[1] <= dim <= self.dim[2]:
            raise Error(_SHAPE_MISMATCH, "run: %s=%d is outside the range %d..%d the model was built for"
                        % (self.dim[0], dim, self.dim[1], self.dim[2]))
        return batch, dim

    def _named(self, what, given, infos):
        if not isinstance(given, dict):
            raise TypeError("run takes a dict {%s name: numpy array}" % what)
        unknown = set(given) - {t.name for t in infos}
        if unknown:
            raise Error(_INVALID_ARGUMENT, "run: no %s named %s (the model's: %s)"
                        % (what, ", ".join(sorted(map(repr, unknown))), ", ".join(repr(t.name) for t in infos)))
        for t in infos:
            if t.name not in given:
                raise Error(_INVALID_ARGUMENT, "run: %s %r is missing" % (what, t.name))

    def _call(self, inputs, outputs):
        """tessera_run on {name: array} inputs into {name: array} outputs."""
        keep = []

        def tensor(arr, writable):
            if not isinstance(arr, np.ndarray):
                raise Error(_INVALID_ARGUMENT, "run: %s, not a numpy array" % type(arr).__name__)
            code = _CODES.get(arr.dtype)
            if code is None:
                raise Error(_DTYPE_MISMATCH, "run: numpy dtype %s has no tessera dtype" % arr.dtype)
            if writable and (not arr.flags.c_contiguous or not arr.flags.writeable):
                raise Error(_INVALID_ARGUMENT, "run: an output array must be writable and C-contiguous")
            shape = (ctypes.c_int64 * max(arr.ndim, 1))(*arr.shape)
            keep.append(shape)
            return _Tensor(code, arr.ndim, shape, arr.ctypes.data, None)

        ins = (_Tensor * max(len(self.inputs), 1))()
        for i, t in enumerate(self.inputs):
            arr = np.ascontiguousarray(inputs[t.name])
            keep.append(arr)
            ins[i] = tensor(arr, False)
        outs = (_Tensor * max(len(self.outputs), 1))()
        for i, t in enumerate(self.outputs):
            outs[i] = tensor(outputs[t.name], True)
        with self._using("run") as h:
            self._check(self._lib.tessera_run(h, ins, len(self.inputs), outs, len(self.outputs)), "run")

    def run(self, inputs):
        """Runs the model on {name: array} (every input, of its dtype and
        shape; the leading dimension of a batched one, -1 in its shape, is
        the run's batch, and its dimensions -2 the value of the dimension
        given at run time) and returns {name: array} of its outputs."""
        if self._h is None:
            raise Error(_INVALID_ARGUMENT, "run: the model is closed")
        self._named("input", inputs, self.inputs)
        batch, dim = self._shapes(inputs)
        outs = {t.name: np.empty(tuple(batch if d == -1 else dim if d == -2 else d for d in t.shape), t.dtype)
                for t in self.outputs}
        self._call(inputs, outs)
        return outs

    def run_into(self, inputs, outputs):
        """Runs the model on {name: array} inputs and writes its outputs
        into {name: array} outputs: preallocated, writable, C-contiguous
        arrays of the outputs' dtypes and shapes (no allocation per run)."""
        if self._h is None:
            raise Error(_INVALID_ARGUMENT, "run_into: the model is closed")
        self._named("input", inputs, self.inputs)
        self._named("output", outputs, self.outputs)
        self._call(inputs, outputs)

    def close(self):
        """Frees the model after the runs in progress end (the library stays
        loaded); later calls raise Error. Closing twice is harmless."""
        with self._cond:
            if self._h is None:
                return
            h, self._h = self._h, None
            while self._running > 0:
                self._cond.wait()
        self._lib.tessera_close(h)

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
