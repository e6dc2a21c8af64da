"""Bad arguments to the compute operations: the contract's errors, nothing enqueued.

Validation is backend-neutral (aruntime/_compute.py), so this runs on the
mock, whose call log shows that no launch reached the driver.
"""
# ruff: noqa: E501  (the table of cases reads best one case per line)

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import aruntime as ar


@pytest.fixture
def gpu(mock_backend: ar.Backend) -> Iterator[ar.Backend]:
    yield mock_backend


@pytest.fixture
def bufs(gpu: ar.Backend) -> Iterator[list[ar.DevicePtr]]:
    ptrs = [gpu.alloc(4096) for _ in range(4)]
    yield ptrs
    for p in ptrs:
        gpu.free(p)


def _launches(gpu: ar.Backend) -> int:
    return len(gpu.driver.calls("launch"))  # type: ignore[attr-defined]


Call = Callable[[ar.Backend, list[ar.DevicePtr]], Any]

# (call, expected error, message fragment)
CASES: list[tuple[str, Call, type[BaseException], str]] = [
    # gemm
    ("gemm negative m", lambda g, p: g.gemm(p[0], p[1], p[2], -1, 2, 2), ar.InvalidArgumentError, "m"),
    ("gemm float n", lambda g, p: g.gemm(p[0], p[1], p[2], 2, 2.0, 2), TypeError, "n"),
    ("gemm host a", lambda g, p: g.gemm(np.ones(4, np.float32), p[1], p[2], 2, 2, 2), TypeError, "a"),
    ("gemm short lda", lambda g, p: g.gemm(p[0], p[1], p[2], 4, 2, 2, lda=3), ar.InvalidArgumentError, "lda"),
    ("gemm short ldb (trans)", lambda g, p: g.gemm(p[0], p[1], p[2], 2, 4, 2, ldb=3, trans_b=True), ar.InvalidArgumentError, "ldb"),
    ("gemm short ldc", lambda g, p: g.gemm(p[0], p[1], p[2], 2, 2, 2, ldc=1), ar.InvalidArgumentError, "ldc"),
    ("gemm a too small", lambda g, p: g.gemm(p[0][:60], p[1], p[2], 4, 4, 4), ar.InvalidArgumentError, "past the end"),
    ("gemm c too small", lambda g, p: g.gemm(p[0], p[1], p[2][:64], 4, 5, 4), ar.InvalidArgumentError, "past the end"),
    ("gemm c overlaps a", lambda g, p: g.gemm(p[0], p[1], p[0][16:], 4, 4, 4), ar.InvalidArgumentError, "overlaps"),
    ("gemm trans_a int", lambda g, p: g.gemm(p[0], p[1], p[2], 2, 2, 2, trans_a=1), TypeError, "trans_a"),
    ("gemm alpha str", lambda g, p: g.gemm(p[0], p[1], p[2], 2, 2, 2, alpha="1"), TypeError, "alpha"),
    ("gemm beta huge", lambda g, p: g.gemm(p[0], p[1], p[2], 2, 2, 2, beta=1e300), ar.InvalidArgumentError, "beta"),
    ("gemm float64", lambda g, p: g.gemm(p[0], p[1], p[2], 2, 2, 2, dtype="float64"), ar.InvalidArgumentError, "dtype"),
    ("gemm dtype int", lambda g, p: g.gemm(p[0], p[1], p[2], 2, 2, 2, dtype=4), TypeError, "dtype"),
    ("gemm stream", lambda g, p: g.gemm(p[0], p[1], p[2], 2, 2, 2, stream=3), TypeError, "stream"),
    # conv2d
    ("conv rank 3", lambda g, p: g.conv2d_forward(p[0], p[1], p[2], (1, 1, 4), (1, 1, 1, 1), (1, 1, 4, 1)), ar.InvalidArgumentError, "rank 4"),
    ("conv shape not tuple", lambda g, p: g.conv2d_forward(p[0], p[1], p[2], 4, (1, 1, 1, 1), (1, 1, 4, 1)), TypeError, "x_shape"),
    ("conv zero dim", lambda g, p: g.conv2d_forward(p[0], p[1], p[2], (1, 0, 4, 4), (1, 0, 1, 1), (1, 1, 4, 4)), ar.InvalidArgumentError, "x_shape"),
    ("conv stride rank", lambda g, p: g.conv2d_forward(p[0], p[1], p[2], (1, 1, 4, 4), (1, 1, 1, 1), (1, 1, 4, 4), stride=(1,)), ar.InvalidArgumentError, "rank 2"),
    ("conv zero stride", lambda g, p: g.conv2d_forward(p[0], p[1], p[2], (1, 1, 4, 4), (1, 1, 1, 1), (1, 1, 4, 4), stride=(0, 1)), ar.InvalidArgumentError, "stride"),
    ("conv negative padding", lambda g, p: g.conv2d_forward(p[0], p[1], p[2], (1, 1, 4, 4), (1, 1, 1, 1), (1, 1, 4, 4), padding=(0, -1)), ar.InvalidArgumentError, "padding"),
    ("conv channels", lambda g, p: g.conv2d_forward(p[0], p[1], p[2], (1, 2, 4, 4), (1, 3, 1, 1), (1, 1, 4, 4)), ar.InvalidArgumentError, "channels"),
    ("conv y shape", lambda g, p: g.conv2d_forward(p[0], p[1], p[2], (1, 1, 4, 4), (1, 1, 3, 3), (1, 1, 4, 4)), ar.InvalidArgumentError, "y_shape must be"),
    ("conv filter too big", lambda g, p: g.conv2d_forward(p[0], p[1], p[2], (1, 1, 2, 2), (1, 1, 3, 3), (1, 1, 1, 1)), ar.InvalidArgumentError, "larger"),
    ("conv x too small", lambda g, p: g.conv2d_forward(p[0], p[1], p[2], (2, 2, 16, 17), (1, 2, 1, 1), (2, 1, 16, 17)), ar.InvalidArgumentError, "past the end"),
    # attention
    ("attn zero seq", lambda g, p: g.attention(p[0], p[1], p[2], p[3], 1, 1, 0, 4, 4, scale=0.5), ar.InvalidArgumentError, "seq_q"),
    ("attn negative scale", lambda g, p: g.attention(p[0], p[1], p[2], p[3], 1, 1, 4, 4, 4, scale=-0.5), ar.InvalidArgumentError, "scale"),
    ("attn zero scale", lambda g, p: g.attention(p[0], p[1], p[2], p[3], 1, 1, 4, 4, 4, scale=0.0), ar.InvalidArgumentError, "scale"),
    ("attn inf scale", lambda g, p: g.attention(p[0], p[1], p[2], p[3], 1, 1, 4, 4, 4, scale=float("inf")), ar.InvalidArgumentError, "scale"),
    ("attn nan scale", lambda g, p: g.attention(p[0], p[1], p[2], p[3], 1, 1, 4, 4, 4, scale=float("nan")), ar.InvalidArgumentError, "scale"),
    ("attn scale None", lambda g, p: g.attention(p[0], p[1], p[2], p[3], 1, 1, 4, 4, 4, scale=None), TypeError, "scale"),
    ("attn causal str", lambda g, p: g.attention(p[0], p[1], p[2], p[3], 1, 1, 4, 4, 4, scale=1.0, causal="yes"), TypeError, "causal"),
    ("attn out is q", lambda g, p: g.attention(p[0], p[1], p[2], p[0], 1, 1, 4, 4, 4, scale=1.0), ar.InvalidArgumentError, "overlaps"),
    ("attn k too small", lambda g, p: g.attention(p[0], p[1][:16], p[2], p[3], 1, 1, 4, 4, 4, scale=1.0), ar.InvalidArgumentError, "past the end"),
    # reduce
    ("reduce axis high", lambda g, p: g.reduce(p[0], p[1], (2, 3), 2, "sum"), ar.InvalidArgumentError, "axis"),
    ("reduce axis low", lambda g, p: g.reduce(p[0], p[1], (2, 3), -3, "sum"), ar.InvalidArgumentError, "axis"),
    ("reduce axis float", lambda g, p: g.reduce(p[0], p[1], (2, 3), 1.0, "sum"), TypeError, "axis"),
    ("reduce rank 0", lambda g, p: g.reduce(p[0], p[1], (), 0, "sum"), ar.InvalidArgumentError, "dimension"),
    ("reduce unknown op", lambda g, p: g.reduce(p[0], p[1], (2, 3), 0, "prod"), ar.InvalidArgumentError, "op"),
    ("reduce op not str", lambda g, p: g.reduce(p[0], p[1], (2, 3), 0, 1), TypeError, "op"),
    ("reduce y overlaps x", lambda g, p: g.reduce(p[0], p[0][8:], (2, 3), 0, "sum"), ar.InvalidArgumentError, "overlaps"),
    ("reduce x too small", lambda g, p: g.reduce(p[0], p[1], (33, 33), 0, "sum"), ar.InvalidArgumentError, "past the end"),
    # element-wise
    ("unary unknown", lambda g, p: g.unary(p[0], p[1], 4, "cube"), ar.InvalidArgumentError, "op"),
    ("unary negative n", lambda g, p: g.unary(p[0], p[1], -1, "exp"), ar.InvalidArgumentError, "n"),
    ("unary partial overlap", lambda g, p: g.unary(p[0], p[0][4:], 8, "exp"), ar.InvalidArgumentError, "overlaps"),
    ("unary too long", lambda g, p: g.unary(p[0], p[1], 1025, "exp"), ar.InvalidArgumentError, "past the end"),
    ("binary unknown", lambda g, p: g.binary(p[0], p[1], p[2], 4, "pow"), ar.InvalidArgumentError, "op"),
    ("binary bool n", lambda g, p: g.binary(p[0], p[1], p[2], True, "add"), TypeError, "n"),
    ("binary out overlaps b", lambda g, p: g.binary(p[0], p[1], p[1][4:], 8, "add"), ar.InvalidArgumentError, "overlaps"),
    # alignment: a GPU faults on a misaligned load (issue 32)
    ("unary x misaligned", lambda g, p: g.unary(p[0].offset(1), p[1], 4, "relu"), ar.InvalidArgumentError, r"unary: x at 0x[0-9a-f]+ is not aligned to 4 bytes"),
    ("unary f16 y misaligned", lambda g, p: g.unary(p[0], p[1].offset(3), 4, "relu", dtype="float16"), ar.InvalidArgumentError, "y at .* not aligned to 2 bytes"),
    ("binary out misaligned", lambda g, p: g.binary(p[0], p[1], p[2].offset(2), 4, "add"), ar.InvalidArgumentError, "out at .* not aligned to 4"),
    ("gemm b misaligned", lambda g, p: g.gemm(p[0], p[1].offset(1), p[2], 2, 2, 2), ar.InvalidArgumentError, "gemm: b at .* not aligned"),
    ("reduce x misaligned", lambda g, p: g.reduce(p[0].offset(1), p[1], (2, 3), 0, "sum"), ar.InvalidArgumentError, "reduce: x at"),
    ("conv w misaligned", lambda g, p: g.conv2d_forward(p[0], p[1].offset(1), p[2], (1, 1, 4, 4), (1, 1, 1, 1), (1, 1, 4, 4)), ar.InvalidArgumentError, "w at"),
    ("attn v misaligned", lambda g, p: g.attention(p[0], p[1], p[2].offset(1), p[3], 1, 1, 4, 4, 4, scale=1.0), ar.InvalidArgumentError, "attention: v at"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("call", "error", "fragment"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_bad_arguments_raise_before_enqueue(
    gpu: ar.Backend, bufs: list[ar.DevicePtr], call: Call, error: type[BaseException], fragment: str
) -> None:
    before = _launches(gpu)
    with pytest.raises(error, match=fragment):
        call(gpu, bufs)
    assert _launches(gpu) == before


def test_freed_and_foreign_operands(gpu: ar.Backend, bufs: list[ar.DevicePtr]) -> None:
    freed = gpu.alloc(64)
    gpu.free(freed)
    with pytest.raises(ar.InvalidArgumentError, match="freed"):
        gpu.unary(freed, bufs[0], 4, "exp")
    with ar.open_backend("mock") as other:
        foreign = other.alloc(64)
        with pytest.raises(ar.InvalidArgumentError, match="another backend"):
            gpu.binary(bufs[0], foreign, bufs[1], 4, "add")
        other.free(foreign)
    assert _launches(gpu) == 0


def test_closed_backend() -> None:
    gpu = ar.open_backend("mock")
    a = gpu.alloc(64)
    gpu.free(a)
    gpu.close()
    with pytest.raises(ar.ClosedResourceError):
        gpu.unary(a, a, 4, "exp")


def test_launches_go_through_the_normal_launch_path(
    gpu: ar.Backend, bufs: list[ar.DevicePtr]
) -> None:
    gpu.gemm(bufs[0], bufs[1], bufs[2], 3, 3, 3).wait()
    gpu.unary(bufs[0], bufs[0], 5, "relu").wait()
    kernels = [c.kernel for c in gpu.driver.calls("launch")]  # type: ignore[attr-defined]
    assert kernels == ["gemm_f32", "unary_f32"]
    assert gpu.has_module("aruntime.gemm") and gpu.has_module("aruntime.unary")


def test_dtype_spellings(gpu: ar.Backend, bufs: list[ar.DevicePtr]) -> None:
    for dtype in ("float32", np.float32, np.dtype("float32"), "float16", np.float16):
        gpu.unary(bufs[0], bufs[1], 4, "neg", dtype=dtype).wait()  # type: ignore[arg-type]
    for bad in ("float64", np.float64, "bfloat16", "int32"):
        with pytest.raises(ar.InvalidArgumentError, match="dtype"):
            gpu.unary(bufs[0], bufs[1], 4, "neg", dtype=bad)  # type: ignore[arg-type]
    # float16 needs half the bytes: 1024 elements fit in 2048 bytes, 1025 do not.
    gpu.unary(bufs[0], bufs[1][:2048], 1024, "neg", dtype="float16").wait()
    with pytest.raises(ar.InvalidArgumentError, match="past the end"):
        gpu.unary(bufs[0], bufs[1][:2048], 1025, "neg", dtype="float16")


_junk = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=5),
    st.tuples(st.integers(-3, 40), st.integers(-3, 40)),
    st.lists(st.integers(-3, 40), max_size=5),
    st.sampled_from(["sum", "max", "relu", "add", "float32", "float16", "float64"]),
)


@given(data=st.data())
@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
def test_fuzzed_arguments_raise_only_contract_errors(
    gpu: ar.Backend, bufs: list[ar.DevicePtr], data: st.DataObject
) -> None:
    """Random arguments: TypeError or an AruntimeError, never anything else,
    and the ledger and untouched buffers stay intact."""
    ptr = st.one_of(st.sampled_from(bufs), st.sampled_from(bufs).map(lambda p: p[:16]), _junk)
    op = data.draw(
        st.sampled_from(["gemm", "conv2d_forward", "attention", "reduce", "unary", "binary"])
    )
    arity = {"gemm": (3, 3), "conv2d_forward": (3, 3), "attention": (4, 5), "reduce": (2, 3)}
    n_ptrs, n_rest = arity.get(op, (2 if op == "unary" else 3, 2))
    args = [data.draw(ptr) for _ in range(n_ptrs)] + [data.draw(_junk) for _ in range(n_rest)]
    kwargs = {}
    if op == "attention":
        kwargs["scale"] = data.draw(_junk)
    live = gpu.live_alloc_count()
    try:
        result = getattr(gpu, op)(*args, **kwargs)
    except (TypeError, ar.AruntimeError):
        pass
    else:
        result.wait()
    assert gpu.live_alloc_count() == live
