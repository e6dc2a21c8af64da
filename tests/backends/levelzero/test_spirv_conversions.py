"""Saturating integer conversions and directed float rounding on levelzero-sim.

OpenCL's ``convert_<type>_sat`` is ``OpSatConvertSToU``/``OpSatConvertUToS``,
or ``OpSConvert``/``OpUConvert`` decorated ``SaturatedConversion``; its
``_rtz``/``_rtp``/``_rtn`` are an ``FPRoundingMode`` decoration on
``OpConvertSToF``, ``OpConvertUToF`` and ``OpFConvert``.  The sim refused
both (at module creation).  ``spirv/conversions.spvasm`` runs them; the
expected values are numpy's clamps and, for the roundings, the two floats
around each exact source (compared as fractions), with hand-checked cases.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

import aruntime as ar

HERE = Path(__file__).resolve().parent / "spirv"
IMAGE = "conversions.spv"


@pytest.fixture(scope="module")
def module(gpu: ar.Backend) -> ar.Module:
    return gpu.load_module(IMAGE, (HERE / IMAGE).read_bytes())


def _run(
    gpu: ar.Backend, module: ar.Module, kernel: str, n: int, args: list[np.ndarray]
) -> np.ndarray:
    """Runs n work-items; the last array is the output, returned."""
    ptrs = []
    try:
        for a in args:
            p = gpu.alloc(a.nbytes)
            gpu.copy_h2d(a, p)
            ptrs.append(p)
        gpu.launch(gpu.kernel(module, kernel), 1, n, ptrs)
        gpu.synchronize().wait()
        return gpu.copy_d2h(ptrs[-1], np.empty_like(args[-1]))
    finally:
        for p in ptrs:
            gpu.free(p)


def test_saturating_integer_conversions(gpu: ar.Backend, module: ar.Module) -> None:
    edge = [0, 1, -1, 127, 128, -128, -129, 255, 256, 32767, 32768, -32768, -32769]
    edge += [65535, 65536, 2**31 - 1, -(2**31), 65535 * 65537, -65536]
    rng = np.random.default_rng(3100)
    rand = rng.integers(-(2**31), 2**31, 64 - len(edge), dtype=np.int64)
    a = np.concatenate([np.array(edge, np.int64), rand]).astype(np.int32)
    out = _run(gpu, module, "sat_conv", a.size, [a, np.zeros(8 * a.size, np.uint64)]).reshape(-1, 8)
    s = a.astype(np.int64)
    u = a.view(np.uint32).astype(np.int64)
    w = s * 65537
    want = np.stack(
        [
            np.clip(s, 0, 255),  # OpSatConvertSToU uchar
            np.minimum(u, 127),  # OpSatConvertUToS char, the source unsigned
            np.clip(s, -32768, 32767),  # OpSConvert short, saturated
            np.minimum(u, 65535),  # OpUConvert ushort, saturated
            np.maximum(s, 0),  # OpSatConvertSToU ulong
            u,  # OpSatConvertUToS long: always fits
            np.clip(w, 0, 2**32 - 1),  # OpSatConvertSToU uint from 64 bits
            np.minimum(w.view(np.uint64), 2**31 - 1).astype(np.int64),  # OpSatConvertUToS int
        ],
        axis=1,
    ).view(np.uint64)
    names = ("SToU uchar", "UToS char", "SConvert sat", "UConvert sat", "SToU ulong",
             "UToS long", "SToU uint", "UToS int")  # fmt: skip
    for k, name in enumerate(names):
        np.testing.assert_array_equal(out[:, k], want[:, k], err_msg=name)


def _around(exact: Fraction, nearest: np.floating) -> tuple[np.floating, np.floating]:
    """The floats of nearest's type just below and just above exact (equal if exact)."""
    if not np.isfinite(nearest):
        big = np.finfo(type(nearest)).max
        return (big, nearest) if nearest > 0 else (nearest, -big)
    f = Fraction(float(nearest))
    if f == exact:
        return nearest, nearest
    inf = type(nearest)(np.inf)
    if f > exact:
        return np.nextafter(nearest, -inf), nearest
    return nearest, np.nextafter(nearest, inf)


def _rounded(exact: Fraction | None, nearest: np.floating, mode: str) -> np.floating:
    if exact is None:  # an infinite source stays itself
        return nearest
    lo, hi = _around(exact, nearest)
    if mode == "rtz":
        return lo if exact > 0 else hi
    return hi if mode == "rtp" else lo


