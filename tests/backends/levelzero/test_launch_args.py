"""A Level Zero launch sets only the group size and arguments that changed since the kernel's last.

The kernel object keeps what was set (the API's rule), so a repeat launch
with the same values sets nothing; these hold that a changed value, a new
geometry and a launch refused half-way each still reach the kernel.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import aruntime as ar

pytestmark = pytest.mark.anyio


@pytest.fixture
def gpu() -> Any:
    try:
        backend = ar.open_backend("levelzero-sim")
    except ar.BackendUnavailableError as exc:
        pytest.skip(f"levelzero-sim unavailable: {exc}")
    with backend:
        yield backend


async def test_each_launch_sees_its_own_arguments_and_geometry(gpu: ar.Backend) -> None:
    fill = gpu.kernel(gpu.builtin_module("vector_ops"), "fill_f32")
    a, b = gpu.alloc(256 * 4), gpu.alloc(256 * 4)
    calls = [
        (a, 1.0, 256, 64),
        (b, 2.0, 128, 32),
        (a, 3.0, 64, 64),
        (a, 3.0, 64, 64),
        (b, 4.0, 256, 128),
    ]
    expected = {id(a): np.zeros(256, np.float32), id(b): np.zeros(256, np.float32)}
    await gpu.memset_async(a, 0, 256 * 4)
    await gpu.memset_async(b, 0, 256 * 4)
    for ptr, value, n, block in calls:
        gpu.launch(fill, n // block, block, [np.uint32(n), np.float32(value), ptr])
        expected[id(ptr)][:n] = value
    for ptr in (a, b):
        got = await gpu.copy_d2h_async(ptr, np.empty(256, np.float32))
        np.testing.assert_array_equal(got, expected[id(ptr)])
    gpu.free(a)
    gpu.free(b)


async def test_a_launch_refused_half_way_leaves_nothing_stale(gpu: ar.Backend) -> None:
    fill = gpu.kernel(gpu.builtin_module("vector_ops"), "fill_f32")
    a = gpu.alloc(64 * 4)
    await gpu.launch(fill, 1, 64, [np.uint32(64), np.float32(5.0), a])
    with pytest.raises(ar.InvalidArgumentError):  # a 2-byte value where 4 go
        gpu.launch(fill, 1, 64, [np.uint32(64), np.float16(7.0), a])
    await gpu.launch(fill, 1, 64, [np.uint32(64), np.float32(5.0), a])
    got = await gpu.copy_d2h_async(a, np.empty(64, np.float32))
    np.testing.assert_array_equal(got, np.full(64, 5.0, np.float32))
    gpu.free(a)
