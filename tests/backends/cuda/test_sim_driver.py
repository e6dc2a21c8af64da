"""CudaDriver methods called directly, on the software driver and on a real GPU.

The ``cuda-sim`` run needs only a C compiler; the ``cuda`` run carries the
``gpu`` marker and skips where no CUDA device is visible.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import numpy as np
import pytest

from aruntime import _exceptions as exc
from aruntime._driver import DriverStream, LaunchConfig
from aruntime.backends import cuda
from aruntime.backends._staging import DIRECT_PAGEABLE_H2D_MAX
from aruntime.backends.cuda import _handles
from aruntime.backends.cuda._driver import CudaDriver

ROOT = Path(__file__).resolve().parents[3]


def _open(kind: str) -> CudaDriver:
    sim = kind == "cuda-sim"
    if sim and not (ROOT / "ffi" / "cuda" / "sim").is_dir():
        pytest.skip("the software CUDA driver is not in this checkout yet")
    try:
        return cuda.open_driver(0, sim=sim)  # type: ignore[return-value]
    except exc.BackendUnavailableError as error:
        if sim:
            raise
        pytest.skip(f"no CUDA device here: {error}")


@pytest.fixture(params=["cuda-sim", pytest.param("cuda", marks=pytest.mark.gpu)])
def driver(request: pytest.FixtureRequest) -> Iterator[CudaDriver]:
    opened = _open(request.param)
    yield opened
    opened.close()


@pytest.fixture
def stream(driver: CudaDriver) -> Iterator[DriverStream]:
    s = driver.stream_create(0)
    yield s
    driver.stream_destroy(s)


def sync(driver: CudaDriver, stream: DriverStream) -> None:
    event = driver.event_create(False)
    driver.event_record(event, stream)
    driver.event_wait(event)
    assert driver.event_query(event)
    driver.event_destroy(event)


@pytest.mark.parametrize("nbytes", [4096, 200_000, 9 * 1024 * 1024 + 13])
def test_pageable_round_trip(driver: CudaDriver, stream: DriverStream, nbytes: int) -> None:
    """Small pageable copies go straight to the driver, large ones through staging."""
    rng = np.random.default_rng(nbytes)
    src = rng.integers(0, 256, nbytes, dtype=np.uint8)
    dst = np.zeros(nbytes, dtype=np.uint8)
    dev = driver.mem_alloc(nbytes)
    try:
        driver.memcpy_h2d(memoryview(src), dev, stream)
        driver.memcpy_d2h(dev, memoryview(dst), stream)
        sync(driver, stream)
        assert np.array_equal(src, dst)
    finally:
        driver.mem_free(dev)


def test_pinned_round_trip_and_device_alias(driver: CudaDriver, stream: DriverStream) -> None:
    n = 1 << 20
    address, view = driver.host_alloc(n)
    back_address, back = driver.host_alloc(n)
    host = np.frombuffer(view, dtype=np.uint8)
    host[:] = np.arange(n, dtype=np.uint64).astype(np.uint8)
    dev = driver.mem_alloc(n)
    try:
        assert driver._is_pinned(address, n) and driver._is_pinned(address + 8, n - 8)
        pageable = np.zeros(n, dtype=np.uint8)
        assert not driver._is_pinned(pageable.ctypes.data, n)
        driver.memcpy_h2d(view, dev, stream)
        driver.memcpy_d2h(dev, back, stream)
        sync(driver, stream)
        assert bytes(back) == bytes(view)
        alias = driver.host_device_address(address)
        driver.memset_d8(alias, 7, 16, stream)
        sync(driver, stream)
        assert bytes(view[:16]) == b"\x07" * 16
    finally:
        driver.mem_free(dev)
        driver.host_free(address)
        driver.host_free(back_address)


def test_memset_d2d_and_2d(driver: CudaDriver, stream: DriverStream) -> None:
    a = driver.mem_alloc(4096)
    b = driver.mem_alloc(4096)
    out = bytearray(4096)
    try:
        driver.memset_d8(a, 0xAB, 4096, stream)
        driver.memset_d8(b, 0, 4096, stream)
        driver.memcpy_d2d(a, b, 100, stream)
        # 2D: 4 rows of 8 bytes from pitch 16 to pitch 32, at b + 1024.
        driver.memcpy_2d(a, 16, b + 1024, 32, 8, 4, stream)
        driver.memcpy_d2h(b, memoryview(out), stream)
        sync(driver, stream)
        assert out[:100] == b"\xab" * 100 and out[100] == 0
        for row in range(4):
            start = 1024 + row * 32
            assert out[start : start + 8] == b"\xab" * 8
            assert out[start + 8 : start + 32] == bytes(24)
    finally:
        driver.mem_free(a)
        driver.mem_free(b)


def test_device_properties(driver: CudaDriver) -> None:
    info = driver.device_info()
    free, total = driver.mem_get_info()
    assert info.total_memory == total >= free > 0
    assert info.compute_units > 0 and info.name
    lowest, highest = driver.priority_range()
    assert highest >= lowest  # larger is more urgent, as users pass them
    for priority in {lowest, highest}:
        driver.stream_destroy(driver.stream_create(priority))


def test_timed_events_and_cross_stream_wait(driver: CudaDriver, stream: DriverStream) -> None:
    other = driver.stream_create(0)
    start = driver.event_create(True)
    end = driver.event_create(True)
    dev = driver.mem_alloc(1 << 20)
    out = bytearray(16)
    try:
        driver.event_record(start, stream)
        driver.memset_d8(dev, 3, 1 << 20, stream)
        driver.event_record(end, stream)
        driver.stream_wait_event(other, end)
        driver.memcpy_d2h(dev, memoryview(out), other)
        sync(driver, other)
        assert driver.event_query(end)
        assert driver.event_elapsed_ms(start, end) >= 0.0
        assert out == b"\x03" * 16
    finally:
        driver.mem_free(dev)
        driver.event_destroy(start)
        driver.event_destroy(end)
        driver.stream_destroy(other)


def test_calls_from_a_fresh_thread_make_the_context_current(
    driver: CudaDriver, stream: DriverStream
) -> None:
    results: list[object] = []

    def work() -> None:
        try:
            dev = driver.mem_alloc(64)
            driver.memset_d8(dev, 1, 64, stream)
            sync(driver, stream)
            driver.mem_free(dev)
            results.append("ok")
        except Exception as error:  # reported below
            results.append(error)

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    assert results == ["ok"]


def test_event_calls_need_no_current_context(driver: CudaDriver, stream: DriverStream) -> None:
    """The core's waiter threads record, query and wait without binding a context."""
    event = driver.event_create(False)
    results: list[object] = []

    def work() -> None:
        try:
            driver.event_record(event, stream)
            driver.event_wait(event)
            results.append(driver.event_query(event))
        except Exception as error:  # reported below
            results.append(error)

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    driver.event_destroy(event)
    assert results == [True]


