"""The Python side of the runtime's hostile suite (tsrt/hostile_test.go).

    hostile.py load PATH     load and run the model at PATH on fixed inputs
    hostile.py calls DIR     every misuse of the module on the suite's two-input
                             model (ids, mask -> emb, next)
    hostile.py hammer DIR    threads run and profile one model while another
                             thread closes it

Output lines: "start NAME" before each case, then "case NAME GOT WANT [MESSAGE]"
(load: "case load GOT - HASH MESSAGE"); GOT "WRONG" is a call that succeeded
with outputs other than the model's.
"""

import hashlib
import os
import sys
import tempfile
import threading

import numpy as np

import tessera


def fixed_inputs(model):
    """Element i of an input is (i % 7) / 7 (float) or i % 5 (integers)."""
    out = {}
    for t in model.inputs:
        n = int(np.prod(t.shape)) if t.shape else 1
        i = np.arange(n)
        if np.dtype(t.dtype).kind == "f":
            v = (i % 7).astype(np.float32) / np.float32(7)
        elif np.dtype(t.dtype) == np.bool_:
            v = (i % 2).astype(np.bool_)
        else:
            v = (i % 5).astype(t.dtype)
        out[t.name] = v.astype(t.dtype).reshape(t.shape)
    return out


def digest(model, outs):
    h = hashlib.sha256()
    for t in model.outputs:
        h.update(np.ascontiguousarray(outs[t.name]).tobytes())
    return h.hexdigest()


def clean(msg):
    return str(msg).replace("\n", " ")


def status_of(f):
    """Runs f; returns ("TESSERA_OK", result) or (status, message)."""
    try:
        return "TESSERA_OK", f()
    except tessera.Error as e:
        return e.status, e.message


def load(path):
    print("start load", flush=True)
    try:
        model = tessera.load(path)
    except tessera.Error as e:
        print("case load %s - - %s" % (e.status, clean(e.message)), flush=True)
        return
    try:
        outs = model.run(fixed_inputs(model))
    except tessera.Error as e:
        print("case load %s - - %s" % (e.status, clean(e.message)), flush=True)
        return
    finally:
        model.close()
    print("case load TESSERA_OK - %s" % digest(model, outs), flush=True)


