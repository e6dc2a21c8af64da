"""Compute operations, mixed into :class:`aruntime.Backend`.

``gemm``, ``conv2d_forward``, ``attention``, ``reduce``, ``unary`` and
``binary`` validate their arguments completely (types, shapes, every operand's
byte range against the allocation ledger) before anything is enqueued, then
launch one of aruntime's portable kernels (``ffi/kernels/<op>.c``) through the
ordinary :meth:`Backend.launch` path.  So each returns a :class:`Completion`
like any launch, runs in stream order, can be captured into a graph, and runs
for real on every backend: numpy twins on mock, the host build on the sims,
PTX on CUDA devices and SPIR-V on Level Zero devices.

Supported dtypes, on every backend: ``"float32"`` and ``"float16"`` (IEEE
half; a numpy dtype or type such as ``np.float16`` is accepted too).  float16
operands are loaded into float32, computed and accumulated in float32, and
stored rounded to nearest even; ``alpha``, ``beta`` and ``scale`` are float32
whatever the dtype.  Every buffer is packed (row-major for the tensor ops;
gemm is column-major with leading dimensions, as BLAS).

The kernels are naive (one thread per output element, no tiling): correct
everywhere, fast nowhere.  Cancelling an await of any of these ops abandons
the wait only; the kernel still runs to completion.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

import numpy as np

from ._completion import Completion
from ._exceptions import InvalidArgumentError
from ._handles import Stream
from ._memory import DevicePtr
from ._modules import Kernel, Module
from ._objects import Objects
from ._state import BackendState
from ._validate import check_count

__all__ = ["BINARY_OPS", "DTYPES", "REDUCE_OPS", "UNARY_OPS", "ComputeOps", "DTypeLike"]

#: A dtype argument: its name (``"float32"``), a numpy dtype, or a numpy scalar type.
DTypeLike: TypeAlias = "str | np.dtype[Any] | type[np.generic]"

#: dtype name -> (kernel suffix, bytes per element).
DTYPES: dict[str, tuple[str, int]] = {"float32": ("f32", 4), "float16": ("f16", 2)}
#: Operation names -> the op codes the kernels switch on (ffi/kernels/*.c).
UNARY_OPS = {
    "relu": 0,
    "gelu": 1,
    "sigmoid": 2,
    "tanh": 3,
    "exp": 4,
    "log": 5,
    "sqrt": 6,
    "neg": 7,
}
BINARY_OPS = {"add": 0, "sub": 1, "mul": 2, "div": 3, "max": 4, "min": 5}
REDUCE_OPS = {"sum": 0, "max": 1, "min": 2, "mean": 3}

_BLOCK = 256
# The kernels loop grid-stride, so any size fits a capped grid.
_MAX_GRID = 65535
_F32_MAX = float(np.finfo(np.float32).max)


# ---------------------------------------------------------------- validation
def _dtype(dtype: object, fn: str) -> tuple[str, int]:
    if isinstance(dtype, np.dtype):
        name = dtype.name
    elif isinstance(dtype, type) and issubclass(dtype, np.generic):
        name = np.dtype(dtype).name
    elif isinstance(dtype, str):
        name = dtype
    else:
        raise TypeError(f"{fn}: dtype must be a str such as 'float32', got {type(dtype).__name__}")
    found = DTYPES.get(name)
    if found is None:
        raise InvalidArgumentError(
            f"{fn}: dtype {name!r} is not supported (supported: {', '.join(DTYPES)})"
        )
    return found


def _real(value: object, fn: str, what: str) -> float:
    """A real scalar that a float32 kernel argument can hold."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(
        value, (int, float, np.integer, np.floating)
    ):
        raise TypeError(f"{fn}: {what} must be a real number, got {type(value).__name__}")
    x = float(value)
    if math.isfinite(x) and abs(x) > _F32_MAX:
        raise InvalidArgumentError(f"{fn}: {what} = {x} overflows float32")
    return x


