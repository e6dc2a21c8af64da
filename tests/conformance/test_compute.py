"""The compute operations against numpy, on every backend.

Each op runs on every backend the ``backend`` fixture opens here (mock, the
threaded mock, cuda-sim, levelzero-sim; cuda and levelzero on real devices)
and is compared with a float64 numpy reference.  Bad arguments are covered in
tests/test_compute_validation.py.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

import anyio
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import aruntime as ar
from aruntime._compute import BINARY_OPS, REDUCE_OPS, UNARY_OPS
from aruntime._compute import DTYPES as DTYPE_SUFFIXES


@dataclass(frozen=True)
class Tolerance:
    """Allowed error, elementwise: |got - want| <= rtol * magnitude + atol.

    ``magnitude`` is what rounding errors scale with: |want| for element-wise
    ops, and the sum of the absolute values of the terms for the ops that
    accumulate (gemm, conv2d, sum/mean, and attention's weighted sum of v).
    """

    rtol: float
    atol: float


#: The one place tolerances are stated.  Both dtypes compute in float32:
#: naive float32 accumulation over a few hundred terms stays well inside 3e-5
#: of the magnitude (devices may use FMA and 2-ulp expf); float16 adds the
#: rounding of the stored result, half an ulp (2**-11 relative) or 2**-25
#: absolute for subnormals.  Reference inputs are the values after rounding to
#: the dtype, so input rounding is not counted.
TOLERANCES = {
    "float32": Tolerance(rtol=3e-5, atol=1e-6),
    "float16": Tolerance(rtol=1e-3, atol=1e-6),
}
DTYPES = list(TOLERANCES)

SETTINGS = settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def assert_close(
    got: np.ndarray, want: np.ndarray, magnitude: np.ndarray | None = None, dtype: str = "float32"
) -> None:
    tol = TOLERANCES[dtype]
    want = np.asarray(want, np.float64)
    mag = np.abs(want) if magnitude is None else np.asarray(magnitude, np.float64)
    bound = tol.rtol * mag + tol.atol
    err = np.abs(got.astype(np.float64) - want)
    bad = ~(err <= bound) & ~(np.isnan(got) & np.isnan(want))
    if bad.any():
        i = np.flatnonzero(bad)[0]
        raise AssertionError(
            f"{int(bad.sum())} of {bad.size} elements off; first at flat index {i}: "
            f"got {got.flat[i]!r}, want {want.flat[i]!r}, bound {bound.flat[i]!r}"
        )


class Device:
    """Moves arrays of one dtype to and from a backend, and frees what it allocated.

    Host-side values are float32 arrays; ``cast`` rounds them to the dtype, so
    references are computed from exactly what the device sees.
    """

    def __init__(self, backend: ar.Backend, dtype: str = "float32") -> None:
        self.backend = backend
        self.dtype = dtype
        self.np_dtype = np.dtype(dtype)
        self.ptrs: list[ar.DevicePtr] = []

    def cast(self, array: np.ndarray) -> np.ndarray:
        return np.asarray(array).astype(self.np_dtype).astype(np.float32)

    def put(self, array: np.ndarray) -> ar.DevicePtr:
        data = np.ascontiguousarray(array, dtype=self.np_dtype).reshape(-1)
        ptr = self.empty(data.size)
        if data.size:
            self.backend.copy_h2d(data, ptr)
        return ptr

    def empty(self, count: int, fill: float = np.nan) -> ar.DevicePtr:
        """``count`` elements (at least one allocated), set to ``fill``."""
        size = self.np_dtype.itemsize
        ptr = self.backend.alloc(max(count, 1) * size)
        self.ptrs.append(ptr)
        self.backend.copy_h2d(np.full(max(count, 1), fill, self.np_dtype), ptr)
        return ptr[: count * size] if count else ptr

    def get(self, ptr: ar.DevicePtr, shape: tuple[int, ...]) -> np.ndarray:
        out = np.empty(shape, self.np_dtype)
        if out.size:
            self.backend.copy_d2h(ptr[: out.nbytes], out)
        return out.astype(np.float32)

    def free(self) -> None:
        for ptr in self.ptrs:
            self.backend.free(ptr)
        self.ptrs.clear()


@pytest.fixture(params=DTYPES)
def dev(backend: ar.Backend, request: pytest.FixtureRequest) -> Iterator[Device]:
    device = Device(backend, request.param)
    yield device
    device.free()


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def _uniform(rng: np.random.Generator, shape: tuple[int, ...], lo: float = -1.0, hi: float = 1.0):
    return rng.uniform(lo, hi, shape).astype(np.float32)


# ---------------------------------------------------------------------- gemm
def _stored(matrix: np.ndarray, ld: int) -> np.ndarray:
    """Column-major storage of ``matrix`` with leading dimension ``ld`` (NaN padding)."""
    rows, cols = matrix.shape
    storage = np.full((cols, ld), np.nan, np.float32)
    storage[:, :rows] = matrix.T
    span = (cols - 1) * ld + rows if rows and cols else 0
    return storage.reshape(-1)[:span]


def _unstored(flat: np.ndarray, rows: int, cols: int, ld: int) -> np.ndarray:
    storage = np.full(cols * ld, np.nan, np.float32)
    storage[: flat.size] = flat
    return storage.reshape(cols, ld)[:, :rows].T


def run_gemm(
    dev: Device,
    m: int,
    n: int,
    k: int,
    *,
    trans_a: bool,
    trans_b: bool,
    pads: tuple[int, int, int] = (0, 0, 0),
    alpha: float = 1.0,
    beta: float = 0.0,
    seed: int = 0,
) -> None:
    rng = _rng(seed)
    a_shape = (k, m) if trans_a else (m, k)
    b_shape = (n, k) if trans_b else (k, n)
    a, b, c0 = (dev.cast(_uniform(rng, shape)) for shape in (a_shape, b_shape, (m, n)))
    lda, ldb, ldc = (
        max(1, rows) + pad for rows, pad in zip((a_shape[0], b_shape[0], m), pads, strict=True)
    )
    c_flat = _stored(c0, ldc)
    pa, pb, pc = dev.put(_stored(a, lda)), dev.put(_stored(b, ldb)), dev.put(c_flat)
    dev.backend.gemm(
        pa, pb, pc, m, n, k, lda=lda, ldb=ldb, ldc=ldc, trans_a=trans_a, trans_b=trans_b,
        alpha=alpha, beta=beta, dtype=dev.dtype,
    ).wait()  # fmt: skip
    got = _unstored(dev.get(pc, (c_flat.size,)), m, n, ldc)
    op_a = (a.T if trans_a else a).astype(np.float64)
    op_b = (b.T if trans_b else b).astype(np.float64)
    want = alpha * (op_a @ op_b)
    magnitude = abs(alpha) * (np.abs(op_a) @ np.abs(op_b))
    if beta != 0.0:
        want = want + beta * c0
        magnitude = magnitude + abs(beta) * np.abs(c0)
    assert_close(got, want, magnitude, dev.dtype)
    # The padding between columns of C is never written.
    if m and n and ldc > m:
        assert np.isnan(dev.get(pc, (c_flat.size,))[m:ldc]).all()


@given(
    m=st.integers(0, 37),
    n=st.integers(0, 29),
    k=st.integers(0, 41),
    trans_a=st.booleans(),
    trans_b=st.booleans(),
    pads=st.tuples(st.integers(0, 3), st.integers(0, 3), st.integers(0, 3)),
    alpha=st.sampled_from([1.0, -0.5, 2.0]),
    beta=st.sampled_from([0.0, 1.0, 0.25]),
    seed=st.integers(0, 2**32 - 1),
)
@SETTINGS
def test_gemm_matches_numpy(dev: Device, **kw: object) -> None:
    run_gemm(dev, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize("trans_a", [False, True])
@pytest.mark.parametrize("trans_b", [False, True])
def test_gemm_transposes_past_one_block(dev: Device, trans_a: bool, trans_b: bool) -> None:
    # 300 x 7 = 2100 outputs: several 256-thread blocks, the last one partial.
    run_gemm(dev, 300, 7, 19, trans_a=trans_a, trans_b=trans_b, pads=(1, 2, 3), seed=5)


def test_gemm_zero_dimensions(dev: Device) -> None:
    c0 = np.arange(6, dtype=np.float32)
    pa, pb, pc = dev.put(np.ones(6)), dev.put(np.ones(6)), dev.put(c0)
    backend = dev.backend
    for m, n in ((0, 3), (2, 0), (0, 0)):
        done = backend.gemm(pa, pb, pc, m, n, 2, beta=3.0, dtype=dev.dtype)
        assert done.done()
        done.wait()
    np.testing.assert_array_equal(dev.get(pc, (6,)), c0)
    # k == 0 follows BLAS: C = beta * C (A and B unread), and beta == 1 is a no-op.
    assert backend.gemm(pa, pb, pc, 2, 3, 0, beta=1.0, dtype=dev.dtype).done()
    np.testing.assert_array_equal(dev.get(pc, (6,)), c0)
    backend.gemm(pa, pb, pc, 2, 3, 0, beta=0.5, dtype=dev.dtype).wait()
    np.testing.assert_array_equal(dev.get(pc, (6,)), c0 * 0.5)
    backend.gemm(pa, pb, pc, 2, 3, 0, beta=0.0, dtype=dev.dtype).wait()
    np.testing.assert_array_equal(dev.get(pc, (6,)), np.zeros(6))


def test_gemm_beta_zero_does_not_read_c(dev: Device) -> None:
    pa, pb = dev.put(np.ones(4)), dev.put(np.ones(4))
    pc = dev.empty(4)  # NaN
    dev.backend.gemm(pa, pb, pc, 2, 2, 2, dtype=dev.dtype).wait()
    np.testing.assert_array_equal(dev.get(pc, (4,)), np.full(4, 2.0))


# -------------------------------------------------------------------- conv2d
def conv2d_reference(
    x: np.ndarray, w: np.ndarray, stride: tuple[int, int], padding: tuple[int, int]
) -> tuple[np.ndarray, np.ndarray]:
    """(y, magnitude) in float64, by explicit windows."""
    (ph, pw), (sh, sw) = padding, stride
    nb, _, h, wd = x.shape
    kf, _, r, s = w.shape
    p, q = (h + 2 * ph - r) // sh + 1, (wd + 2 * pw - s) // sw + 1
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    y = np.zeros((nb, kf, p, q))
    mag = np.zeros((nb, kf, p, q))
    w64 = w.astype(np.float64)
    for i in range(p):
        for j in range(q):
            window = xp[:, :, i * sh : i * sh + r, j * sw : j * sw + s]
            y[:, :, i, j] = np.einsum("ncrs,kcrs->nk", window, w64)
            mag[:, :, i, j] = np.einsum("ncrs,kcrs->nk", np.abs(window), np.abs(w64))
    return y, mag


@st.composite
def conv_cases(draw: st.DrawFn) -> dict[str, object]:
    sh, sw, ph, pw = (draw(st.integers(lo, hi)) for lo, hi in ((1, 3), (1, 3), (0, 2), (0, 2)))
    h, wd = draw(st.integers(1, 11)), draw(st.integers(1, 11))
    r = draw(st.integers(1, h + 2 * ph))
    s = draw(st.integers(1, wd + 2 * pw))
    return {
        "x_shape": (draw(st.integers(1, 2)), draw(st.integers(1, 3)), h, wd),
        "k": draw(st.integers(1, 4)),
        "rs": (min(r, 5), min(s, 5)),
        "stride": (sh, sw),
        "padding": (ph, pw),
        "seed": draw(st.integers(0, 2**32 - 1)),
    }


def run_conv2d(dev: Device, x_shape, k, rs, stride, padding, seed) -> None:  # type: ignore[no-untyped-def]
    rng = _rng(seed)
    w_shape = (k, x_shape[1], *rs)
    x, w = dev.cast(_uniform(rng, x_shape)), dev.cast(_uniform(rng, w_shape))
    want, mag = conv2d_reference(x, w, stride, padding)
    px, pw_, py = dev.put(x), dev.put(w), dev.empty(want.size)
    dev.backend.conv2d_forward(
        px, pw_, py, x_shape, w_shape, want.shape, stride=stride, padding=padding,
        dtype=dev.dtype,
    ).wait()  # fmt: skip
    assert_close(dev.get(py, want.shape), want, mag, dev.dtype)


@given(case=conv_cases())
@SETTINGS
def test_conv2d_matches_numpy(dev: Device, case: dict[str, object]) -> None:
    run_conv2d(dev, **case)


def test_conv2d_many_blocks(dev: Device) -> None:
    run_conv2d(dev, (2, 3, 17, 13), 5, (3, 3), (1, 2), (1, 1), seed=9)


# ----------------------------------------------------------------- attention
def attention_reference(
    q: np.ndarray, k: np.ndarray, v: np.ndarray, scale: float, causal: bool
) -> tuple[np.ndarray, np.ndarray]:
    q64, k64, v64 = (t.astype(np.float64) for t in (q, k, v))
    scores = np.einsum("bhid,bhjd->bhij", q64, k64) * scale
    if causal:
        sq, sk = scores.shape[-2:]
        scores = np.where(np.triu(np.ones((sq, sk), bool), 1), -np.inf, scores)
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights /= weights.sum(axis=-1, keepdims=True)
    return weights @ v64, weights @ np.abs(v64)


def run_attention(dev: Device, b, h, sq, sk, d, causal, seed, scale=None) -> None:  # type: ignore[no-untyped-def]
    rng = _rng(seed)
    q = dev.cast(_uniform(rng, (b, h, sq, d)))
    k, v = dev.cast(_uniform(rng, (b, h, sk, d))), dev.cast(_uniform(rng, (b, h, sk, d)))
    scale = d**-0.5 if scale is None else scale
    want, mag = attention_reference(q, k, v, scale, causal)
    pq, pk, pv, po = dev.put(q), dev.put(k), dev.put(v), dev.empty(q.size)
    dev.backend.attention(
        pq, pk, pv, po, b, h, sq, sk, d, scale=scale, causal=causal, dtype=dev.dtype
    ).wait()
    assert_close(dev.get(po, q.shape), want, mag, dev.dtype)


@given(
    b=st.integers(1, 2),
    h=st.integers(1, 3),
    sq=st.integers(1, 19),
    sk=st.integers(1, 23),
    d=st.integers(1, 17),
    causal=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
@SETTINGS
def test_attention_matches_numpy(dev: Device, **kw: object) -> None:
    run_attention(dev, **kw)


@pytest.mark.parametrize("causal", [False, True])
def test_attention_many_rows(dev: Device, causal: bool) -> None:
    # 2 * 4 * 70 = 560 query rows: three blocks; large scores exercise the
    # running-maximum rescaling.
    run_attention(dev, 2, 4, 70, 45, 24, causal, seed=3, scale=1.5)


# -------------------------------------------------------------------- reduce
REDUCERS = {"sum": np.sum, "max": np.max, "min": np.min, "mean": np.mean}


def run_reduce(dev: Device, shape: tuple[int, ...], seed: int) -> None:
    x = dev.cast(_uniform(_rng(seed), shape))
    px = dev.put(x)
    for axis in range(-len(shape), len(shape)):
        out_shape = shape[: axis % len(shape)] + shape[axis % len(shape) + 1 :]
        py = dev.empty(math.prod(out_shape))
        for op in REDUCE_OPS:
            dev.backend.reduce(px, py, shape, axis, op, dtype=dev.dtype).wait()
            want = REDUCERS[op](x.astype(np.float64), axis=axis)
            if op in ("sum", "mean"):
                mag = REDUCERS[op](np.abs(x.astype(np.float64)), axis=axis)
                assert_close(dev.get(py, out_shape), want, mag, dev.dtype)
            else:  # max and min are exact
                np.testing.assert_array_equal(dev.get(py, out_shape), want.astype(np.float32))


@given(
    shape=st.lists(st.integers(1, 9), min_size=1, max_size=4).map(tuple),
    seed=st.integers(0, 2**32 - 1),
)
@SETTINGS
def test_reduce_every_op_and_axis(dev: Device, shape: tuple[int, ...], seed: int) -> None:
    run_reduce(dev, shape, seed)


def test_reduce_long_axes(dev: Device) -> None:
    run_reduce(dev, (3, 1000, 2), seed=1)
    run_reduce(dev, (300, 5), seed=2)


def test_reduce_propagates_nan(dev: Device) -> None:
    x = np.array([[1.0, np.nan, 3.0], [4.0, 5.0, 6.0]], np.float32)
    px, py = dev.put(x), dev.empty(2)
    for op in ("max", "min", "sum"):
        dev.backend.reduce(px, py, (2, 3), 1, op, dtype=dev.dtype).wait()
        got = dev.get(py, (2,))
        assert np.isnan(got[0]) and not np.isnan(got[1])


# -------------------------------------------------------------- element-wise
def _unary_input(op: str, rng: np.random.Generator, n: int) -> np.ndarray:
    if op in ("log", "sqrt"):
        return _uniform(rng, (n,), 0.01, 10.0)
    if op == "exp":
        return _uniform(rng, (n,), -10.0, 10.0)
    return _uniform(rng, (n,), -6.0, 6.0)


def unary_reference(op: str, x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    if op == "relu":
        return np.maximum(x, 0.0)
    if op == "gelu":  # the tanh approximation
        return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x**3)))
    if op == "sigmoid":
        return 1.0 / (1.0 + np.exp(-x))
    if op == "neg":
        return -x
    return getattr(np, op)(x)  # type: ignore[no-any-return]


BINARY_REFERENCE = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": np.divide,
    "max": np.maximum,
    "min": np.minimum,
}

# Odd sizes and ones that straddle the 256-thread block.
SIZES = [1, 3, 255, 256, 257, 1000, 4099]


@pytest.mark.parametrize("op", list(UNARY_OPS))
def test_unary_matches_numpy(dev: Device, op: str) -> None:
    rng = _rng(len(op))
    for n in SIZES:
        x = dev.cast(_unary_input(op, rng, n))
        px, py = dev.put(x), dev.empty(n)
        dev.backend.unary(px, py, n, op, dtype=dev.dtype).wait()
        assert_close(dev.get(py, (n,)), unary_reference(op, x), dtype=dev.dtype)
    # In place, and n == 0 is a no-op.
    dev.backend.unary(px, px, n, op, dtype=dev.dtype).wait()
    assert_close(dev.get(px, (n,)), unary_reference(op, x), dtype=dev.dtype)
    assert dev.backend.unary(px, py, 0, op, dtype=dev.dtype).done()


@pytest.mark.parametrize("op", list(BINARY_OPS))
def test_binary_matches_numpy(dev: Device, op: str) -> None:
    rng = _rng(len(op) + 7)
    for n in SIZES:
        a = dev.cast(_uniform(rng, (n,)))
        b = dev.cast(_uniform(rng, (n,), 0.5, 2.0) * rng.choice([-1, 1], n))
        pa, pb, po = dev.put(a), dev.put(b), dev.empty(n)
        dev.backend.binary(pa, pb, po, n, op, dtype=dev.dtype).wait()
        want = BINARY_REFERENCE[op](a.astype(np.float64), b.astype(np.float64))
        assert_close(dev.get(po, (n,)), want, dtype=dev.dtype)
    dev.backend.binary(pa, pb, pa, n, op, dtype=dev.dtype).wait()  # in place
    assert_close(dev.get(pa, (n,)), want, dtype=dev.dtype)
    assert dev.backend.binary(pa, pb, po, 0, op, dtype=dev.dtype).done()


def test_binary_max_min_propagate_nan(dev: Device) -> None:
    a = np.array([np.nan, 1.0, 2.0], np.float32)
    b = np.array([0.0, np.nan, 1.0], np.float32)
    pa, pb, po = dev.put(a), dev.put(b), dev.empty(3)
    for op, fn in (("max", np.maximum), ("min", np.minimum)):
        dev.backend.binary(pa, pb, po, 3, op, dtype=dev.dtype).wait()
        np.testing.assert_array_equal(dev.get(po, (3,)), fn(a, b))


# -------------------------------------------- streams, awaiting and graphs
@pytest.mark.anyio
async def test_ops_are_awaitable_and_stream_ordered(dev: Device) -> None:
    backend, dt = dev.backend, dev.dtype
    stream = backend.create_stream()
    rng = _rng(11)
    a, b = dev.cast(_uniform(rng, (24, 16))), dev.cast(_uniform(rng, (16, 8)))
    # dev.empty() fills with blocking copies: off the loop, as sync code calls them.
    sizes = (a.size, b.size, 24 * 8, 8)
    pa, pb, pc, pr = await anyio.to_thread.run_sync(lambda: [dev.empty(n) for n in sizes])
    host_out = np.empty(8, dev.np_dtype)
    # Row-major a @ b is column-major b^T a^T: C^T (8 x 24) = B^T (8 x 16) A^T (16 x 24).
    backend.copy_h2d_async(a.astype(dev.np_dtype), pa, stream=stream)
    backend.copy_h2d_async(b.astype(dev.np_dtype), pb, stream=stream)
    backend.gemm(pb, pa, pc, 8, 24, 16, dtype=dt, stream=stream)
    backend.unary(pc, pc, 24 * 8, "relu", dtype=dt, stream=stream)
    backend.reduce(pc, pr, (24, 8), 0, "sum", dtype=dt, stream=stream)
    got = await backend.copy_d2h_async(pr, host_out, stream=stream)
    assert got is host_out
    a64 = a.astype(np.float64)
    # float16 also rounds the gemm's result before the sum: allow it twice.
    magnitude = 2 * (np.abs(a64) @ np.abs(b)).sum(axis=0)
    want = np.maximum(a64 @ b, 0).sum(axis=0)
    assert_close(got.astype(np.float32), want, magnitude, dt)
    assert await backend.binary(pr, pr, pr, 8, "add", dtype=dt, stream=stream) is None
    stream.close()


def test_ops_capture_into_a_graph(dev: Device) -> None:
    backend, dt = dev.backend, dev.dtype
    stream = backend.create_stream()
    x = np.arange(300, dtype=np.float32)
    px, py = dev.put(x), dev.put(np.zeros(300))
    with backend.capture(stream) as graph:
        backend.binary(py, px, py, 300, "add", dtype=dt, stream=stream)
        backend.unary(py, py, 300, "neg", dtype=dt, stream=stream)
    for _ in range(2):
        backend.launch_graph(graph, stream).wait()
    # Each replay sets y = -(y + x): -x after one, 0 after two, -x after three.
    np.testing.assert_array_equal(dev.get(py, (300,)), np.zeros(300, np.float32))
    backend.launch_graph(graph, stream).wait()
    np.testing.assert_array_equal(dev.get(py, (300,)), -x)
    graph.close()
    stream.close()


def test_kernels_loop_grid_stride(backend: ar.Backend, dev: Device) -> None:
    """A grid far smaller than n still covers every element (the ops cap the grid)."""
    n = 1000
    a, b = np.arange(n, dtype=np.float32), np.full(n, 2.0, np.float32)
    pa, pb, po = dev.put(a), dev.put(b), dev.empty(n)
    suffix = DTYPE_SUFFIXES[dev.dtype][0]
    kernel = backend.kernel(backend.builtin_module("binary"), f"binary_{suffix}")
    args = [np.uint64(n), np.uint32(BINARY_OPS["mul"]), pa, pb, po]
    backend.launch(kernel, 1, 32, args).wait()
    np.testing.assert_array_equal(dev.get(po, (n,)), a * b)


def test_float16_conversions_match_numpy(backend: ar.Backend) -> None:
    """The kernels' half <-> float conversions are numpy's, bit for bit.

    Every half value times a few multipliers: the product of two halves is
    exact in float32, so the result is exactly one rounding of a float to half
    (to nearest even, into subnormals, overflowing to infinity).
    """
    every = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
    multipliers = np.array([1.0, -0.5, 0.3333, 3.0, 2.0**-10, 1000.0], np.float16)
    a = np.tile(every, multipliers.size)
    b = np.repeat(multipliers, every.size)
    device = Device(backend, "float16")
    try:
        pa, pb, po = device.put(a), device.put(b), device.empty(a.size)
        backend.binary(pa, pb, po, a.size, "mul", dtype="float16").wait()
        got = np.empty(a.size, np.float16)
        backend.copy_d2h(po[: got.nbytes], got)
    finally:
        device.free()
    with np.errstate(all="ignore"):
        want = (a.astype(np.float32) * b.astype(np.float32)).astype(np.float16)
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan)
    np.testing.assert_array_equal(got[~nan].view(np.uint16), want[~nan].view(np.uint16))


# ------------------------------------------------------------ real devices
@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", ["cuda", "levelzero"])
def test_compute_on_a_real_device(name: str, dtype: str) -> None:
    """Bigger shapes on a real GPU (PTX or SPIR-V builds); skips without one."""
    try:
        backend = ar.open_backend(name)
    except ar.BackendUnavailableError as exc:
        pytest.skip(f"{name} unavailable: {exc}")
    with backend:
        device = Device(backend, dtype)
        try:
            for trans_a, trans_b in ((False, False), (True, False), (False, True), (True, True)):
                run_gemm(
                    device, 257, 131, 67, trans_a=trans_a, trans_b=trans_b, pads=(3, 1, 2),
                    alpha=0.5, beta=2.0, seed=1,
                )  # fmt: skip
            run_conv2d(device, (4, 8, 33, 31), 16, (3, 3), (2, 1), (1, 1), seed=2)
            for causal in (False, True):
                run_attention(device, 2, 8, 128, 96, 64, causal, seed=3)
            run_reduce(device, (17, 130, 9), seed=4)
            for op in UNARY_OPS:
                x = device.cast(_unary_input(op, _rng(5), 100_003))
                px, py = device.put(x), device.empty(x.size)
                backend.unary(px, py, x.size, op, dtype=dtype).wait()
                assert_close(device.get(py, x.shape), unary_reference(op, x), dtype=dtype)
            for op in BINARY_OPS:
                rng = _rng(6)
                a = device.cast(_uniform(rng, (100_003,)))
                b = device.cast(_uniform(rng, (100_003,), 0.5, 2.0))
                pa, pb, po = device.put(a), device.put(b), device.empty(a.size)
                backend.binary(pa, pb, po, a.size, op, dtype=dtype).wait()
                want = BINARY_REFERENCE[op](a.astype(np.float64), b.astype(np.float64))
                assert_close(device.get(po, a.shape), want, dtype=dtype)
        finally:
            device.free()
