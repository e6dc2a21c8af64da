"""numpy twins of the compute kernels (ffi/kernels/{gemm,conv2d,...}.c) for the mock.

Same arguments, in the same order, as the C kernels.  Those loop grid-stride,
so any launch covers every element and these ignore the launch geometry.  Like
the kernels, they compute in float32 and store in the op's dtype (float32, or
float16 rounded to nearest even).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided, sliding_window_view

from ..._driver import LaunchConfig
from ._bounds import typed

__all__ = ["COMPUTE_MODULES"]

_Bytes = np.ndarray[Any, np.dtype[np.uint8]]
_F32 = np.ndarray[Any, np.dtype[np.float32]]
_DTYPES: dict[str, type[np.floating[Any]]] = {"f32": np.float32, "f16": np.float16}


def _load(buf: _Bytes, count: int, dt: type[np.floating[Any]]) -> _F32:
    return typed(buf, count, dt).astype(np.float32)


def _store(buf: _Bytes, values: Any, dt: type[np.floating[Any]]) -> None:
    flat = np.asarray(values, np.float32).reshape(-1)
    typed(buf, flat.size, dt)[:] = flat.astype(dt)


def _matrix(buf: _Bytes, rows: int, cols: int, ld: int, dt: type[np.floating[Any]]) -> Any:
    """A writable column-major rows x cols view with leading dimension ld."""
    size = np.dtype(dt).itemsize
    extent = (cols - 1) * ld + rows if rows and cols else 0
    flat = typed(buf, extent, dt)
    return as_strided(flat, shape=(rows, cols), strides=(size, size * ld))


def gemm(
    launch: LaunchConfig, m: Any, n: Any, k: Any, alpha: Any, a: _Bytes, lda: Any,
    b: _Bytes, ldb: Any, beta: Any, c: _Bytes, ldc: Any, trans_a: Any, trans_b: Any,
    *, dt: type[np.floating[Any]],
) -> None:  # fmt: skip
    m_, n_, k_ = int(m), int(n), int(k)
    cm = _matrix(c, m_, n_, int(ldc), dt)
    if k_ and np.float32(alpha) != 0:
        am = _matrix(a, k_, m_, int(lda), dt).T if trans_a else _matrix(a, m_, k_, int(lda), dt)
        bm = _matrix(b, n_, k_, int(ldb), dt).T if trans_b else _matrix(b, k_, n_, int(ldb), dt)
        product = np.float32(alpha) * (am.astype(np.float32) @ bm.astype(np.float32))
    else:
        product = np.zeros((m_, n_), np.float32)
    if np.float32(beta) != 0:
        product = product + np.float32(beta) * cm.astype(np.float32)
    cm[...] = product.astype(dt)


def conv2d(
    launch: LaunchConfig, nb: Any, c: Any, h: Any, w: Any, kf: Any, r: Any, s: Any,
    p: Any, q: Any, sh: Any, sw: Any, ph: Any, pw: Any, x: _Bytes, wt: _Bytes, y: _Bytes,
    *, dt: type[np.floating[Any]],
) -> None:  # fmt: skip
    nb_, c_, h_, w_, k_, r_, s_, p_, q_ = (int(v) for v in (nb, c, h, w, kf, r, s, p, q))
    xs = _load(x, nb_ * c_ * h_ * w_, dt).reshape(nb_, c_, h_, w_)
    ws = _load(wt, k_ * c_ * r_ * s_, dt).reshape(k_, c_, r_, s_)
    padded = np.pad(xs, ((0, 0), (0, 0), (int(ph), int(ph)), (int(pw), int(pw))))
    windows = sliding_window_view(padded, (r_, s_), axis=(2, 3))
    windows = windows[:, :, :: int(sh), :: int(sw)][:, :, :p_, :q_]
    _store(y, np.einsum("ncpqrs,kcrs->nkpq", windows, ws, dtype=np.float32), dt)


def attention(
    launch: LaunchConfig, bh: Any, seq_q: Any, seq_k: Any, d: Any, scale: Any,
    causal: Any, q: _Bytes, k: _Bytes, v: _Bytes, out: _Bytes,
    *, dt: type[np.floating[Any]],
) -> None:  # fmt: skip
    bh_, sq, sk, d_ = int(bh), int(seq_q), int(seq_k), int(d)
    qs = _load(q, bh_ * sq * d_, dt).reshape(bh_, sq, d_)
    ks = _load(k, bh_ * sk * d_, dt).reshape(bh_, sk, d_)
    vs = _load(v, bh_ * sk * d_, dt).reshape(bh_, sk, d_)
    scores = (qs @ ks.transpose(0, 2, 1)) * np.float32(scale)
    if causal:
        scores = np.where(np.triu(np.ones((sq, sk), bool), 1), np.float32(-np.inf), scores)
    scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
    _store(out, (scores / scores.sum(axis=-1, keepdims=True)) @ vs, dt)


_REDUCERS: tuple[Callable[..., Any], ...] = (np.sum, np.max, np.min, np.mean)


def reduce(
    launch: LaunchConfig, outer: Any, length: Any, inner: Any, op: Any, x: _Bytes, y: _Bytes,
    *, dt: type[np.floating[Any]],
) -> None:  # fmt: skip
    o, n, i = int(outer), int(length), int(inner)
    _store(y, _REDUCERS[int(op)](_load(x, o * n * i, dt).reshape(o, n, i), axis=1), dt)


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


def unary(
    launch: LaunchConfig, n: Any, op: Any, x: _Bytes, y: _Bytes, *, dt: type[np.floating[Any]]
) -> None:
    with np.errstate(all="ignore"):  # log(-1), exp(100): IEEE results, as on a device
        _store(y, _UNARY[int(op)](_load(x, int(n), dt)), dt)


def binary(
    launch: LaunchConfig, n: Any, op: Any, a: _Bytes, b: _Bytes, out: _Bytes,
    *, dt: type[np.floating[Any]],
) -> None:  # fmt: skip
    count = int(n)
    with np.errstate(all="ignore"):
        _store(out, _BINARY[int(op)](_load(a, count, dt), _load(b, count, dt)), dt)


COMPUTE_MODULES: dict[str, dict[str, Callable[..., None]]] = {
    fn.__name__: {
        f"{fn.__name__}_{suffix}": functools.partial(fn, dt=dt) for suffix, dt in _DTYPES.items()
    }
    for fn in (gemm, conv2d, attention, reduce, unary, binary)
}
