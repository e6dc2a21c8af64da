"""A differential corpus for levelzero-sim's SPIR-V executor, as the PTX corpus is for cuda-sim.

OpenCL C kernels (``spirv/corpus/*.cl``) compiled by clang-15 and llvm-spirv-15
at -O0 and -O2 (``spirv/corpus/build.py``; the ``.spv`` files are committed)
run through aruntime (``load_module``, ``kernel``, ``launch``) and are checked
exactly against numpy: integers in every width, half/float/double
arithmetic, conversions with rounding modes and saturation, math built-ins,
vectors and shuffles, structs by value, local memory and barriers, atomics,
sub-group collectives and control flow.  The transcendental built-ins are
checked against the host's libm, which the executor documents it calls, in
the operand's precision.  What the executor cannot run is refused at module
creation naming the construct (``REFUSED``); never a wrong answer.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import aruntime as ar
from aruntime._exceptions import DriverError

CORPUS = Path(__file__).resolve().parent / "spirv" / "corpus"
OPTS = ("O0", "O2")
i8, u8, i16, u16, i32, u32, i64, f16, f32, f64 = (
    np.int8,
    np.uint8,
    np.int16,
    np.uint16,
    np.int32,
    np.uint32,
    np.int64,
    np.float16,
    np.float32,
    np.float64,
)
LIBM = ctypes.CDLL(ctypes.util.find_library("m"))

# Modules the executor refuses, and what the refusal names (refused_i2f_rtz,
# the last round's, runs now as round_conv; images stay refused).
REFUSED: dict[str, str] = {"refused_image": "capability ImageBasic (13) is not supported"}


_modules: dict[str, ar.Module] = {}


def module(gpu: ar.Backend, name: str) -> ar.Module:
    if name not in _modules:
        _modules[name] = gpu.load_module(name, (CORPUS / f"{name}.spv").read_bytes())
    return _modules[name]


def run(
    gpu: ar.Backend, mod: ar.Module, kernel: str, grid: Any, block: Any, args: list[Any]
) -> list[Any]:
    """Launches on device copies of the arrays; returns every argument, arrays read back."""
    ptrs: list[Any] = []
    try:
        for a in args:
            if isinstance(a, np.ndarray):
                p = gpu.alloc(max(a.nbytes, 4))
                gpu.copy_h2d(a, p)
                ptrs.append((p, a))
            else:
                ptrs.append((None, a))
        launch_args = [a if p is None else p for p, a in ptrs]
        gpu.launch(gpu.kernel(mod, kernel), grid, block, launch_args)
        gpu.synchronize().wait()
        return [a if p is None else gpu.copy_d2h(p, np.empty_like(a)) for p, a in ptrs]
    finally:
        for p, _ in ptrs:
            if p is not None:
                gpu.free(p)


def same(got: np.ndarray, want: Any, what: str) -> None:
    """Equal bit for bit (NaNs match any NaN)."""
    want = np.asarray(want).astype(got.dtype).reshape(got.shape)
    if got.dtype.kind == "f":
        bits = {2: u16, 4: u32, 8: np.uint64}[got.itemsize]
        bad = (got.view(bits) != want.view(bits)) & ~(np.isnan(got) & np.isnan(want))
    else:
        bad = got != want
    idx = np.flatnonzero(bad)
    assert not idx.size, (
        f"{what}: {idx.size} of {got.size} wrong at {idx[:5]}: "
        f"got {got.ravel()[idx[:5]]}, want {want.ravel()[idx[:5]]}"
    )


def wrap(v: int, bits: int, signed: bool = True) -> int:
    v &= (1 << bits) - 1
    return v - (1 << bits) if signed and v >> (bits - 1) else v


def tdiv(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def trem(a: int, b: int) -> int:
    return a - b * tdiv(a, b)


def ints(rng: np.random.Generator, dt: Any, n: int) -> np.ndarray:
    info = np.iinfo(dt)
    x = rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
    edge = np.array([info.min, info.max, 0, 1, -1 if info.min else 2, 7], dtype=np.int64)
    x[: edge.size] = edge.astype(dt)
    return x


def floats(rng: np.random.Generator, dt: Any, n: int) -> np.ndarray:
    x = (rng.standard_normal(n) * 10.0 ** rng.integers(-3, 4, n)).astype(dt)
    special = np.array([np.nan, np.inf, -np.inf, -0.0, 0.5, -2.5, 3.5, 1e-3], dtype=dt)
    x[: special.size] = special
    return x


def per_item(f: Callable[..., list[int]], *cols: np.ndarray) -> list[int]:
    out: list[int] = []
    for vals in zip(*(c.tolist() for c in cols), strict=True):
        out.extend(f(*vals))
    return out


def libm(name: str, ctype: Any, *cols: np.ndarray) -> np.ndarray:
    fn = getattr(LIBM, name)
    fn.restype, fn.argtypes = ctype, [ctype] * len(cols)
    dt = f32 if ctype is ctypes.c_float else f64
    return np.array([fn(*v) for v in zip(*(c.tolist() for c in cols), strict=True)], dt)


CASES: dict[str, Callable[[ar.Backend, str], None]] = {}
N = 128


def case(f: Callable[[ar.Backend, str], None]) -> Callable[[ar.Backend, str], None]:
    CASES[f.__name__] = f
    return f


def sat(v: int, lo: int, hi: int) -> int:
    return max(lo, min(hi, v))


@case
def integers(gpu: ar.Backend, opt: str) -> None:
    mod, rng = module(gpu, f"int_arith_{opt}"), np.random.default_rng(1)

    def i8_ref(x: int, y: int) -> list[int]:
        return [
            x + y,
            x - y,
            x * y,
            tdiv(x, y) if y else 0,
            trem(x, y | 1),
            sat(x + y, -128, 127),
            x >> (y & 7),
            abs(x - y),
        ]

    def u8_ref(x: int, y: int) -> list[int]:
        return [
            x + y,
            max(x - y, 0),
            x // y if y else 0,
            x >> (y & 7),
            bin(x).count("1"),
            (x + y) >> 1,
        ]

    def i16_ref(x: int, y: int) -> list[int]:
        r = y & 15
        rot = ((x & 0xFFFF) << r | (x & 0xFFFF) >> (16 - r)) if r else x
        return [
            x + y,
            x * y,
            tdiv(x, y) if y else 0,
            trem(x, y | 1),
            sat(x - y, -(1 << 15), (1 << 15) - 1),
            rot,
        ]

    def i32_ref(x: int, y: int) -> list[int]:
        ok = y and not (x == -(1 << 31) and y == -1)
        rem = 0 if x == -(1 << 31) and (y | 1) == -1 else trem(x, y | 1)
        clz = 32 - (x & 0xFFFFFFFF).bit_length()
        return [
            x + y,
            x * y,
            tdiv(x, y) if ok else 0,
            rem,
            x << (y & 31),
            x >> (y & 31),
            (x * y) >> 32,
            clz,
            max(x, y) ^ min(x, y),
            (x & 0xFFFFFFFF) >> (y & 31),
        ]

    def u32_ref(x: int, y: int) -> list[int]:
        ctz = (x & -x).bit_length() - 1 if x else 32
        return [
            x * y,
            x // y if y else 0,
            x % (y | 1),
            (x * y) >> 32,
            min(x + y, (1 << 32) - 1),
            ctz,
        ]

    def i64_ref(x: int, y: int) -> list[int]:
        ok = y and not (x == -(1 << 63) and y == -1)
        rem = 0 if x == -(1 << 63) and (y | 1) == -1 else trem(x, y | 1)
        udiv = (x & (2**64 - 1)) // ((y & (2**64 - 1)) | 1)
        return [x + y, x * y, tdiv(x, y) if ok else 0, rem, x >> (y & 63), (x * y) >> 64, udiv]

    table = [
        ("i8_ops", i8, i8_ref, 8),
        ("u8_ops", u8, u8_ref, 6),
        ("i16_ops", i16, i16_ref, 6),
        ("i32_ops", i32, i32_ref, 10),
        ("u32_ops", u32, u32_ref, 6),
        ("i64_ops", i64, i64_ref, 7),
    ]
    for kernel, dt, ref, k in table:
        a, b = ints(rng, dt, N), ints(rng, dt, N)
        b[10:20] = 0  # division by zero is guarded in the kernel
        b[20:30] = rng.integers(1, 9, 10).astype(dt)
        out = run(gpu, mod, kernel, N // 64, 64, [a, b, np.zeros(N * k, dt)])[2]
        bits = np.dtype(dt).itemsize * 8
        want = [wrap(v, bits, np.dtype(dt).kind == "i") for v in per_item(ref, a, b)]
        same(out, np.array(want, dtype=np.int64 if bits < 64 else object).astype(dt), kernel)


@case
def float_arithmetic(gpu: ar.Backend, opt: str) -> None:
    mod, rng = module(gpu, f"float_arith_{opt}"), np.random.default_rng(2)
    with np.errstate(all="ignore"):
        a, b = floats(rng, f32, N), floats(rng, f32, N)[::-1].copy()
        out = run(gpu, mod, "f32_ops", N // 64, 64, [a, b, np.zeros(6 * N, f32)])[2]
        alt = np.where(a == b, f32(1.0), b)
        same(
            out,
            np.stack([a + b, a - b, a * b, a / b, (-a) * f32(0.5) + b, np.where(a < b, a, alt)], 1),
            "f32",
        )
        x, y = floats(rng, f64, N), floats(rng, f64, N)[::-1].copy()
        out = run(gpu, mod, "f64_ops", N // 64, 64, [x, y, np.zeros(5 * N, f64)])[2]
        same(out, np.stack([x + y, x - y, x * y, x / y, (x + y) * (x - y)], 1), "f64")
        h, g = floats(rng, f16, N), floats(rng, f16, N)[::-1].copy()
        out = run(gpu, mod, "f16_ops", N // 64, 64, [h, g, np.zeros(4 * N, f16)])[2]
        prod = (h.astype(f32) * g.astype(f32)).astype(f16)
        same(out, np.stack([h + g, h * g, h / g, prod], 1), "f16")
        out = run(gpu, mod, "mixed_widths", N // 64, 64, [a, x, np.zeros(2 * N, f64)])[2]
        same(out, np.stack([a.astype(f64) * x, (a * x.astype(f32)).astype(f64)], 1), "mixed")


def rounded(x: np.ndarray, how: str) -> np.ndarray:
    with np.errstate(all="ignore"):
        return {"rtz": np.trunc, "rte": np.rint, "rtp": np.ceil, "rtn": np.floor}[how](
            x.astype(f64)
        )


def sat_int(x: np.ndarray, how: str, lo: int, hi: int) -> list[int]:
    return [
        0 if np.isnan(v) else sat(int(v) if np.isfinite(v) else (hi if v > 0 else lo), lo, hi)
        for v in rounded(x, how).tolist()
    ]


@case
def conversions(gpu: ar.Backend, opt: str) -> None:
    mod, rng = module(gpu, f"convert_{opt}"), np.random.default_rng(3)
    x = floats(rng, f32, N) * f32(1e3)
    x[8:16] = [2.5, -2.5, 0.5, 3e9, -3e9, 255.5, 127.5, -128.5]
    out = run(gpu, mod, "f2i", N // 64, 64, [x, np.zeros(6 * N, i32)])[1]
    lo, hi = -(1 << 31), (1 << 31) - 1
    trunc = [0 if np.isnan(v) or abs(v) > 2e9 else int(v) for v in x.tolist()]
    uns = [wrap(v, 32) for v in sat_int(x, "rtz", 0, (1 << 32) - 1)]
    cols = [sat_int(x, h, lo, hi) for h in ("rtz", "rte", "rtp", "rtn")] + [trunc, uns]
    same(out, np.array(cols, np.int64).T.astype(i32), "f2i")
    c, uc, s = run(
        gpu, mod, "f2small", N // 64, 64, [x, np.zeros(N, i8), np.zeros(N, u8), np.zeros(N, i16)]
    )[1:]
    same(c, sat_int(x, "rtz", -128, 127), "convert_char_sat")
    same(uc, sat_int(x, "rte", 0, 255), "convert_uchar_sat_rte")
    same(s, sat_int(x, "rtn", -32768, 32767), "convert_short_sat_rtn")
    d = floats(rng, f64, N) * 1e17
    d[8:12] = [2.0**63, -(2.0**63), 2.0**64, 1e300]
    longs, fl = run(gpu, mod, "d2l", N // 64, 64, [d, np.zeros(2 * N, i64), np.zeros(N, f32)])[1:]
    want = [
        sat_int(d, "rtz", -(1 << 63), (1 << 63) - 1),
        [wrap(v, 64) for v in sat_int(d, "rte", 0, (1 << 64) - 1)],
    ]
    same(longs, np.array(want, dtype=object).T.astype(i64), "d2l")
    with np.errstate(all="ignore"):
        same(fl, d.astype(f32), "double to float")
    a, b = ints(rng, i32, N), ints(rng, i64, N)
    f, dd = run(gpu, mod, "i2f", N // 64, 64, [a, b, np.zeros(2 * N, f32), np.zeros(N, f64)])[2:]
    same(f, np.stack([a.astype(f32), b.astype(f32)], 1), "int to float")
    same(dd, b.astype(f64), "long to double")
    c, us, w = run(
        gpu,
        mod,
        "i2i_sat",
        N // 64,
        64,
        [a, b, np.zeros(N, i8), np.zeros(N, u16), np.zeros(N, i32)],
    )[2:]
    same(c, a.astype(i8), "(char)int")
    same(us, b.astype(u16), "(ushort)long")
    same(w, a.astype(u8).astype(i32) + b.astype(i16).astype(i32), "widening")
    c = run(gpu, mod, "i2i_saturating", N // 64, 64, [a, np.zeros(N, i8)])[1]
    same(c, np.clip(a, -128, 127), "convert_char_sat(int)")


@case
def math_builtins(gpu: ar.Backend, opt: str) -> None:
    mod, rng = module(gpu, f"math_{opt}"), np.random.default_rng(4)
    a, b = floats(rng, f32, N), floats(rng, f32, N)[::-1].copy()
    a[8:16] = [0.49999997, -0.49999997, 2.5, -3.5, 1.5, 8388609.0, -0.0, 100.0]
    out = run(gpu, mod, "math_f32", N // 64, 64, [a, b, np.zeros(12 * N, f32)])[2]
    fl = ctypes.c_float
    with np.errstate(all="ignore"):
        a64 = a.astype(f64)
        rnd = np.copysign(np.floor(np.abs(a64) + 0.5), a64).astype(f32)
        want = [
            np.sqrt(np.abs(a)),
            np.floor(a),
            np.ceil(a),
            np.trunc(a),
            np.rint(a),
            rnd,
            np.copysign(a, b),
            np.fmin(a, b),
            np.fmax(a, b),
            np.fmod(a, b),
            libm("expf", fl, a),
            libm("fmaf", fl, a, b, a),
        ]
    for k, w in enumerate(want):
        same(out[k::12], w, f"math_f32[{k}]")
    x, y = floats(rng, f64, N), rng.standard_normal(N)
    out = run(gpu, mod, "math_f64", N // 64, 64, [x, y, np.zeros(8 * N, f64)])[2]
    db = ctypes.c_double
    ax = np.abs(x)
    want = [
        np.sqrt(ax),
        libm("sin", db, x),
        libm("log", db, ax),
        libm("pow", db, ax, y),
        libm("atan2", db, x, y),
        libm("fma", db, x, y, -x),
        libm("hypot", db, x, y),
        libm("cbrt", db, x),
    ]
    for k, w in enumerate(want):
        same(out[k::8], w, f"math_f64[{k}]")


@case
def vectors(gpu: ar.Backend, opt: str) -> None:
    mod, rng = module(gpu, f"vectors_{opt}"), np.random.default_rng(5)
    x, y = floats(rng, f32, 4 * N).reshape(N, 4), floats(rng, f32, 4 * N)[::-1].reshape(N, 4).copy()
    out, dots = run(
        gpu, mod, "float4_ops", N // 64, 64, [x, y, np.zeros((N, 3, 4), f32), np.zeros(N, f32)]
    )[2:]
    with np.errstate(all="ignore"):
        same(out[:, 0], x * y + np.array([1, 2, 3, 4], f32), "x * y + c")
        same(out[:, 1], x[:, ::-1] - y[:, [0, 0, 1, 1]], "swizzles")
        same(out[:, 2], np.where(x < y, y, x), "select")
        p = x * y
        same(dots, ((p[:, 0] + p[:, 1]) + p[:, 2]) + p[:, 3], "dot")
    a, b = ints(rng, i32, 4 * N).reshape(N, 4), ints(rng, i32, 4 * N).reshape(N, 4)
    out = run(gpu, mod, "shuffles", N // 64, 64, [a, b, np.zeros((N, 2, 8), i32)])[2]
    with np.errstate(all="ignore"):
        s = a[:, [3, 0, 2, 1]]
        first = np.concatenate([s, a[:, [1, 3]] + b[:, [2, 0]], a[:, [3]], b[:, [0]]], 1)
    same(out[:, 0], first, "shuffle")
    same(out[:, 1], np.concatenate([a, b], 1)[:, [7, 0, 6, 1, 5, 2, 4, 3]], "shuffle2")
    v = floats(rng, f32, 3 * N)
    out = run(gpu, mod, "vload_store", N // 64, 64, [v, np.zeros(3 * N, f32)])[1]
    with np.errstate(all="ignore"):
        same(out.reshape(N, 3), v.reshape(N, 3)[:, [2, 0, 1]] * f32(2), "vload3/vstore3")
    c, d = ints(rng, u8, 8 * N).reshape(N, 8), ints(rng, u8, 8 * N).reshape(N, 8)
    out = run(gpu, mod, "uchar_vectors", N // 64, 64, [c, d, np.zeros((N, 2, 8), u8)])[2]
    same(out[:, 0], np.minimum(c.astype(int) + d, 255), "add_sat")
    same(out[:, 1], (c >> 2) ^ d, "shift, xor")
    e = floats(rng, f64, 2 * N).reshape(N, 2)
    out = run(gpu, mod, "double2_ops", N // 64, 64, [e, np.zeros((N, 2), f64)])[1]
    with np.errstate(all="ignore"):
        same(out, e[:, ::-1] * e + np.array([0.25, -0.5]), "double2")


SMALL = np.dtype(
    {
        "names": ["a", "b", "c", "d"],
        "formats": [i32, f32, i16, i8],
        "offsets": [0, 4, 8, 10],
        "itemsize": 12,
    }
)


@case
def structs(gpu: ar.Backend, opt: str) -> None:
    mod, rng = module(gpu, f"structs_{opt}"), np.random.default_rng(6)
    small = np.array([(7, 1.25, -300, 5)], SMALL)
    big = np.zeros(24, u8)
    big[:8].view(f64)[0] = 0.1
    big[8:20].view(i32)[:] = [3, -4, 1000001]
    big[20] = 200
    out = run(
        gpu, mod, "struct_args", N // 64, 64, [small.tobytes(), np.zeros(N, f32), big.tobytes()]
    )[1]
    idx = np.array([3, -4, 1000001])[np.arange(N) % 3]
    want = f32(7 - 300 + 5) * f32(1.25) + (0.1 * idx).astype(f32) + f32(200)
    same(out, want, "struct_args")
    z = (rng.standard_normal(2 * N) * 0.9).astype(f32).reshape(N, 2)
    out = run(gpu, mod, "complex_pow", N // 64, 64, [z, np.zeros((N, 2), f32), i32(5)])[1]
    acc = np.stack([np.ones(N, f32), np.zeros(N, f32)], 1)
    for _ in range(5):
        re = acc[:, 0] * z[:, 0] - acc[:, 1] * z[:, 1]
        im = acc[:, 0] * z[:, 1] + acc[:, 1] * z[:, 0]
        acc = np.stack([re, im], 1)
    same(out, acc, "complex_pow")
    s = np.zeros(N, SMALL)
    s["a"], s["b"] = ints(rng, i32, N) >> 2, floats(rng, f32, N)
    s["c"], s["d"] = ints(rng, i16, N), ints(rng, i8, N)
    out = run(gpu, mod, "struct_array", N // 64, 64, [s, np.zeros(N, SMALL)])[1]
    nxt = np.roll(s, -1)
    first = s.copy()
    first["a"] = s["a"] + nxt["c"]
    first["b"] = s["b"] * f32(2)
    want = first.copy()
    want[1::2] = nxt[1::2]
    for field in "abcd":
        same(out[field], want[field], f"struct_array.{field}")


@case
def local_memory_and_atomics(gpu: ar.Backend, opt: str) -> None:
    mod, rng = module(gpu, f"local_atomics_{opt}"), np.random.default_rng(7)
    x = rng.integers(-1000, 1000, 4 * 64, dtype=i32)
    out = run(gpu, mod, "tree_sum", 4, 64, [x, np.zeros(4, i32)])[1]
    same(out, x.reshape(4, 64).sum(1), "tree_sum")
    m = floats(rng, f32, 24 * 16).reshape(24, 16)
    out = run(gpu, mod, "transpose_tile", (2, 3), (8, 8), [m, np.zeros((16, 24), f32)])[1]
    same(out, m.T, "transpose_tile")
    v = rng.integers(0, 256, 3 * 64, dtype=u8)
    stats = np.array([0, 1000, 0, 0, 0], i32)
    bins, got = run(gpu, mod, "histogram", 3, 64, [v, np.zeros(16, u32), stats])[1:]
    same(bins, np.bincount(v & 15, minlength=16), "histogram")
    xor = int(np.bitwise_xor.reduce(v.astype(i32)))
    bits = int(np.bitwise_or.reduce(np.left_shift(1, (v & 31).astype(np.int64))))
    same(got, np.array([v.max(), v.min(), v.astype(int).sum(), wrap(bits, 32), xor]), "atomics")
    counter, slots, total = run(
        gpu, mod, "cas_counter", 2, 64, [np.zeros(2, i32), np.zeros(128, i32), np.zeros(1, i64)]
    )
    same(counter, [128, 7], "cmpxchg counter, xchg")
    same(np.sort(slots), np.arange(128), "each slot claimed once")
    same(total, [sum(i << 33 for i in range(128))], "64-bit atomic add")


def subgroups_of(n_items: int, local: int) -> list[np.ndarray]:
    """Each sub-group's work-item indices: 16 per sub-group, the last of a group partial."""
    out = []
    for g in range(0, n_items, local):
        out.extend(np.arange(g + s, min(g + s + 16, g + local)) for s in range(0, local, 16))
    return out