def _bits(v: np.floating) -> int:
    return int(np.array(v).view({2: np.uint16, 4: np.uint32, 8: np.uint64}[v.itemsize]))


def _want_rounding(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    rows = []
    with np.errstate(over="ignore"):
        for xi, yi in zip(x.tolist(), y.tolist(), strict=True):
            xu = xi % 2**64
            fx, fxu = Fraction(xi), Fraction(xu)
            fy = Fraction(yi) if np.isfinite(yi) else None
            f32, f16, f64 = np.float32, np.float16, np.float64
            # Each nearest is one rounding: an int64 straight to float32 or
            # float64; to half, the double is exact where half is finite.
            row = [
                f32(xi),
                _rounded(fx, f32(xi), "rtz"),
                _rounded(fx, f32(xi), "rtp"),
                _rounded(fx, f32(xi), "rtn"),
                _rounded(fxu, np.uint64(xu).astype(f32), "rtz"),
                _rounded(fxu, np.uint64(xu).astype(f32), "rtp"),
                _rounded(fy, f32(yi), "rtz"),
                _rounded(fy, f32(yi), "rtp"),
                _rounded(fy, f32(yi), "rtn"),
                _rounded(fy, f16(yi), "rtz"),
                _rounded(fy, f16(yi), "rtp"),
                _rounded(fy, f16(yi), "rtn"),
                _rounded(fx, f16(f64(xi)), "rtz"),
                _rounded(fx, f16(f64(xi)), "rtp"),
                _rounded(fx, f64(xi), "rtz"),
                _rounded(fx, f64(xi), "rtn"),
            ]
            rows.append([_bits(v) for v in row])
    return np.array(rows, np.uint64)


def test_directed_rounding_of_conversions(gpu: ar.Backend, module: ar.Module) -> None:
    xs = [0, 1, -1, 2**24 + 1, -(2**24 + 1), 2**24 + 3, 2**53 + 1, -(2**53 + 1), 2**63 - 1,
          -(2**63), 2049, -2049, 65519, 65520, 70000, -70000, 2**40 + 2**16 + 1]  # fmt: skip
    ys = [0.0, -0.0, 0.1, -0.1, 1 / 3, -1 / 3, 1e-40, -1e-40, 1e-46, -1e-46, 3.5e38, -3.5e38,
          1e300, 65504.5, 65520.0, -65519.9, 1e-8, -1e-8, 2.0**-25, 1.0, float("inf"),
          -float("inf")]  # fmt: skip
    rng = np.random.default_rng(31)
    n = 64
    x = np.concatenate([np.array(xs, np.int64), rng.integers(-(2**62), 2**62, n - len(xs))])
    y = np.concatenate(
        [np.array(ys), rng.standard_normal(n - len(ys)) * 10.0 ** rng.integers(-9, 9, n - len(ys))]
    )
    out = _run(gpu, module, "round_conv", n, [x, y, np.zeros(16 * n, np.uint64)]).reshape(n, 16)
    want = _want_rounding(x, y)
    names = ("s64->f32", "s64->f32 rtz", "s64->f32 rtp", "s64->f32 rtn", "u64->f32 rtz",
             "u64->f32 rtp", "f64->f32 rtz", "f64->f32 rtp", "f64->f32 rtn", "f64->f16 rtz",
             "f64->f16 rtp", "f64->f16 rtn", "s64->f16 rtz", "s64->f16 rtp", "s64->f64 rtz",
             "s64->f64 rtn")  # fmt: skip
    for k, name in enumerate(names):
        np.testing.assert_array_equal(out[:, k], want[:, k], err_msg=name)
    # Hand-checked: 2^24 + 1 lies between 2^24 and 2^24 + 2 in float.
    assert out[3, 1] == 0x4B800000 and out[3, 2] == 0x4B800001 and out[3, 3] == 0x4B800000
    assert out[4, 1] == 0xCB800000 and out[4, 2] == 0xCB800000 and out[4, 3] == 0xCB800001
    # 70000 is past half's range: rtz gives the largest half, rtp infinity.
    assert out[14, 12] == 0x7BFF and out[14, 13] == 0x7C00
    assert out[15, 12] == 0xFBFF and out[15, 13] == 0xFBFF
    # 0.1 in float: rtz and rtn 0x3DCCCCCC, rtp 0x3DCCCCCD (nearest is rtp's).
    assert out[2, 6] == 0x3DCCCCCC and out[2, 7] == 0x3DCCCCCD and out[2, 8] == 0x3DCCCCCC
