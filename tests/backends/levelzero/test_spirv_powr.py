"""OpenCL.std powr on levelzero-sim's executor: OpenCL C's, not C's pow.

powr(x, y) is x^y for x >= 0 only: NaN for x < 0, for 0^0, inf^0 and 1^inf
and for a NaN operand, and +0 (or +inf) for either zero.  The sim once ran it
as pow (powr(-2, 2) gave 4, powr(0, 0) gave 1).  ``spirv/powr.cl`` (built by
``spirv/build.py``) is checked on every pair of special values and random
ones, in half (against numpy's float16 of the float64 pow, as the sim's
other half math), float and double (against the host's powf and pow, which
the sim calls), bit for bit with any NaN matching any NaN.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from typing import Any

import numpy as np
import pytest

import aruntime as ar

from .test_spirv_hints import run

LIBM = ctypes.CDLL(ctypes.util.find_library("m"))
SPECIAL = [-np.inf, -3.0, -2.0, -1.0, -0.5, -0.0, 0.0, 0.5, 1.0, 2.0, 3.0, np.inf, np.nan]


def host_pow(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The pow the sim computes in x's precision: libm's powf or pow, or for
    halves numpy's float16 of the float64 pow."""
    if x.dtype == np.float16:
        with np.errstate(all="ignore"):
            return np.power(x.astype(np.float64), y.astype(np.float64)).astype(np.float16)
    ctype = ctypes.c_float if x.dtype == np.float32 else ctypes.c_double
    f = LIBM.powf if x.dtype == np.float32 else LIBM.pow
    f.restype, f.argtypes = ctype, [ctype, ctype]
    return np.array([f(p, q) for p, q in zip(x.tolist(), y.tolist(), strict=True)], x.dtype)


def powr(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """OpenCL C's powr: NaN where its edge cases say so, else pow of |x|."""
    nan = (
        (x < 0)
        | np.isnan(x)
        | np.isnan(y)
        | ((x == 0) & (y == 0))
        | (np.isinf(x) & (y == 0))
        | ((x == 1) & np.isinf(y))
    )
    return np.where(nan, np.nan, host_pow(np.abs(x), y)).astype(x.dtype)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_powr_follows_opencl_c(gpu: ar.Backend, dtype: Any) -> None:
    n = 1024
    rng = np.random.default_rng(52)
    k = len(SPECIAL)
    x = rng.uniform(-4, 4, n).astype(dtype)
    y = rng.uniform(-8, 8, n).astype(dtype)
    x[: k * k] = np.repeat(SPECIAL, k)
    y[: k * k] = np.tile(SPECIAL, k)
    kernel = {np.float16: "powr_f16", np.float32: "powr_f32", np.float64: "powr_f64"}[dtype]
    *_, out = run(gpu, "powr.spv", kernel, n // 64, 64, [x, y, np.zeros(n, dtype)])
    want = powr(x, y)
    # The edge cases the sim once ran as pow.
    assert np.isnan(want[(x < 0) & (y == 2)]).all()
    assert np.isnan(want[(x == 0) & (y == 0)]).all()
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(out), nan)
    bits = {np.float16: np.uint16, np.float32: np.uint32, np.float64: np.uint64}[dtype]
    np.testing.assert_array_equal(out[~nan].view(bits), want[~nan].view(bits))