def test_capture_and_replay_with_a_staged_pageable_copy(
    driver: CudaDriver, stream: DriverStream
) -> None:
    n = DIRECT_PAGEABLE_H2D_MAX * 4  # staged through a host function
    host = np.zeros(n, dtype=np.uint8)
    out = np.zeros(n, dtype=np.uint8)
    dev = driver.mem_alloc(n)
    try:
        driver.capture_begin(stream)
        driver.memcpy_h2d(memoryview(host), dev, stream)
        driver.memset_d8(dev, 9, 8, stream)
        graph = driver.capture_end(stream)
        for value in (1, 2):
            host[:] = value  # a host node reads the buffer at replay time
            driver.graph_launch(graph, stream)
            driver.memcpy_d2h(dev, memoryview(out), stream)
            sync(driver, stream)
            assert (out[:8] == 9).all() and (out[8:] == value).all()
        driver.graph_destroy(graph)
    finally:
        driver.mem_free(dev)


def test_capture_abort(driver: CudaDriver, stream: DriverStream) -> None:
    dev = driver.mem_alloc(64)
    try:
        driver.capture_begin(stream)
        driver.memset_d8(dev, 1, 64, stream)
        driver.capture_abort(stream)
        driver.capture_abort(stream)  # nothing to abort: harmless
        sync(driver, stream)
    finally:
        driver.mem_free(dev)


