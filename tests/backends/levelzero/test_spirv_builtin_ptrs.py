"""Builtins read through pointers, as LLVM's SPIR-V back end writes them.

SYCL's compiler (dpctl's kernels) declares a builtin such as
``GlobalInvocationId`` as a ``CrossWorkgroup`` variable and reads one
component through ``OpInBoundsPtrAccessChain``.  levelzero-sim once read zeros
there, then refused such modules; it now follows the pointer to its load.
Each shape is checked against numpy on a 3-D launch, and what it cannot follow
(a store, a call) is refused with the builtin's name.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import aruntime as ar
from aruntime._exceptions import DriverError

HERE = Path(__file__).resolve().parent / "spirv"


def _launch(
    gpu: ar.Backend,
    image: str,
    kernel: str,
    grid: tuple[int, ...],
    block: tuple[int, ...],
    out: np.ndarray,
) -> np.ndarray:
    module = gpu.load_module(image, (HERE / image).read_bytes())
    p = gpu.alloc(out.nbytes)
    try:
        gpu.copy_h2d(out, p)
        gpu.launch(gpu.kernel(module, kernel), grid, block, [p])
        gpu.synchronize().wait()
        return gpu.copy_d2h(p, np.empty_like(out))
    finally:
        gpu.free(p)


def test_llvm_back_ends_access_chain_reads_the_global_id(gpu: ar.Backend) -> None:
    out = _launch(gpu, "builtin_chain.spv", "builtin_chain", (4,), (16,), np.zeros(64, np.uint32))
    np.testing.assert_array_equal(out, np.full(64, 9, np.uint32))


def _expected(grid: tuple[int, int, int], block: tuple[int, int, int]) -> np.ndarray:
    gx, gy, gz = (g * b for g, b in zip(grid, block, strict=True))
    rows = np.zeros((gx * gy * gz, 8), np.uint64)
    for z in range(gz):
        for y in range(gy):
            for x in range(gx):
                i = x + gx * (y + gy * z)
                lid = (x % block[0], y % block[1], z % block[2])
                local_linear = lid[0] + block[0] * (lid[1] + block[1] * lid[2])
                rows[i] = (x, y, lid[i % 3], x // block[0], grid[1], block[2],
                           local_linear % 16, gx)  # fmt: skip
    return rows


def test_every_pointer_shape_reads_its_builtin(gpu: ar.Backend) -> None:
    grid, block = (3, 2, 2), (4, 2, 2)
    n = np.prod(grid) * np.prod(block)
    out = _launch(gpu, "builtin_ptrs.spv", "builtin_ptrs", grid, block, np.zeros(8 * n, np.uint64))
    want = _expected(grid, block)
    names = ("gid.x", "gid.y", "lid[i % 3]", "group.x", "groups.y", "size.z", "sg local", "gsize.x")
    got = out.reshape(-1, 8)
    for k, name in enumerate(names):
        np.testing.assert_array_equal(got[:, k], want[:, k], err_msg=name)


@pytest.mark.parametrize(
    ("image", "names"),
    [
        ("refused_builtin_store.spv", "OpStore to built-in GlobalInvocationId"),
        ("refused_builtin_call.spv", "built-in LocalInvocationId used by OpFunctionCall"),
    ],
)
def test_what_it_cannot_follow_is_refused_by_name(gpu: ar.Backend, image: str, names: str) -> None:
    with pytest.raises(DriverError, match="MODULE_BUILD_FAILURE") as info:
        gpu.load_module(image, (HERE / image).read_bytes())
    assert names in str(info.value)