@case
def sub_groups(gpu: ar.Backend, opt: str) -> None:
    mod, rng = module(gpu, f"subgroup_{opt}"), np.random.default_rng(8)
    n, local = 120, 40  # sub-groups of 16, 16 and 8
    x = rng.integers(-100, 100, n, dtype=i32)
    out = run(gpu, mod, "sg_ops", n // local, local, [x, np.zeros((n, 6), i32)])[1]
    want = np.zeros((n, 6), np.int64)
    for sg_index, idx in enumerate(subgroups_of(n, local)):
        v = x[idx].astype(np.int64)
        want[idx, 0] = v.sum()
        want[idx, 1] = np.maximum.accumulate(v)
        want[idx, 2] = np.concatenate([[0], np.cumsum(v)[:-1]])
        want[idx, 3] = v[3]
        want[idx, 4] = int((v > 90).any()) + 2 * int((v > -1000).all())
        want[idx, 5] = np.arange(idx.size) + 100 * (sg_index % 3)
    same(out, want, "sub-group collectives")
    f = floats(rng, f32, n)
    f[np.isnan(f)] = 1.0
    out = run(gpu, mod, "sg_float", n // local, local, [f, np.zeros((n, 2), f32)])[1]
    for idx in subgroups_of(n, local):
        same(out[idx, 0], np.full(idx.size, f[idx].min()), "sub_group_reduce_min")
        same(out[idx, 1], np.full(idx.size, f[idx].max()), "sub_group_reduce_max")


def classify(v: int) -> int:
    r = trem(v, 11)
    if r == 0:
        return 10
    if r in (1, 2):
        return wrap(v * 3, 32)
    if r in (5, 6):
        return wrap(v + (100 if r == 5 else 0) - 1, 32)
    if r == -3:
        return wrap(v << 2, 32)
    return v ^ 0x55 if r == 9 else wrap(-v, 32)


def control_ref(v: int) -> list[int]:
    u, steps = (v & 1023) + 1, 0
    while u > 1:
        u = 3 * u + 1 if u & 1 else u // 2
        steps += 1
    acc = 0
    for a in range(8):
        if a == trem(v, 5):
            continue
        for b in range(a):
            if b * a > (v & 31):
                break
            acc += a ^ b
    k, w = 0, v
    while True:
        k += trem(w, 5)
        w = tdiv(w, 7)
        if w == 0:
            break
    return [classify(v), steps, acc, k]


def directed(exact: list[Any], nearest: np.ndarray, how: str) -> np.ndarray:
    """nearest (each exact value rounded to nearest even) moved to the float
    that rounding `how` picks: the neighbour on the other side of the exact value."""
    out = nearest.copy()
    with np.errstate(over="ignore"):
        for k, (v, r) in enumerate(zip(exact, nearest.tolist(), strict=True)):
            if not np.isfinite(v):
                continue
            if np.isfinite(r) and Fraction(r) == Fraction(v):
                continue
            above = r > 0 if not np.isfinite(r) else Fraction(r) > Fraction(v)
            down = {"rtz": v > 0, "rtp": False, "rtn": True}[how]
            if above == down:
                out[k] = np.nextafter(out[k], -np.inf if down else np.inf, dtype=out.dtype)
    return out


@case
def rounding_conversions(gpu: ar.Backend, opt: str) -> None:
    mod, rng = module(gpu, f"round_conv_{opt}"), np.random.default_rng(31)
    a = rng.integers(-(1 << 31), 1 << 31, N, dtype=i64).astype(i32)
    a[:6] = [(1 << 24) + 1, -((1 << 24) + 1), (1 << 31) - 1, -(1 << 31), 0, 16777219]
    lu = rng.integers(0, 1 << 64, N, dtype=np.uint64)
    lu[:3] = [(1 << 64) - 1, (1 << 53) + 1, 1]
    d = floats(rng, f64, N) * 10.0 ** rng.integers(-40, 40, N)
    d[:6] = [0.1, -0.1, 1e-46, -1e-46, 3.5e38, -3.5e38]
    out = run(gpu, mod, "round_conv", N // 64, 64, [a, lu, d, np.zeros(7 * N, f32)])[3]
    with np.errstate(over="ignore"):
        near = [a.astype(f32), lu.astype(f32), d.astype(f32)]
    ai, li, di = a.tolist(), [int(v) for v in lu], d.tolist()
    cols = [directed(ai, near[0], h) for h in ("rtz", "rtp", "rtn")]
    cols += [directed(li, near[1], h) for h in ("rtz", "rtp")]
    cols += [directed(di, near[2], h) for h in ("rtp", "rtn")]
    same(out.reshape(N, 7).view(u32), np.stack(cols, 1).view(u32), "convert_float_rt*")
    # Hand-checked: 2^24 + 1 lies between 2^24 and 2^24 + 2.
    assert out[0:3].tolist() == [16777216.0, 16777218.0, 16777216.0]
    assert out[7:10].tolist() == [-16777216.0, -16777216.0, -16777218.0]


@case
def control_flow(gpu: ar.Backend, opt: str) -> None:
    mod, rng = module(gpu, f"control_{opt}"), np.random.default_rng(9)
    x = rng.integers(-(1 << 20), 1 << 20, N, dtype=i32)
    x[:4] = [0, -(1 << 31), (1 << 31) - 1, -3]
    out = run(gpu, mod, "control", N // 64, 64, [x, np.full((N, 4), -7, i32), i32(100)])[1]
    same(out[:100], np.array(per_item(control_ref, x[:100])).reshape(100, 4), "control")
    same(out[100:], np.full((N - 100, 4), -7), "work-items past n return early")
    out = run(gpu, mod, "lookup", N // 64, 64, [x, np.zeros(N, i32)])[1]
    table, want = [3, 1, 4, 1, 5, 9, 2, 6], []
    for i, v in enumerate((x & 7).tolist()):
        prime = [2, 3, 5, 7, 11]
        prime[v % 5] += v
        want.append(table[v] * 100 + prime[i % 5])
    same(out, want, "lookup")


@pytest.mark.parametrize("opt", OPTS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_corpus_matches_numpy(gpu: ar.Backend, name: str, opt: str) -> None:
    CASES[name](gpu, opt)


def test_every_source_is_built_and_checked() -> None:
    """Each .cl has both builds, and each is run by a case or listed as refused."""
    stems = {p.stem for p in CORPUS.glob("*.cl")}
    built = {p.stem.rsplit("_", 1)[0] for p in CORPUS.glob("*.spv")}
    assert stems == built
    assert {s for s in stems if s.startswith("refused_")} == set(REFUSED)


@pytest.mark.parametrize("opt", OPTS)
@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refusals_name_the_construct(gpu: ar.Backend, name: str, opt: str) -> None:
    with pytest.raises(DriverError, match="MODULE_BUILD_FAILURE") as info:
        gpu.load_module(name, (CORPUS / f"{name}_{opt}.spv").read_bytes())
    assert REFUSED[name] in str(info.value)
    assert "at word" in str(info.value)
