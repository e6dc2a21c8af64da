"""OpenCL.std functions with exact results, on levelzero-sim's executor.

dpnp's ``nextafter`` and ``ldexp`` kernels (issue 31) were refused at
module creation because the sim lacked OpenCL.std ``nextafter`` (47),
``logb`` (41) and ``ldexp`` (34).  Their results are exact (ldexp's
subnormals correctly rounded), so the sim computes them with the host's C
functions of the operand's width; ``spirv/cl_exact.cl`` (built by
``spirv/build.py``) is checked bit for bit against numpy on the edge cases:
zeros of both signs, subnormals, the largest finite values, infinities, NaN,
and exponents that overflow or underflow.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import aruntime as ar

from .test_spirv_hints import run


def _edges(dtype: Any) -> np.ndarray:
    info = np.finfo(dtype)
    tiny, sub = info.smallest_normal, info.smallest_subnormal
    return np.array(
        [0.0, -0.0, sub, -sub, 3 * sub, tiny, -tiny, 1.0, -1.5, 3.0, 0.1, 1e-3, info.max,
         -info.max, np.inf, -np.inf, np.nan, 1024.0],
        dtype=dtype,
    )  # fmt: skip


def _logb(a: np.ndarray) -> np.ndarray:
    """C's logb: the exponent of a as a float (frexp's, less one), -inf at zero."""
    with np.errstate(divide="ignore"):
        exponent = (np.frexp(a)[1] - 1).astype(a.dtype)
        return np.where(a == 0, -np.inf, np.where(np.isfinite(a), exponent, np.abs(a)))


def test_nextafter_and_logb_are_exact(gpu: ar.Backend) -> None:
    for dtype in (np.float32, np.float64):
        _check(gpu, dtype)


def _check(gpu: ar.Backend, dtype: Any) -> None:
    rng = np.random.default_rng(47)
    edges = _edges(dtype)
    a = np.concatenate([edges, rng.standard_normal(64 - len(edges)).astype(dtype)])
    b = np.concatenate([np.roll(edges, 3), rng.standard_normal(64 - len(edges)).astype(dtype)])
    b[:4] = [np.inf, -np.inf, 0.0, np.nan]
    kernel = "exact_f32" if dtype == np.float32 else "exact_f64"
    # Exponents that overflow, underflow to subnormals (rounded) and to zero.
    k = rng.integers(-1100, 1100, 64).astype(np.int32)
    k[:8] = [0, 1, -1, 200, -200, 1100, -1100, -1074]
    *_, out = run(gpu, "cl_exact.spv", kernel, 1, 64, [a, b, k, np.zeros(192, dtype)])
    bits = np.uint32 if dtype == np.float32 else np.uint64
    with np.errstate(over="ignore"):
        scaled = np.ldexp(a, k)
    want = np.stack([np.nextafter(a, b), _logb(a), scaled], axis=1).reshape(-1)
    # Bit for bit, NaNs compared as NaNs (their payload is the host's).
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(out), nan)
    np.testing.assert_array_equal(out[~nan].view(bits), want[~nan].view(bits))
