"""Injected faults on cuda-sim: each reaches its caller or awaiter as the right error.

Faults are injected through the sim's test hook (``arsim_inject_fault``);
a sticky fault poisons the simulated device until ``arsim_clear_faults``.
"""

from __future__ import annotations

import contextlib
import ctypes
from collections.abc import Iterator
from pathlib import Path

import anyio
import numpy as np
import pytest

import aruntime as ar
from aruntime import _exceptions as exc
from aruntime._driver import LaunchConfig
from aruntime.backends import cuda
from aruntime.backends.cuda._driver import CudaDriver

ROOT = Path(__file__).resolve().parents[3]
OUT_OF_MEMORY, LAUNCH_FAILED, ILLEGAL_ADDRESS = 1, 2, 3


@pytest.fixture
def sim() -> Iterator[ctypes.CDLL]:
    if not (ROOT / "ffi" / "cuda" / "sim").is_dir():
        pytest.skip("the software CUDA driver is not in this checkout yet")
    from aruntime._native import native_library_path

    library = ctypes.CDLL(str(native_library_path("libcuda.so.1")))
    library.arsim_clear_faults()
    yield library
    library.arsim_clear_faults()


class _Ptr(int):
    """Stands in for a DevicePtr: the driver only needs int()."""


def _fill(driver: CudaDriver, stream: object, address: int) -> None:
    module = driver.module_load(driver.builtin_module_image("vector_ops"))
    fill = driver.module_function(module, "fill_f32")
    config = LaunchConfig(grid=(1, 1, 1), block=(64, 1, 1), shared_mem=0)
    driver.launch(fill, config, [np.uint32(64), np.float32(1), _Ptr(address)], stream)  # type: ignore[arg-type]


def _wait(driver: CudaDriver, stream: object) -> None:
    event = driver.event_create(False)
    try:
        driver.event_record(event, stream)  # type: ignore[arg-type]
        driver.event_wait(event)
    finally:
        driver.event_destroy(event)


def test_out_of_memory_is_not_sticky(sim: ctypes.CDLL) -> None:
    driver = cuda.open_driver(0, sim=True)
    try:
        sim.arsim_inject_fault(-1, OUT_OF_MEMORY, 1)
        with pytest.raises(exc.OutOfMemoryError, match="cuMemAlloc_v2"):
            driver.mem_alloc(64)
        driver.mem_free(driver.mem_alloc(64))
    finally:
        driver.close()


def test_injected_launch_failure_is_a_driver_error_and_not_sticky(sim: ctypes.CDLL) -> None:
    driver = cuda.open_driver(0, sim=True)
    assert isinstance(driver, CudaDriver)
    stream = driver.stream_create(0)
    dev = driver.mem_alloc(256)
    try:
        sim.arsim_inject_fault(-1, LAUNCH_FAILED, 1)
        _fill(driver, stream, dev)
        with pytest.raises(exc.DriverError, match="CUDA_ERROR_LAUNCH_FAILED") as info:
            _wait(driver, stream)
        # CUDA's LAUNCH_FAILED is sticky, but the probe found the context alive.
        assert not isinstance(info.value, exc.DeviceLostError)
        _fill(driver, stream, dev)
        _wait(driver, stream)
    finally:
        driver.mem_free(dev)
        driver.stream_destroy(stream)
        driver.close()


def test_illegal_address_loses_the_device_and_later_calls_fail_fast(sim: ctypes.CDLL) -> None:
    driver = cuda.open_driver(0, sim=True)
    assert isinstance(driver, CudaDriver)
    stream = driver.stream_create(0)
    dev = driver.mem_alloc(256)
    sim.arsim_inject_fault(-1, ILLEGAL_ADDRESS, 1)
    _fill(driver, stream, dev)
    with pytest.raises(exc.DeviceLostError, match="CUDA_ERROR_ILLEGAL_ADDRESS"):
        _wait(driver, stream)
    with pytest.raises(exc.DeviceLostError, match="lost earlier"):
        driver.mem_alloc(16)
    with pytest.raises(exc.DeviceLostError):
        driver.memset_d8(dev, 0, 16, stream)
    driver.mem_free(dev)  # releasing is a no-op on a lost context
    driver.stream_destroy(stream)
    driver.close()


@pytest.mark.anyio
@pytest.mark.parametrize("kind", [LAUNCH_FAILED, ILLEGAL_ADDRESS])
async def test_a_fault_reaches_every_awaiter(sim: ctypes.CDLL, kind: int) -> None:
    """Every op queued after the faulting kernel fails for its awaiter; nothing hangs."""
    gpu = ar.open_backend("cuda-sim")
    try:
        stream = gpu.create_stream()
        dev = gpu.alloc(4096)
        fill = gpu.kernel(gpu.builtin_module(), "fill_f32")
        sim.arsim_inject_fault(-1, kind, 1)
        failures = 0
        completions = []
        # A sticky fault may surface at any later call, enqueueing included
        # (as on a GPU): an op refused at enqueue counts as failed too.
        enqueues = [
            lambda: gpu.launch(
                fill, (1, 1, 1), (64, 1, 1), [np.uint32(64), np.float32(1), dev], stream=stream
            ),
            *[lambda i=i: gpu.memset_async(dev, i, 64, stream=stream) for i in range(5)],
            lambda: gpu.copy_d2h_async(dev, np.empty(4096, np.uint8), stream=stream),
        ]
        for enqueue in enqueues:
            try:
                completions.append(enqueue())
            except exc.DriverError:
                failures += 1
        with anyio.fail_after(30):
            for completion in completions:
                try:
                    await completion
                except exc.DriverError:
                    failures += 1
        assert failures >= 1
        if kind == ILLEGAL_ADDRESS:
            assert failures == len(enqueues)  # the device is poisoned: every op fails
    finally:
        # On a poisoned device the free itself may fail; unawaited failures
        # are re-raised by close: both expected here.
        with contextlib.suppress(exc.AruntimeError):
            gpu.sweep_unreleased()
        with contextlib.suppress(exc.AruntimeError):
            gpu.close()