def calls(d):
    model = tessera.load(d)
    ids_t, mask_t = model.inputs
    base = fixed_inputs(model)
    base[mask_t.name] = (np.arange(8) % 2).astype(np.int64).reshape(mask_t.shape)
    ref = model.run(base)
    want_next = base[ids_t.name] - base[mask_t.name] + 1
    assert np.array_equal(ref[model.outputs[1].name], want_next), "next is not ids - mask + 1"
    ref_hash = digest(model, ref)

    def case(name, f, want, check=None):
        print("start " + name, flush=True)
        got, res = status_of(f)
        msg = "" if got == "TESSERA_OK" else clean(res)
        if got == "TESSERA_OK" and check is not None and not check(res):
            got = "WRONG"
        print("case %s %s %s %s" % (name, got, want, msg), flush=True)

    def with_input(name, value):
        x = dict(base)
        x[name] = value
        return x

    empty = tempfile.mkdtemp()
    case("open_missing_folder", lambda: tessera.load(os.path.join(d, "nothing-here")), "TESSERA_NOT_FOUND")
    case("open_empty_folder", lambda: tessera.load(empty), "TESSERA_NOT_FOUND")
    case("open_not_a_library", lambda: tessera.load(os.path.join(d, "manifest.json")), "TESSERA_BAD_LIBRARY")
    os.rmdir(empty)
    case("run_missing_input", lambda: model.run({ids_t.name: base[ids_t.name]}), "TESSERA_INVALID_ARGUMENT")
    case("run_unknown_input", lambda: model.run(dict(base, nope=base[ids_t.name])), "TESSERA_INVALID_ARGUMENT")
    case("run_not_an_array", lambda: model.run(with_input(ids_t.name, "ids")), "TESSERA_DTYPE_MISMATCH")
    for dt in (np.float32, np.float64, np.int32, np.int8, np.uint8, np.int16, np.uint16, np.uint32, np.bool_,
               np.float16, np.complex64):
        case("input_dtype_" + np.dtype(dt).name, lambda dt=dt: model.run(with_input(ids_t.name, base[ids_t.name].astype(dt))),
             "TESSERA_DTYPE_MISMATCH")
    for shape in ((2,), (2, 4, 1), (8,), (1, 8), (2, 5), (3, 4), (0, 4), ()):
        case("input_shape_%s" % "x".join(map(str, shape)),
             lambda shape=shape: model.run(with_input(mask_t.name, np.zeros(shape, np.int64))), "TESSERA_SHAPE_MISMATCH")
    case("input_fortran_order", lambda: model.run(with_input(ids_t.name, np.asfortranarray(base[ids_t.name]))),
         "TESSERA_OK", lambda r: digest(model, r) == ref_hash)
    case("input_strided", lambda: model.run(with_input(ids_t.name, np.repeat(base[ids_t.name], 2, axis=1)[:, ::2])),
         "TESSERA_OK", lambda r: digest(model, r) == ref_hash)
    for name, which, v, want in (
            ("mask_2^24", 1, 16777216, "TESSERA_OK"),
            ("mask_2^24+1", 1, 16777217, "TESSERA_VALUE_OUT_OF_RANGE"),
            ("mask_2^31+7", 1, 2**31 + 7, "TESSERA_VALUE_OUT_OF_RANGE"),
            ("mask_int64_min", 1, -2**63, "TESSERA_VALUE_OUT_OF_RANGE"),
            ("ids_999", 0, 999, "TESSERA_OK"),
            ("ids_1000", 0, 1000, "TESSERA_VALUE_OUT_OF_RANGE"),
            ("ids_5000", 0, 5000, "TESSERA_VALUE_OUT_OF_RANGE"),
            ("ids_-1001", 0, -1001, "TESSERA_VALUE_OUT_OF_RANGE")):
        t = (ids_t, mask_t)[which]
        x = base[t.name].copy()
        x.reshape(-1)[7] = v
        inputs = with_input(t.name, x)
        case(name, lambda inputs=inputs: model.run(inputs), want,
             lambda r, inputs=inputs: np.array_equal(r[model.outputs[1].name],
                                                     inputs[ids_t.name] - inputs[mask_t.name] + 1))
    outs = {t.name: np.empty(t.shape, t.dtype) for t in model.outputs}
    case("run_into", lambda: model.run_into(base, outs) or outs, "TESSERA_OK", lambda r: digest(model, r) == ref_hash)
    bad = dict(outs)
    bad[model.outputs[0].name] = np.empty(model.outputs[0].shape, np.float64)
    case("run_into_wrong_dtype", lambda: model.run_into(base, bad), "TESSERA_DTYPE_MISMATCH")
    bad = dict(outs)
    bad[model.outputs[1].name] = np.empty(model.outputs[1].shape, np.int64)[:, ::1].T
    case("run_into_wrong_layout", lambda: model.run_into(base, bad), "TESSERA_INVALID_ARGUMENT")
    ro = np.empty(model.outputs[0].shape, np.float32)
    ro.flags.writeable = False
    case("run_into_read_only", lambda: model.run_into(base, dict(outs, **{model.outputs[0].name: ro})),
         "TESSERA_INVALID_ARGUMENT")
    case("run_into_missing_output", lambda: model.run_into(base, {model.outputs[0].name: outs[model.outputs[0].name]}),
         "TESSERA_INVALID_ARGUMENT")
    case("threads_-1", lambda: model.set_num_threads(-1), "TESSERA_INVALID_ARGUMENT")
    case("threads_2^31-1", lambda: model.set_num_threads(2**31 - 1), "TESSERA_INVALID_ARGUMENT")
    case("profile_short", lambda: model.profile(np.zeros(max(len(model.steps) - 1, 0))), "TESSERA_INVALID_ARGUMENT")
    case("profile_float32", lambda: model.profile(np.zeros(len(model.steps), np.float32)), "TESSERA_INVALID_ARGUMENT")
    secs = np.zeros(len(model.steps))
    case("profile", lambda: model.profile(secs), "TESSERA_OK")
    case("profiled_run", lambda: model.run(base), "TESSERA_OK", lambda r: digest(model, r) == ref_hash and secs.sum() > 0)
    case("profile_off", lambda: model.profile(None), "TESSERA_OK")
    with tessera.load(d) as other:
        case("context_manager", lambda: other.run(base), "TESSERA_OK", lambda r: digest(other, r) == ref_hash)
    case("closed_by_with", lambda: other.run(base), "TESSERA_INVALID_ARGUMENT")
    model.close()
    model.close()
    case("closed_run", lambda: model.run(base), "TESSERA_INVALID_ARGUMENT")
    case("closed_run_into", lambda: model.run_into(base, outs), "TESSERA_INVALID_ARGUMENT")
    case("closed_threads", lambda: model.set_num_threads(1), "TESSERA_INVALID_ARGUMENT")
    case("closed_profile", lambda: model.profile(None), "TESSERA_INVALID_ARGUMENT")


def hammer(d, threads=16):
    """threads threads run (and profile) one model; the main thread closes it
    while they run. Runs before the close give the model's outputs; calls
    after it raise TESSERA_INVALID_ARGUMENT ("closed"), never a crash."""
    for rnd in range(3):
        model = tessera.load(d)
        model.set_num_threads(1)
        base = fixed_inputs(model)
        ref = digest(model, model.run(base))
        name = "hammer_%d" % rnd
        print("start " + name, flush=True)
        state = {"wrong": 0, "runs": 0, "saw": 0}
        lock = threading.Lock()
        secs = np.zeros(max(len(model.steps), 1))

        def work():
            after, saw, i = 0, False, 0
            while after < 50:
                i += 1
                try:
                    if i % 7 == 3:
                        model.profile(secs if i % 2 else None)
                    else:
                        r = model.run(base)
                        with lock:
                            state["runs"] += 1
                            state["wrong"] += digest(model, r) != ref
                except tessera.Error as e:
                    with lock:
                        state["wrong"] += e.status != "TESSERA_INVALID_ARGUMENT" or "closed" not in e.message
                    saw = True
                if saw:
                    after += 1
                if i > 200000:
                    break
            with lock:
                state["saw"] += saw

        ts = [threading.Thread(target=work) for _ in range(threads)]
        for t in ts:
            t.start()
        threading.Event().wait(0.1 + 0.05 * rnd)
        if rnd == 2:
            c = threading.Thread(target=model.close)
            c.start()
            model.close()
            c.join()
        else:
            model.close()
        for t in ts:
            t.join()
        ok = state["wrong"] == 0 and state["saw"] == threads
        print("case %s %s TESSERA_OK %d threads, %d runs, %d saw the close, %d wrong"
              % (name, "TESSERA_OK" if ok else "WRONG", threads, state["runs"], state["saw"], state["wrong"]), flush=True)


if __name__ == "__main__":
    cmd, path = sys.argv[1], sys.argv[2]
    {"load": load, "calls": calls, "hammer": hammer}[cmd](path)
