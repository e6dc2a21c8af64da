"""A launch with the wrong arguments is refused cleanly on every backend.

A numpy float64 is a C double: it reaches a double parameter bit for bit,
and one given for a parameter of another size is refused with both sizes.

Too few, too many, or an argument of the wrong size (a 4-byte scalar where
the kernel takes a pointer) raises InvalidArgumentError at ``launch``; the
process survives, nothing runs, and the backend keeps working.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import aruntime as ar

from ..helpers import build_host_kernel

pytestmark = pytest.mark.anyio

N = 64


def _bad_args(dx: ar.DevicePtr, dy: ar.DevicePtr) -> list[tuple[str, list[Any]]]:
    n, a = np.uint32(N), np.float32(2)
    return [
        ("none", []),
        ("too few", [n, a, dx]),
        ("too many", [n, a, dx, dy, dy]),
        ("scalar for pointer", [n, a, np.uint32(0), dy]),
        # A value the cut to 4 bytes would change: Level Zero (Intel's runtime and
        # the sim) takes a wider integer whose value fits, as oneMKL passes them.
        ("wide scalar", [np.uint64(N | 1 << 40), a, dx, dy]),
        ("short bytes", [n, a, dx, b"\0" * 4]),
    ]


async def test_wrong_arguments_are_refused(backend: ar.Backend) -> None:
    saxpy = backend.kernel(backend.builtin_module("vector_ops"), "saxpy")
    x = np.arange(N, dtype=np.float32)
    y = np.ones(N, dtype=np.float32)
    dx, dy = backend.alloc(x.nbytes), backend.alloc(y.nbytes)
    backend.copy_h2d_async(x, dx)
    await backend.copy_h2d_async(y, dy)
    for label, args in _bad_args(dx, dy):
        with pytest.raises(ar.InvalidArgumentError, match="saxpy") as info:
            backend.launch(saxpy, 1, N, args)
        assert "argument" in str(info.value), label
    # Nothing ran, and a correct launch still gives the right numbers.
    await backend.synchronize()
    np.testing.assert_array_equal(await backend.copy_d2h_async(dy, np.empty_like(y)), y)
    await backend.launch(saxpy, 1, N, [np.uint32(N), np.float32(2), dx, dy])
    out = await backend.copy_d2h_async(dy, np.empty_like(y))
    np.testing.assert_allclose(out, 2 * x + 1)
    backend.free(dx)
    backend.free(dy)


async def test_error_names_index_and_sizes(backend: ar.Backend) -> None:
    saxpy = backend.kernel(backend.builtin_module("vector_ops"), "saxpy")
    d = backend.alloc(4 * N)
    with pytest.raises(ar.InvalidArgumentError, match=r"4 argument\(s\), got 3"):
        backend.launch(saxpy, 1, N, [np.uint32(N), np.float32(1), d])
    with pytest.raises(ar.InvalidArgumentError, match=r"argument 2\b.*\b4 bytes"):
        backend.launch(saxpy, 1, N, [np.uint32(N), np.float32(1), np.uint32(0), d])
    backend.free(d)


async def test_mock_checks_python_signature(mock_backend: ar.Backend) -> None:
    seen: list[int] = []

    def two(launch: Any, n: Any, ptr: Any) -> None:
        seen.append(int(n))

    def flexible(launch: Any, n: Any, *rest: Any) -> None:
        seen.append(len(rest))

    module = mock_backend.load_module("sig", {"two": two, "flexible": flexible})
    k = mock_backend.kernel(module, "two")
    d = mock_backend.alloc(16)
    with pytest.raises(ar.InvalidArgumentError, match=r"'two' takes 2 argument\(s\), got 1"):
        mock_backend.launch(k, 1, 1, [np.uint32(1)])
    with pytest.raises(ar.InvalidArgumentError, match="got 3"):
        mock_backend.launch(k, 1, 1, [np.uint32(1), d, d])
    await mock_backend.launch(k, 1, 1, [np.uint32(7), d])
    f = mock_backend.kernel(module, "flexible")
    with pytest.raises(ar.InvalidArgumentError, match="at least 1"):
        mock_backend.launch(f, 1, 1, [])
    await mock_backend.launch(f, 1, 1, [np.uint32(1), d, d, d])
    assert seen == [7, 3]
    mock_backend.free(d)


# fill_f64(uint32 n, double value, double *y), from nvcc -ptx -arch=compute_75 of
# the same function as f64_kernel.c, with the ISA version lowered to what older
# drivers accept (nothing in it needs newer).
_FILL_F64_PTX = b"""
.version 7.0
.target sm_75
.address_size 64

