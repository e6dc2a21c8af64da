"""numpy twins of the compute kernels (ffi/kernels/{gemm,conv2d,...}.c) for the mock.

Same arguments, in the same order, as the C kernels.  Those loop grid-stride,
so any launch covers every element and these ignore the launch geometry.
They compute in float32, like the kernels.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided, sliding_window_view

from ..._driver import LaunchConfig

__all__ = ["COMPUTE_MODULES"]

_Bytes = np.ndarray[Any, np.dtype[np.uint8]]
_F32 = np.ndarray[Any, np.dtype[np.float32]]


def _f32(buf: _Bytes, count: int) -> _F32:
    return buf[: count * 4].view(np.float32)


def _matrix(buf: _Bytes, rows: int, cols: int, ld: int) -> _F32:
    """A column-major rows x cols view with leading dimension ld (writable)."""
    span = (cols - 1) * ld + rows if rows and cols else 0
    flat = _f32(buf, span)
    return as_strided(flat, shape=(rows, cols), strides=(4, 4 * ld))


def gemm_f32(
    launch: LaunchConfig, m: Any, n: Any, k: Any, alpha: Any, a: _Bytes, lda: Any,
    b: _Bytes, ldb: Any, beta: Any, c: _Bytes, ldc: Any, trans_a: Any, trans_b: Any,
) -> None:  # fmt: skip
    m_, n_, k_ = int(m), int(n), int(k)
    cm = _matrix(c, m_, n_, int(ldc))
    if k_ and np.float32(alpha) != 0:
        am = _matrix(a, k_, m_, int(lda)).T if trans_a else _matrix(a, m_, k_, int(lda))
        bm = _matrix(b, n_, k_, int(ldb)).T if trans_b else _matrix(b, k_, n_, int(ldb))
        product = np.float32(alpha) * (am @ bm)
    else:
        product = np.zeros((m_, n_), np.float32)
    if np.float32(beta) != 0:
        product = product + np.float32(beta) * cm
    cm[...] = product


def conv2d_f32(
    launch: LaunchConfig, nb: Any, c: Any, h: Any, w: Any, kf: Any, r: Any, s: Any,
    p: Any, q: Any, sh: Any, sw: Any, ph: Any, pw: Any, x: _Bytes, wt: _Bytes, y: _Bytes,
) -> None:  # fmt: skip
    nb_, c_, h_, w_, k_, r_, s_, p_, q_ = (int(v) for v in (nb, c, h, w, kf, r, s, p, q))
    xs = _f32(x, nb_ * c_ * h_ * w_).reshape(nb_, c_, h_, w_)
    ws = _f32(wt, k_ * c_ * r_ * s_).reshape(k_, c_, r_, s_)
    padded = np.pad(xs, ((0, 0), (0, 0), (int(ph), int(ph)), (int(pw), int(pw))))
    windows = sliding_window_view(padded, (r_, s_), axis=(2, 3))
    windows = windows[:, :, :: int(sh), :: int(sw)][:, :, :p_, :q_]
    out = np.einsum("ncpqrs,kcrs->nkpq", windows, ws, dtype=np.float32)
    _f32(y, nb_ * k_ * p_ * q_)[:] = out.reshape(-1)


def attention_f32(
    launch: LaunchConfig, bh: Any, seq_q: Any, seq_k: Any, d: Any, scale: Any,
    causal: Any, q: _Bytes, k: _Bytes, v: _Bytes, out: _Bytes,
) -> None:  # fmt: skip
    bh_, sq, sk, d_ = int(bh), int(seq_q), int(seq_k), int(d)
    qs = _f32(q, bh_ * sq * d_).reshape(bh_, sq, d_)
    ks = _f32(k, bh_ * sk * d_).reshape(bh_, sk, d_)
    vs = _f32(v, bh_ * sk * d_).reshape(bh_, sk, d_)
    scores = (qs @ ks.transpose(0, 2, 1)) * np.float32(scale)
    if causal:
        scores = np.where(np.triu(np.ones((sq, sk), bool), 1), np.float32(-np.inf), scores)
    scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights = scores / scores.sum(axis=-1, keepdims=True)
    _f32(out, bh_ * sq * d_)[:] = (weights @ vs).reshape(-1)


_REDUCERS: tuple[Callable[..., Any], ...] = (np.sum, np.max, np.min, np.mean)


def reduce_f32(
    launch: LaunchConfig, outer: Any, length: Any, inner: Any, op: Any, x: _Bytes, y: _Bytes
) -> None:
    o, n, i = int(outer), int(length), int(inner)
    xs = _f32(x, o * n * i).reshape(o, n, i)
    _f32(y, o * i)[:] = _REDUCERS[int(op)](xs, axis=1).reshape(-1)


def _gelu(x: _F32) -> _F32:
    inner = np.float32(0.7978845608028654) * (x + np.float32(0.044715) * x * x * x)
    out: _F32 = np.float32(0.5) * x * (np.float32(1) + np.tanh(inner))
    return out


_UNARY: tuple[Callable[[_F32], Any], ...] = (
    lambda x: np.where(x > 0, x, np.where(np.isnan(x), x, np.float32(0))),
    _gelu,
    lambda x: np.float32(1) / (np.float32(1) + np.exp(-x)),
    np.tanh,
    np.exp,
    np.log,
    np.sqrt,
    np.negative,
)
_BINARY: tuple[Callable[[_F32, _F32], Any], ...] = (
    np.add,
    np.subtract,
    np.multiply,
    np.divide,
    np.maximum,
    np.minimum,
)


def unary_f32(launch: LaunchConfig, n: Any, op: Any, x: _Bytes, y: _Bytes) -> None:
    count = int(n)
    with np.errstate(all="ignore"):  # log(-1), exp(100): IEEE results, as on a device
        result = _UNARY[int(op)](_f32(x, count).copy())
    _f32(y, count)[:] = result


def binary_f32(launch: LaunchConfig, n: Any, op: Any, a: _Bytes, b: _Bytes, out: _Bytes) -> None:
    count = int(n)
    with np.errstate(all="ignore"):
        result = _BINARY[int(op)](_f32(a, count), _f32(b, count))
    _f32(out, count)[:] = result


COMPUTE_MODULES: dict[str, dict[str, Callable[..., None]]] = {
    "gemm": {"gemm_f32": gemm_f32},
    "conv2d": {"conv2d_f32": conv2d_f32},
    "attention": {"attention_f32": attention_f32},
    "reduce": {"reduce_f32": reduce_f32},
    "unary": {"unary_f32": unary_f32},
    "binary": {"binary_f32": binary_f32},
}