def _flag(value: object, fn: str, what: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{fn}: {what} must be a bool, got {type(value).__name__}")
    return bool(value)


def _op_name(value: object, table: dict[str, int], fn: str) -> int:
    if not isinstance(value, str):
        raise TypeError(f"{fn}: op must be a str, got {type(value).__name__}")
    code = table.get(value)
    if code is None:
        raise InvalidArgumentError(f"{fn}: unknown op {value!r} (one of: {', '.join(table)})")
    return code


def _shape(
    value: object, fn: str, what: str, rank: int | None, minimum: int = 1
) -> tuple[int, ...]:
    if not isinstance(value, (tuple, list)):
        raise TypeError(f"{fn}: {what} must be a tuple of ints, got {type(value).__name__}")
    if rank is not None and len(value) != rank:
        raise InvalidArgumentError(f"{fn}: {what} must have rank {rank}, got {len(value)}")
    return tuple(check_count(d, fn, f"{what}[{i}]", minimum=minimum) for i, d in enumerate(value))


def _stored_elements(rows: int, cols: int, ld: int) -> int:
    """Elements a column-major rows x cols matrix with leading dimension ld spans."""
    return (cols - 1) * ld + rows if rows and cols else 0


def _overlaps(a: DevicePtr, a_bytes: int, b: DevicePtr, b_bytes: int) -> bool:
    if not a_bytes or not b_bytes:
        return False
    return a.address < b.address + b_bytes and b.address < a.address + a_bytes


class ComputeOps:
    """The compute operations of :class:`aruntime.Backend` (see the module docstring)."""

    __slots__ = ()

    # What the class that mixes this in provides (aruntime.Backend).
    _state: BackendState
    _objects: Objects

    if TYPE_CHECKING:

        def launch(
            self,
            kernel: Kernel,
            grid: int | tuple[int, ...],
            block: int | tuple[int, ...],
            args: list[Any] | tuple[Any, ...],
            *,
            shared_mem: int = 0,
            stream: Stream | None = None,
            reads: tuple[Any, ...] | list[Any] | None = None,
            writes: tuple[Any, ...] | list[Any] | None = None,
        ) -> Completion: ...

        def kernel(self, module: Module | str, func_name: str) -> Kernel: ...

        def builtin_module(self, name: str = "vector_ops") -> Module: ...

    def _check_operands(
        self,
        fn: str,
        out: tuple[str, object, int],
        inputs: Sequence[tuple[str, object, int]],
        *,
        itemsize: int,
        in_place: bool = False,
    ) -> None:
        """Every operand live, big enough and aligned; the output overlapping no input.

        Each operand the op touches must be aligned to ``itemsize``, the
        dtype's size: a GPU faults on a misaligned load (CUDA's
        MISALIGNED_ADDRESS loses the device), so every backend refuses it here,
        at the call.  ``in_place`` allows an output that is exactly an input
        (element-wise ops).
        """
        ledger = self._state.ledger
        for what, ptr, nbytes in (out, *inputs):
            ledger.check_range(ptr, nbytes, fn, what)
            assert isinstance(ptr, DevicePtr)  # check_range said so
            if nbytes and ptr.address % itemsize:
                raise InvalidArgumentError(
                    f"{fn}: {what} at 0x{ptr.address:x} is not aligned to {itemsize} bytes "
                    f"(it is {ptr.address % itemsize} past a multiple of {itemsize}); each "
                    f"operand must start on a multiple of its dtype's size, {itemsize} bytes"
                )
        out_name, o, out_bytes = out
        for what, p, nbytes in inputs:
            assert isinstance(o, DevicePtr) and isinstance(p, DevicePtr)  # check_range said so
            if in_place and o.address == p.address:
                continue
            if _overlaps(o, out_bytes, p, nbytes):
                raise InvalidArgumentError(
                    f"{fn}: {out_name} overlaps {what}"
                    + ("; pass the same pointer to work in place" if in_place else "")
                )

    def _compute_kernel(self, module: str, name: str) -> Kernel:
        cache: dict[tuple[str, str], Kernel] = self.__dict__.setdefault("_compute_kernels", {})
        kernel = cache.get((module, name))
        if kernel is None:
            kernel = self.kernel(self.builtin_module(module), name)
            cache[(module, name)] = kernel
        return kernel

    def _run(
        self,
        module: str,
        suffix: str,
        total: int,
        args: list[Any],
        stream: Stream | None,
        out: DevicePtr,
    ) -> Completion:
        """Launch ``module``'s kernel; it writes ``out`` and only reads its other pointers."""
        kernel = self._compute_kernel(module, f"{module}_{suffix}")
        grid = max(1, min(-(-total // _BLOCK), _MAX_GRID))
        pointers = [a for a in args if isinstance(a, DevicePtr)]
        return self.launch(kernel, grid, _BLOCK, args, stream=stream, reads=pointers, writes=(out,))

    # ------------------------------------------------------------------- gemm
    def gemm(
        self,
        a: DevicePtr,
        b: DevicePtr,
        c: DevicePtr,
        m: int,
        n: int,
        k: int,
        *,
        lda: int | None = None,
        ldb: int | None = None,
        ldc: int | None = None,
        trans_a: bool = False,
        trans_b: bool = False,
        alpha: float = 1.0,
        beta: float = 0.0,
        dtype: DTypeLike = "float32",
        stream: Stream | None = None,
    ) -> Completion:
        """Enqueue ``C = alpha * op(A) @ op(B) + beta * C`` (BLAS gemm, column-major).

        ``op(A)`` is m x k (A is stored m x k, or k x m with ``trans_a``),
        ``op(B)`` is k x n (stored k x n, or n x k with ``trans_b``), C is
        m x n.  Element (i, j) of a stored matrix X is ``X[i + j * ldx]``; each
        leading dimension defaults to its stored matrix's row count and must be
        at least that (and at least 1).  Each operand must hold
        ``((cols - 1) * ld + rows)`` elements.  C must not overlap A or B.

        BLAS semantics for the edge cases: m == 0 or n == 0 is a no-op (a
        Completion that is already done); k == 0 (or alpha == 0) gives
        ``C = beta * C`` without reading A or B, a no-op when beta == 1; beta
        == 0 never reads C, so NaN in C does not survive.

        Raises TypeError for wrong argument types and InvalidArgumentError for
        negative sizes, short leading dimensions, out-of-range or overlapping
        operands or an unsupported dtype, all before anything is enqueued.
        ``await`` returns None; cancelling it abandons the wait only.
        """
        fn = "gemm"
        self._state.check_open(fn)
        suffix, size = _dtype(dtype, fn)
        m_, n_, k_ = (check_count(v, fn, w) for v, w in ((m, "m"), (n, "n"), (k, "k")))
        ta, tb = _flag(trans_a, fn, "trans_a"), _flag(trans_b, fn, "trans_b")
        al, be = _real(alpha, fn, "alpha"), _real(beta, fn, "beta")
        a_rows, a_cols = (k_, m_) if ta else (m_, k_)
        b_rows, b_cols = (n_, k_) if tb else (k_, n_)
        lds = []
        for what, ld, rows in (("lda", lda, a_rows), ("ldb", ldb, b_rows), ("ldc", ldc, m_)):
            need = max(1, rows)
            if ld is None:
                lds.append(need)
                continue
            value = check_count(ld, fn, what)
            if value < need:
                raise InvalidArgumentError(f"{fn}: {what} = {value} must be >= {need}")
            lds.append(value)
        lda_, ldb_, ldc_ = lds
        reads_ab = k_ > 0 and al != 0.0
        a_bytes = _stored_elements(a_rows, a_cols, lda_) * size if reads_ab else 0
        b_bytes = _stored_elements(b_rows, b_cols, ldb_) * size if reads_ab else 0
        c_bytes = _stored_elements(m_, n_, ldc_) * size
        self._check_operands(
            fn, ("c", c, c_bytes), (("a", a, a_bytes), ("b", b, b_bytes)), itemsize=size
        )
        if m_ == 0 or n_ == 0 or (not reads_ab and be == 1.0):
            return self._objects.resolve(stream, fn).no_op(fn, None)
        args: list[Any] = [
            np.uint64(m_),
            np.uint64(n_),
            np.uint64(k_),
            np.float32(al),
            a,
            np.uint64(lda_),
            b,
            np.uint64(ldb_),
            np.float32(be),
            c,
            np.uint64(ldc_),
            np.uint32(ta),
            np.uint32(tb),
        ]
        return self._run("gemm", suffix, m_ * n_, args, stream, c)

    # ----------------------------------------------------------------- conv2d
    def conv2d_forward(
        self,
        x: DevicePtr,
        w: DevicePtr,
        y: DevicePtr,
        x_shape: Sequence[int],
        w_shape: Sequence[int],
        y_shape: Sequence[int],
        *,
        stride: Sequence[int] = (1, 1),
        padding: Sequence[int] = (0, 0),
        dtype: DTypeLike = "float32",
        stream: Stream | None = None,
    ) -> Completion:
        """Enqueue a 2D convolution (cross-correlation, as cuDNN and PyTorch).

        x is NCHW ``x_shape = (N, C, H, W)``, w is KCRS ``w_shape = (K, C, R,
        S)``, y is NKPQ ``y_shape = (N, K, P, Q)``, all packed.  ``stride =
        (sh, sw)`` (each >= 1) and ``padding = (ph, pw)`` (each >= 0, zeros)
        must have rank 2, the shapes rank 4 with every dimension >= 1, and y's
        shape must be the consistent one: ``P = (H + 2 ph - R) // sh + 1``,
        ``Q = (W + 2 pw - S) // sw + 1``.  No dilation or groups.  y must not
        overlap x or w.

        Raises TypeError for wrong types and InvalidArgumentError for bad
        ranks, dimensions, inconsistent shapes or operands out of range, all
        before anything is enqueued.  ``await`` returns None; cancelling it
        abandons the wait only.
        """
        fn = "conv2d_forward"
        self._state.check_open(fn)
        suffix, size = _dtype(dtype, fn)
        nb, c, h, wd = _shape(x_shape, fn, "x_shape", 4)
        kf, wc, r, s = _shape(w_shape, fn, "w_shape", 4)
        yn, yk, p, q = _shape(y_shape, fn, "y_shape", 4)
        sh, sw = _shape(stride, fn, "stride", 2)
        ph, pw = _shape(padding, fn, "padding", 2, minimum=0)
        if wc != c:
            raise InvalidArgumentError(f"{fn}: w_shape has {wc} channels, x_shape {c}")
        padded_h, padded_w = h + 2 * ph, wd + 2 * pw
        if r > padded_h or s > padded_w:
            raise InvalidArgumentError(
                f"{fn}: the {r}x{s} filter is larger than the padded {padded_h}x{padded_w} input"
            )
        want = (nb, kf, (h + 2 * ph - r) // sh + 1, (wd + 2 * pw - s) // sw + 1)
        if (yn, yk, p, q) != want:
            raise InvalidArgumentError(f"{fn}: y_shape must be {want}, got {(yn, yk, p, q)}")
        if max(sh, sw, ph, pw) >= 2**32:
            raise InvalidArgumentError(f"{fn}: stride and padding must be below 2**32")
        self._check_operands(
            fn,
            ("y", y, math.prod(want) * size),
            (("x", x, nb * c * h * wd * size), ("w", w, kf * c * r * s * size)),
            itemsize=size,
        )
        args: list[Any] = [
            *(np.uint64(v) for v in (nb, c, h, wd, kf, r, s, p, q)),
            *(np.uint32(v) for v in (sh, sw, ph, pw)),
            x,
            w,
            y,
        ]
        return self._run("conv2d", suffix, math.prod(want), args, stream, y)

    # -------------------------------------------------------------- attention
    def attention(
        self,
        q: DevicePtr,
        k: DevicePtr,
        v: DevicePtr,
        out: DevicePtr,
        batch: int,
        heads: int,
        seq_q: int,
        seq_k: int,
        head_dim: int,
        *,
        scale: float,
        causal: bool = False,
        dtype: DTypeLike = "float32",
        stream: Stream | None = None,
    ) -> Completion:
        """Enqueue ``out = softmax(scale * q @ k^T) @ v`` per batch and head.

        q and out are ``[batch, heads, seq_q, head_dim]``, k and v ``[batch,
        heads, seq_k, head_dim]``, packed.  Every size must be >= 1 and
        ``scale`` positive and finite (usually ``head_dim ** -0.5``).
        ``causal=True`` masks key j > query i, top-left aligned as
        ``torch.nn.functional.scaled_dot_product_attention(is_causal=True)``,
        so every query row attends at least to key 0.  out must not overlap
        q, k or v.

        Raises TypeError for wrong types and InvalidArgumentError for
        non-positive sizes, a bad scale or operands out of range, all before
        anything is enqueued.  ``await`` returns None; cancelling it abandons
        the wait only.
        """
        fn = "attention"
        self._state.check_open(fn)
        suffix, size = _dtype(dtype, fn)
        b_, h_, sq, sk, d = (
            check_count(val, fn, what, minimum=1)
            for val, what in (
                (batch, "batch"),
                (heads, "heads"),
                (seq_q, "seq_q"),
                (seq_k, "seq_k"),
                (head_dim, "head_dim"),
            )
        )
        sc = _real(scale, fn, "scale")
        if not (math.isfinite(sc) and sc > 0.0):
            raise InvalidArgumentError(f"{fn}: scale must be positive and finite, got {sc}")
        cz = _flag(causal, fn, "causal")
        q_bytes = b_ * h_ * sq * d * size
        kv_bytes = b_ * h_ * sk * d * size
        self._check_operands(
            fn,
            ("out", out, q_bytes),
            (("q", q, q_bytes), ("k", k, kv_bytes), ("v", v, kv_bytes)),
            itemsize=size,
        )
        args: list[Any] = [
            np.uint64(b_ * h_),
            np.uint64(sq),
            np.uint64(sk),
            np.uint64(d),
            np.float32(sc),
            np.uint32(cz),
            q,
            k,
            v,
            out,
        ]
        return self._run("attention", suffix, b_ * h_ * sq, args, stream, out)

    # ----------------------------------------------------------------- reduce
    def reduce(
        self,
        x: DevicePtr,
        y: DevicePtr,
        shape: Sequence[int],
        axis: int,
        op: str,
        *,
        dtype: DTypeLike = "float32",
        stream: Stream | None = None,
    ) -> Completion:
        """Enqueue ``y = op(x, axis)`` for a packed row-major x of ``shape``.

        ``op`` is ``"sum"``, ``"max"``, ``"min"`` or ``"mean"``; ``shape`` has
        rank >= 1 and every dimension >= 1; ``axis`` is in ``-rank..rank-1``
        (negative counts from the end, as numpy).  y receives the packed
        result, shape ``shape`` without ``axis``.  max and min propagate NaN
        as numpy does; sum and mean use compensated summation.  y must not
        overlap x.

        Raises TypeError for wrong types and InvalidArgumentError for a bad
        shape, an axis out of range, an unknown op or operands out of range,
        all before anything is enqueued.  ``await`` returns None; cancelling
        it abandons the wait only.
        """
        fn = "reduce"
        self._state.check_open(fn)
        suffix, size = _dtype(dtype, fn)
        dims = _shape(shape, fn, "shape", None)
        if not dims:
            raise InvalidArgumentError(f"{fn}: shape must have at least one dimension")
        if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, (int, np.integer)):
            raise TypeError(f"{fn}: axis must be an int, got {type(axis).__name__}")
        rank = len(dims)
        if not -rank <= int(axis) < rank:
            raise InvalidArgumentError(
                f"{fn}: axis {int(axis)} is out of range for rank {rank} (-{rank}..{rank - 1})"
            )
        ax = int(axis) % rank
        code = _op_name(op, REDUCE_OPS, fn)
        outer, length, inner = math.prod(dims[:ax]), dims[ax], math.prod(dims[ax + 1 :])
        total = math.prod(dims)
        self._check_operands(
            fn, ("y", y, outer * inner * size), (("x", x, total * size),), itemsize=size
        )
        args: list[Any] = [np.uint64(outer), np.uint64(length), np.uint64(inner), np.uint32(code)]
        return self._run("reduce", suffix, outer * inner, [*args, x, y], stream, y)

    # ----------------------------------------------------------- element-wise
    def unary(
        self,
        x: DevicePtr,
        y: DevicePtr,
        n: int,
        op: str,
        *,
        dtype: DTypeLike = "float32",
        stream: Stream | None = None,
    ) -> Completion:
        """Enqueue ``y[i] = op(x[i])`` for ``n`` elements (n == 0 is a no-op).

        ``op`` is one of ``relu``, ``gelu`` (the tanh approximation, as
        ``torch.nn.functional.gelu(approximate="tanh")``), ``sigmoid``,
        ``tanh``, ``exp``, ``log``, ``sqrt``, ``neg``.  y may be x itself (in
        place) but must not partly overlap it.

        Raises TypeError for wrong types and InvalidArgumentError for an
        unknown op, a negative n or operands out of range, all before anything
        is enqueued.  ``await`` returns None; cancelling it abandons the wait
        only.
        """
        fn = "unary"
        self._state.check_open(fn)
        suffix, size = _dtype(dtype, fn)
        count = check_count(n, fn, "n")
        code = _op_name(op, UNARY_OPS, fn)
        nbytes = count * size
        self._check_operands(
            fn, ("y", y, nbytes), (("x", x, nbytes),), itemsize=size, in_place=True
        )
        if count == 0:
            return self._objects.resolve(stream, fn).no_op(fn, None)
        args: list[Any] = [np.uint64(count), np.uint32(code), x, y]
        return self._run("unary", suffix, count, args, stream, y)

    def binary(
        self,
        a: DevicePtr,
        b: DevicePtr,
        out: DevicePtr,
        n: int,
        op: str,
        *,
        dtype: DTypeLike = "float32",
        stream: Stream | None = None,
    ) -> Completion:
        """Enqueue ``out[i] = op(a[i], b[i])`` for ``n`` elements (n == 0 is a no-op).

        ``op`` is one of ``add``, ``sub``, ``mul``, ``div``, ``max``, ``min``
        (max and min propagate NaN, as numpy's maximum and minimum).  out may
        be a or b itself (in place) but must not partly overlap either.

        Raises TypeError for wrong types and InvalidArgumentError for an
        unknown op, a negative n or operands out of range, all before anything
        is enqueued.  ``await`` returns None; cancelling it abandons the wait
        only.
        """
        fn = "binary"
        self._state.check_open(fn)
        suffix, size = _dtype(dtype, fn)
        count = check_count(n, fn, "n")
        code = _op_name(op, BINARY_OPS, fn)
        nbytes = count * size
        self._check_operands(
            fn,
            ("out", out, nbytes),
            (("a", a, nbytes), ("b", b, nbytes)),
            itemsize=size,
            in_place=True,
        )
        if count == 0:
            return self._objects.resolve(stream, fn).no_op(fn, None)
        args: list[Any] = [np.uint64(count), np.uint32(code), a, b, out]
        return self._run("binary", suffix, count, args, stream, out)