def _kernel_image(driver: CudaDriver) -> bytes:
    if driver.backend_name == "cuda-sim":
        from aruntime._native import native_library_path

        try:
            return native_library_path("libarkernels_host.so").read_bytes()
        except exc.BackendUnavailableError as error:
            pytest.skip(f"host kernels not built here: {error}")
    ptx = ROOT / "aruntime" / "kernels" / "vector_ops.ptx"
    if not ptx.exists():
        pytest.skip("no PTX of the portable kernels in this checkout")
    return ptx.read_bytes()


def test_kernel_launch_saxpy(driver: CudaDriver, stream: DriverStream) -> None:
    module = driver.module_load(_kernel_image(driver))
    try:
        saxpy = driver.module_function(module, "saxpy")
        with pytest.raises(exc.InvalidArgumentError, match="no_such_kernel"):
            driver.module_function(module, "no_such_kernel")
        n = 1000
        x = np.arange(n, dtype=np.float32)
        y = np.ones(n, dtype=np.float32)
        dx = driver.mem_alloc(x.nbytes)
        dy = driver.mem_alloc(y.nbytes)
        try:
            driver.memcpy_h2d(memoryview(x).cast("B"), dx, stream)
            driver.memcpy_h2d(memoryview(y).cast("B"), dy, stream)
            config = LaunchConfig(grid=((n + 127) // 128, 1, 1), block=(128, 1, 1), shared_mem=0)
            args = [np.uint32(n), np.float32(2.0), _Ptr(dx), _Ptr(dy)]
            driver.launch(saxpy, config, args, stream)
            result = np.zeros(n, dtype=np.float32)
            driver.memcpy_d2h(dy, memoryview(result).cast("B"), stream)
            sync(driver, stream)
            np.testing.assert_array_equal(result, 2.0 * x + 1.0)
        finally:
            driver.mem_free(dx)
            driver.mem_free(dy)
    finally:
        driver.module_unload(module)


class _Ptr:
    """Stands in for a DevicePtr: the driver only needs int()."""

    def __init__(self, address: int) -> None:
        self.address = address

    def __int__(self) -> int:
        return self.address


def test_raw_bytes_kernel_argument(driver: CudaDriver, stream: DriverStream) -> None:
    module = driver.module_load(_kernel_image(driver))
    try:
        fill = driver.module_function(module, "fill_f32")
        dy = driver.mem_alloc(64 * 4)
        try:
            config = LaunchConfig(grid=(1, 1, 1), block=(64, 1, 1), shared_mem=0)
            value = np.float32(1.5).tobytes()
            driver.launch(fill, config, [np.uint32(64), value, _Ptr(dy)], stream)
            out = np.zeros(64, dtype=np.float32)
            driver.memcpy_d2h(dy, memoryview(out).cast("B"), stream)
            sync(driver, stream)
            assert (out == 1.5).all()
        finally:
            driver.mem_free(dy)
    finally:
        driver.module_unload(module)


def test_close_is_idempotent_and_final() -> None:
    opened = _open("cuda-sim")
    opened.close()
    opened.close()
    with pytest.raises(exc.ClosedResourceError):
        opened.mem_alloc(16)


def test_launch_checks_arguments_against_param_info(
    driver: CudaDriver, stream: DriverStream
) -> None:
    """The parameter sizes come from cuFuncGetParamInfo; a mismatch never reaches the driver."""
    module = driver.module_load(_kernel_image(driver))
    fn = driver.module_function(module, "saxpy")
    assert cast(_handles._Function, fn).param_sizes == (4, 4, 8, 8)
    ptr = driver.mem_alloc(64)
    config = LaunchConfig((1, 1, 1), (4, 1, 1), 0)
    with pytest.raises(exc.InvalidArgumentError, match=r"'saxpy' takes 4 argument\(s\), got 0"):
        driver.launch(fn, config, [], stream)
    with pytest.raises(exc.InvalidArgumentError, match="argument 3 is 8 bytes, got 4 bytes"):
        driver.launch(fn, config, [np.uint32(4), np.float32(1), ptr, np.float32(0)], stream)
    driver.module_unload(module)
    driver.mem_free(ptr)


def test_launch_unchecked_without_param_info(driver: CudaDriver) -> None:
    """A driver older than 12.4 lacks cuFuncGetParamInfo: launches go unchecked, as before."""
    driver._has_param_info = False
    module = driver.module_load(_kernel_image(driver))
    fn = driver.module_function(module, "saxpy")
    assert cast(_handles._Function, fn).param_sizes is None
    driver.module_unload(module)
