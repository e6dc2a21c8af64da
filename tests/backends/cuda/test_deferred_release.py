"""Synchronizing frees are deferred to the driver's release thread while the device is busy.

``cuMemFree``, ``cuMemFreeHost`` and ``cuModuleUnload`` may wait for all of
the device's work, so the CUDA driver makes them on a thread of its own
while any of its streams has work queued, and at once when none has.
The busy stream holds a 300 ms op (the sim's per-op latency).
"""

from __future__ import annotations

import ctypes
import os
import time
from collections.abc import Iterator
from typing import Any

import pytest

from aruntime import _exceptions as exc
from aruntime._native import native_library_path
from aruntime.backends import cuda
from aruntime.backends.cuda._driver import CudaDriver

LATENCY_US = 300_000.0


@pytest.fixture
def driver() -> Iterator[CudaDriver]:
    try:
        opened = cuda.open_driver(0, sim=True)
    except exc.BackendUnavailableError as error:
        pytest.skip(f"cuda-sim unavailable: {error}")
    assert isinstance(opened, CudaDriver)
    yield opened
    opened.close()


@pytest.fixture
def slow_ops() -> Iterator[None]:
    lib: Any = ctypes.CDLL(os.path.realpath(native_library_path("libcuda.so.1")))
    lib.arsim_set_timing.argtypes = [ctypes.c_double, ctypes.c_double]
    lib.arsim_set_timing(0.0, LATENCY_US)
    try:
        yield
    finally:
        lib.arsim_set_timing(0.0, 0.0)


def _free_bytes(driver: CudaDriver) -> int:
    return driver.mem_get_info()[0]


def test_frees_while_busy_go_to_the_release_thread(driver: CudaDriver, slow_ops: None) -> None:
    nbytes = 64 << 20
    busy = driver.mem_alloc(4096)
    victim = driver.mem_alloc(nbytes)
    host, _ = driver.host_alloc(1 << 20)
    stream = driver.stream_create(0)
    try:
        before = _free_bytes(driver)
        start = time.perf_counter()
        driver.memset_d8(busy, 1, 4096, stream)  # holds the stream for 300 ms
        driver.mem_free(victim)
        driver.host_free(host)
        returned = time.perf_counter() - start
        assert driver._releases.pending == 2  # deferred, not made on this thread
        assert returned < LATENCY_US / 1e6 / 2, returned  # the caller never waited
        driver._releases.drain()
        assert driver._releases.pending == 0
        assert _free_bytes(driver) >= before + nbytes  # made by the release thread
    finally:
        driver.stream_destroy(stream)
        driver.mem_free(busy)


def test_frees_while_idle_are_made_at_once(driver: CudaDriver) -> None:
    nbytes = 64 << 20
    victim = driver.mem_alloc(nbytes)
    stream = driver.stream_create(0)
    try:
        before = _free_bytes(driver)
        driver.mem_free(victim)
        assert driver._releases.pending == 0
        assert _free_bytes(driver) >= before + nbytes
    finally:
        driver.stream_destroy(stream)


def test_out_of_memory_waits_for_deferred_frees_then_retries(
    driver: CudaDriver, slow_ops: None
) -> None:
    free, _ = driver.mem_get_info()
    big = free - (64 << 20)
    busy = driver.mem_alloc(4096)
    first = driver.mem_alloc(big)
    stream = driver.stream_create(0)
    try:
        driver.memset_d8(busy, 1, 4096, stream)
        driver.mem_free(first)
        assert driver._releases.pending == 1
        second = driver.mem_alloc(big)  # fits only once the deferred free has landed
        assert driver._releases.pending == 0
        driver.mem_free(second)
    finally:
        driver.stream_destroy(stream)
        driver._releases.drain()
        driver.mem_free(busy)


def test_close_makes_the_deferred_frees(slow_ops: None) -> None:
    try:
        driver = cuda.open_driver(0, sim=True)
    except exc.BackendUnavailableError as error:
        pytest.skip(f"cuda-sim unavailable: {error}")
    assert isinstance(driver, CudaDriver)
    busy = driver.mem_alloc(4096)
    stream = driver.stream_create(0)
    driver.memset_d8(busy, 1, 4096, stream)
    driver.mem_free(busy)
    assert driver._releases.pending == 1
    driver.stream_destroy(stream)
    driver.close()
    assert driver._releases.pending == 0
