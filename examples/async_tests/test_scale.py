"""Tests of my_gpu_code, the way a user tests their own GPU code with aruntime.

Run them with ``python -m pytest examples/async_tests -q``.  The async tests
run under asyncio and trio (the ``anyio_backend`` fixture below); every
aruntime fixture fails the test at teardown if it leaked device memory,
streams or events.
"""

from __future__ import annotations

from collections.abc import Callable

import anyio
import numpy as np
import pytest
from my_gpu_code import scale, scale_or_fallback

import aruntime as ar
import aruntime.testing

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def test_scale_on_every_backend(backend: ar.Backend) -> None:
    """The ``backend`` fixture repeats this on the mock and on every sim or GPU here."""
    host = np.arange(1000, dtype=np.float32)
    np.testing.assert_array_equal(await scale(backend, host, 3.0), host * 3)


async def test_empty_input_touches_no_device(mock_backend: ar.Backend) -> None:
    out = await scale(mock_backend, np.empty(0, dtype=np.float32), 2.0)
    assert out.size == 0
    assert mock_backend.driver.calls() == []  # the mock logs every driver call


async def test_upload_out_of_memory_raises_and_frees(mock_backend: ar.Backend) -> None:
    """The error path: the copy fails, the error reaches us, nothing leaks."""
    aruntime.testing.inject_fault(mock_backend, "copy_h2d_async", ar.OutOfMemoryError)
    with pytest.raises(ar.OutOfMemoryError):
        await scale(mock_backend, np.ones(64, dtype=np.float32), 2.0)
    assert mock_backend.live_bytes() == 0  # the finally freed it


async def test_fallback_computes_on_host_when_device_is_full(
    mock_backend: ar.Backend,
) -> None:
    aruntime.testing.inject_fault(mock_backend, "alloc", ar.OutOfMemoryError)
    host = np.linspace(0, 1, 100, dtype=np.float32)
    np.testing.assert_allclose(await scale_or_fallback(mock_backend, host, 4.0), host * 4)
    assert mock_backend.driver.calls("launch") == []  # the kernel never ran


async def test_cancelled_mid_flight_leaks_nothing(async_mock_backend: ar.Backend) -> None:
    """On the threaded mock ops take time, so cancellation lands mid-await."""
    with anyio.move_on_after(0.0005):
        await scale(async_mock_backend, np.ones(4096, dtype=np.float32), 2.0)
    # the fixture's teardown waits for the device and then checks for leaks


def test_leak_check_catches_a_forgotten_free(
    mock_backend: ar.Backend, leak_check: Callable[[ar.Backend], None]
) -> None:
    ptr = mock_backend.alloc(128)
    with pytest.raises(AssertionError, match="leaked"):
        leak_check(mock_backend)
    mock_backend.free(ptr)
    leak_check(mock_backend)
