"""Tests a user would write for scale_on_gpu, on the mock and on real backends.

Every fixture from aruntime.testing checks at teardown that the test left no
allocation, stream, event or pending op behind.
"""

from __future__ import annotations

from typing import Any

import anyio
import numpy as np
import pytest
from scaler import scale_on_gpu

import aruntime as ar

pytestmark = pytest.mark.anyio


async def test_scales_like_numpy(mock_backend: ar.Backend) -> None:
    values = np.linspace(-1, 1, 1000, dtype=np.float32)
    out = await scale_on_gpu(mock_backend, values, 3.0)
    np.testing.assert_array_equal(out, values * np.float32(3))
    # The mock's call log shows what reached the "device", in order.
    ops = [c.op for c in mock_backend.driver.calls() if c.op in ("copy_h2d", "launch", "copy_d2h")]
    assert ops == ["copy_h2d", "launch", "copy_d2h"]
    launch = mock_backend.driver.calls("launch")[0]
    assert launch.kernel == "scale_f32"


async def test_a_failed_launch_reaches_the_caller_and_leaks_nothing(
    mock_backend: ar.Backend, leak_check: Any
) -> None:
    mock_backend.driver.inject_fault("launch", ar.DriverError)
    with pytest.raises(ar.DriverError, match="injected"):
        await scale_on_gpu(mock_backend, np.ones(64, dtype=np.float32), 2.0)
    leak_check(mock_backend)  # the allocation was freed on the error path
    # The fault was one-shot: the next call works.
    out = await scale_on_gpu(mock_backend, np.ones(64, dtype=np.float32), 2.0)
    assert (out == 2).all()


async def test_out_of_memory_is_a_memory_error(mock_backend: ar.Backend) -> None:
    mock_backend.driver.inject_fault("alloc", ar.OutOfMemoryError)
    with pytest.raises(MemoryError):
        await scale_on_gpu(mock_backend, np.ones(8, dtype=np.float32), 2.0)


async def test_cancelled_mid_op_frees_nothing_early(async_mock_backend: ar.Backend) -> None:
    # On this mock each op takes real time, so the timeout lands mid-op.
    values = np.arange(4096, dtype=np.float32)
    with anyio.move_on_after(0.0001):
        await scale_on_gpu(async_mock_backend, values, 2.0)
    await async_mock_backend.synchronize()  # queued work finishes; then the free happens
    out = await scale_on_gpu(async_mock_backend, values, 2.0)
    np.testing.assert_array_equal(out, values * 2)


async def test_rejects_wrong_dtypes(mock_backend: ar.Backend) -> None:
    with pytest.raises(TypeError):
        await scale_on_gpu(mock_backend, np.ones(4, dtype=np.float64), 2.0)  # type: ignore[arg-type]


async def test_on_every_backend(backend: ar.Backend) -> None:
    values = np.arange(3000, dtype=np.float32)
    out = await scale_on_gpu(backend, values, 0.5)
    np.testing.assert_allclose(out, values * np.float32(0.5))