.visible .entry fill_f64(
    .param .u32 fill_f64_param_0,
    .param .f64 fill_f64_param_1,
    .param .u64 fill_f64_param_2
)
{
    .reg .pred %p<2>;
    .reg .b32 %r<6>;
    .reg .f64 %fd<2>;
    .reg .b64 %rd<5>;

    ld.param.u32 %r2, [fill_f64_param_0];
    ld.param.f64 %fd1, [fill_f64_param_1];
    ld.param.u64 %rd1, [fill_f64_param_2];
    mov.u32 %r3, %ctaid.x;
    mov.u32 %r4, %ntid.x;
    mov.u32 %r5, %tid.x;
    mad.lo.s32 %r1, %r3, %r4, %r5;
    setp.ge.u32 %p1, %r1, %r2;
    @%p1 bra $L__BB0_2;
    cvta.to.global.u64 %rd2, %rd1;
    mul.wide.u32 %rd3, %r1, 8;
    add.s64 %rd4, %rd2, %rd3;
    st.global.f64 [%rd4], %fd1;
$L__BB0_2:
    ret;
}
"""


@pytest.fixture(scope="module")
def f64_host_kernel(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """tests/kernels/f64_kernel.c, for the software drivers (which load host shared objects)."""
    return build_host_kernel("f64_kernel", tmp_path_factory.mktemp("f64kernel"))


def _fill_f64_module(backend: ar.Backend, host_kernel: bytes) -> ar.Module:
    if backend.name == "mock":

        def fill_f64(launch: Any, n: Any, value: Any, y: Any) -> None:
            # The mock hands over the scalar as passed: a double stays a double.
            assert isinstance(value, np.float64)
            y[: int(n) * 8].view(np.float64)[:] = value

        return backend.load_module("f64", {"fill_f64": fill_f64})
    if backend.name.endswith("-sim"):
        return backend.load_module("f64", host_kernel)
    if backend.name == "cuda":
        return backend.load_module("f64", _FILL_F64_PTX)
    pytest.skip(f"no {backend.name} build of the float64 test kernel")


async def test_float64_is_a_c_double(backend: ar.Backend, f64_host_kernel: bytes) -> None:
    fill = backend.kernel(_fill_f64_module(backend, f64_host_kernel), "fill_f64")
    value = np.float64(1 / 3)  # not representable as a float32: catches a narrowing
    d = backend.alloc(8 * N)
    await backend.launch(fill, 1, N, [np.uint32(N), value, d])
    out = await backend.copy_d2h_async(d, np.zeros(N, dtype=np.float64))
    assert (out == value).all()
    backend.free(d)


async def test_float64_for_a_float_parameter_says_so(backend: ar.Backend) -> None:
    saxpy = backend.kernel(backend.builtin_module("vector_ops"), "saxpy")
    d = backend.alloc(4 * N)
    with pytest.raises(ar.InvalidArgumentError, match=r"argument 1\b.*8 bytes.*float64") as info:
        backend.launch(saxpy, 1, N, [np.uint32(N), np.float64(2), d, d])
    assert "bare Python" not in str(info.value)
    await backend.synchronize()
    backend.free(d)
