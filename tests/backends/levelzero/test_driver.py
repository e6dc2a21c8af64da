"""Driver-level tests of LevelZeroDriver on levelzero-sim, through the loader and directly.

These call the driver contract (aruntime/_driver.py) without the core, so a
failure points at the Level Zero mapping itself.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from aruntime._driver import LaunchConfig
from aruntime._exceptions import (
    DriverError,
    InvalidArgumentError,
    NotSupportedError,
    OutOfMemoryError,
)
from aruntime._native import native_library_path
from aruntime.backends.levelzero import _driver, _platform

ZeDriver = _driver.LevelZeroDriver


def _kernels() -> bytes:
    return Path(native_library_path("libarkernels_host.so")).read_bytes()


def _roundtrip(ze: ZeDriver, data: bytes) -> bytes:
    s = ze.stream_create(0)
    ev = ze.event_create(False)
    dev = ze.mem_alloc(len(data))
    out = bytearray(len(data))
    try:
        ze.memcpy_h2d(memoryview(data), dev, s)
        ze.memcpy_d2h(dev, memoryview(out), s)
        ze.event_record(ev, s)
        ze.event_wait(ev)
        assert ze.event_query(ev)
    finally:
        ze.mem_free(dev)
        ze.event_destroy(ev)
        ze.stream_destroy(s)
    return bytes(out)


def test_device_info(ze: ZeDriver) -> None:
    info = ze.device_info()
    assert info.name
    assert info.total_memory > 0
    assert info.compute_units >= 1
    extra = dict(info.extra)
    assert "library" in extra
    free, total = ze.mem_get_info()
    assert total == info.total_memory and 0 <= free <= total


def test_h2d_d2h_roundtrip(ze: ZeDriver) -> None:
    data = os.urandom(1 << 16)
    assert _roundtrip(ze, data) == data


def test_free_memory_tracks_allocations(ze: ZeDriver) -> None:
    free0, _ = ze.mem_get_info()
    ptr = ze.mem_alloc(1 << 20)
    free1, _ = ze.mem_get_info()
    ze.mem_free(ptr)
    assert free0 - free1 == 1 << 20
    assert ze.mem_get_info()[0] == free0


class _AllocsAfterEachFree:
    """The driver's library, with another thread's allocation landing just after each zeMemFree.

    That is the window a deferred free (on a release thread) leaves open to
    an allocation on the user's thread: the address is the driver's again
    before the freeing side has updated its own books.
    """

    def __init__(self, ze: ZeDriver, nbytes: int) -> None:
        self._ze, self._real, self._nbytes = ze, ze._lib, nbytes
        self.landed: list[int] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def zeMemFree(self, context: Any, ptr: Any) -> int:
        rc = int(self._real.zeMemFree(context, ptr))
        if not self.landed:
            self.landed.append(self._ze.mem_alloc(self._nbytes))
        return rc


def test_free_memory_survives_an_allocation_inside_a_free(
    ze: ZeDriver, monkeypatch: pytest.MonkeyPatch
) -> None:
    free0, _ = ze.mem_get_info()
    old = ze.mem_alloc(4096)
    lib = _AllocsAfterEachFree(ze, 4096)
    monkeypatch.setattr(ze, "_lib", lib)
    ze.mem_free(old)
    monkeypatch.undo()
    [new] = lib.landed
    assert new == old, "the sim no longer reuses a freed address at once: rework this test"
    assert ze.mem_get_info()[0] == free0 - 4096
    ze.mem_free(new)
    assert ze.mem_get_info()[0] == free0


class _RefusesFree:
    """The driver's library, with zeMemFree answering "in use" (queued work still reads it)."""

    def __init__(self, real: Any) -> None:
        self._real = real

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def zeMemFree(self, context: Any, ptr: Any) -> int:
        return 0x78000006  # ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE


def test_a_refused_free_keeps_its_bytes_booked(
    ze: ZeDriver, monkeypatch: pytest.MonkeyPatch
) -> None:
    free0, _ = ze.mem_get_info()
    ptr = ze.mem_alloc(4096)
    monkeypatch.setattr(ze, "_lib", _RefusesFree(ze._lib))
    with pytest.raises(DriverError, match="HANDLE_OBJECT_IN_USE"):
        ze.mem_free(ptr)
    monkeypatch.undo()
    assert ze.mem_get_info()[0] == free0 - 4096
    ze.mem_free(ptr)
    assert ze.mem_get_info()[0] == free0


def test_memset_d2d_and_2d(ze: ZeDriver) -> None:
    s = ze.stream_create(0)
    ev = ze.event_create(False)
    a = ze.mem_alloc(4096)
    b = ze.mem_alloc(4096)
    out = bytearray(4096)
    try:
        ze.memset_d8(a, 0x5A, 4096, s)
        ze.memset_d8(b, 0, 4096, s)
        ze.memcpy_d2d(a, b, 1000, s)
        # 2D: 8 rows of 16 bytes, pitch 64 -> pitch 32, from offset 2048 of a
        src = (np.arange(4096) % 251).astype(np.uint8)
        ze.memcpy_h2d(memoryview(src), a, s)
        ze.memcpy_2d(a, 64, b + 2048, 32, 16, 8, s)
        ze.memcpy_d2h(b, memoryview(out), s)
        ze.event_record(ev, s)
        ze.event_wait(ev)
    finally:
        for p in (a, b):
            ze.mem_free(p)
        ze.event_destroy(ev)
        ze.stream_destroy(s)
    got = np.frombuffer(bytes(out), dtype=np.uint8)
    assert (got[:1000] == 0x5A).all() and (got[1000:2048] == 0).all()
    for row in range(8):
        assert (got[2048 + 32 * row : 2048 + 32 * row + 16] == src[64 * row : 64 * row + 16]).all()
        assert (got[2048 + 32 * row + 16 : 2048 + 32 * row + 32] == 0).all()


def test_pinned_host_memory_is_device_accessible(ze: ZeDriver) -> None:
    addr, view = ze.host_alloc(4096)
    s = ze.stream_create(0)
    ev = ze.event_create(False)
    dev = ze.mem_alloc(4096)
    try:
        view[:] = bytes(range(256)) * 16
        assert ze.host_device_address(addr) == addr
        ze.memcpy_d2d(ze.host_device_address(addr), dev, 4096, s)
        ze.memset_d8(ze.host_device_address(addr), 0, 4096, s)
        ze.memcpy_d2d(dev, ze.host_device_address(addr), 4096, s)
        ze.event_record(ev, s)
        ze.event_wait(ev)
        assert bytes(view) == bytes(range(256)) * 16
    finally:
        ze.mem_free(dev)
        ze.event_destroy(ev)
        ze.stream_destroy(s)
        ze.host_free(addr)


def test_managed_memory(ze: ZeDriver) -> None:
    ptr = ze.mem_alloc_managed(1024)
    ze.mem_free(ptr)


def test_cross_stream_wait(ze: ZeDriver) -> None:
    s1, s2 = ze.stream_create(0), ze.stream_create(1)
    ev, done = ze.event_create(False), ze.event_create(False)
    dev = ze.mem_alloc(1 << 20)
    data = os.urandom(1 << 20)
    out = bytearray(1 << 20)
    try:
        ze.memcpy_h2d(memoryview(data), dev, s1)
        ze.event_record(ev, s1)
        ze.stream_wait_event(s2, ev)
        ze.memcpy_d2h(dev, memoryview(out), s2)
        ze.event_record(done, s2)
        ze.event_wait(done)
    finally:
        ze.mem_free(dev)
        for e in (ev, done):
            ze.event_destroy(e)
        ze.stream_destroy(s1)
        ze.stream_destroy(s2)
    assert bytes(out) == data


def test_unrecorded_event_is_complete(ze: ZeDriver) -> None:
    ev = ze.event_create(False)
    assert ze.event_query(ev)
    ze.event_wait(ev)
    ze.event_destroy(ev)


def test_event_pools_are_recycled(ze: ZeDriver) -> None:
    s = ze.stream_create(0)
    for _ in range(5):
        events = [ze.event_create(False) for _ in range(50)]
        for ev in events:
            ze.event_record(ev, s)
        for ev in events:
            ze.event_wait(ev)
            ze.event_destroy(ev)
    ze.stream_destroy(s)
    assert len(ze._events._pools) <= 2  # 250 events, 64 per pool, reused


def test_timing_events(ze: ZeDriver) -> None:
    s = ze.stream_create(0)
    start, end = ze.event_create(True), ze.event_create(True)
    dev = ze.mem_alloc(8 << 20)
    try:
        ze.event_record(start, s)
        ze.memset_d8(dev, 1, 8 << 20, s)
        ze.event_record(end, s)
        ze.event_wait(end)
        ms = ze.event_elapsed_ms(start, end)
        assert ms >= 0.0
        assert ze.event_elapsed_ms(end, start) == -ms
    finally:
        ze.mem_free(dev)
        ze.event_destroy(start)
        ze.event_destroy(end)
        ze.stream_destroy(s)
    assert ze.device_timestamp_us() is not None


def test_kernel_launch_and_engine_hand_over(ze: ZeDriver) -> None:
    """Copies (copy engine) and kernels (compute engine) stay in stream order."""
    n = 10_000
    module = ze.module_load(_kernels())
    saxpy = ze.module_function(module, "saxpy")
    assert ze.module_function(module, "saxpy") is saxpy
    s = ze.stream_create(0)
    ev = ze.event_create(False)
    x = ze.mem_alloc(4 * n)
    y = ze.mem_alloc(4 * n)
    xs = np.arange(n, dtype=np.float32)
    ys = np.ones(n, dtype=np.float32)
    out = np.empty(n, dtype=np.float32)
    config = LaunchConfig(grid=((n + 127) // 128, 1, 1), block=(128, 1, 1), shared_mem=0)
    try:
        ze.memcpy_h2d(memoryview(xs).cast("B"), x, s)
        ze.memcpy_h2d(memoryview(ys).cast("B"), y, s)
        for _ in range(3):  # copy -> compute -> copy hand-overs, several times
            ze.launch(saxpy, config, [np.uint32(n), np.float32(2.0), x, y], s)
            ze.memcpy_d2d(y, x, 4 * n, s)
        ze.memcpy_d2h(y, memoryview(out).cast("B"), s)
        ze.event_record(ev, s)
        ze.event_wait(ev)
    finally:
        ze.mem_free(x)
        ze.mem_free(y)
        ze.event_destroy(ev)
        ze.stream_destroy(s)
        ze.module_unload(module)
    expect_x, expect_y = xs.copy(), ys.copy()
    for _ in range(3):
        expect_y = 2.0 * expect_x + expect_y
        expect_x = expect_y.copy()
    np.testing.assert_array_equal(out, expect_y)


def test_missing_kernel_name(ze: ZeDriver) -> None:
    module = ze.module_load(_kernels())
    try:
        with pytest.raises(InvalidArgumentError, match="no_such_kernel"):
            ze.module_function(module, "no_such_kernel")
    finally:
        ze.module_unload(module)


def test_image_format_detection() -> None:
    spirv = (0x07230203).to_bytes(4, "little") + bytes(16)
    assert ZeDriver.image_format(spirv) == 0
    assert ZeDriver.image_format((0x07230203).to_bytes(4, "big")) == 0
    assert ZeDriver.image_format(b"\x7fELF" + bytes(60)) == 1
    assert ZeDriver.image_format(b"") == 1


def test_shared_mem_is_not_supported(ze: ZeDriver) -> None:
    module = ze.module_load(_kernels())
    s = ze.stream_create(0)
    try:
        fn = ze.module_function(module, "fill_f32")
        config = LaunchConfig(grid=(1, 1, 1), block=(1, 1, 1), shared_mem=1024)
        with pytest.raises(NotSupportedError, match="shared_mem"):
            ze.launch(fn, config, [np.uint32(0), np.float32(0), 0], s)
    finally:
        ze.stream_destroy(s)
        ze.module_unload(module)


def test_out_of_memory(ze: ZeDriver) -> None:
    total = ze.device_info().total_memory
    chunk = min(int(_platform._device_properties(ze._lib, ze._device).maxMemAllocSize), total)
    held = []
    try:
        with pytest.raises(OutOfMemoryError) as info:
            for _ in range(total // chunk + 2):
                held.append(ze.mem_alloc(chunk))
    finally:
        for ptr in held:
            ze.mem_free(ptr)
    assert info.value.function == "zeMemAllocDevice"
    assert info.value.name == "ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY"


def test_past_the_largest_allocation_is_not_supported(ze: ZeDriver) -> None:
    with pytest.raises(NotSupportedError, match="UNSUPPORTED_SIZE"):
        ze.mem_alloc(ze.device_info().total_memory * 4)


def test_graph_capture_and_replay(ze: ZeDriver) -> None:
    s = ze.stream_create(0)
    ev = ze.event_create(False)
    buf = ze.mem_alloc(4096)
    src = bytearray(4096)
    out = bytearray(4096)
    try:
        ze.capture_begin(s)
        ze.memcpy_h2d(memoryview(src), buf, s)
        ze.memcpy_d2h(buf, memoryview(out), s)
        graph = ze.capture_end(s)
        for i in range(5):
            src[:] = bytes([i]) * 4096
            ze.memset_d8(buf, 0xFF, 4096, s)  # ordered before the replay
            ze.graph_launch(graph, s)
            ze.event_record(ev, s)
            ze.event_wait(ev)
            assert bytes(out) == bytes([i]) * 4096
        ze.graph_destroy(graph)
        ze.capture_begin(s)
        ze.memset_d8(buf, 1, 4096, s)
        ze.capture_abort(s)
    finally:
        ze.mem_free(buf)
        ze.event_destroy(ev)
        ze.stream_destroy(s)


def test_graph_launches_queue_up_without_blocking(ze: ZeDriver) -> None:
    s = ze.stream_create(0)
    ev = ze.event_create(False)
    buf = ze.mem_alloc(4)
    out = bytearray(4)
    n = 32
    try:
        module = ze.module_load(_kernels())
        scale = ze.module_function(module, "scale_f32")
        one = np.ones(1, np.float32)  # host buffers must outlive the async copy
        ze.memcpy_h2d(memoryview(one).cast("B"), buf, s)
        ze.capture_begin(s)
        ze.launch(
            scale, LaunchConfig((1, 1, 1), (1, 1, 1), 0), [np.uint32(1), np.float32(2), buf], s
        )
        graph = ze.capture_end(s)
        for _ in range(n):
            ze.graph_launch(graph, s)
        ze.graph_destroy(graph)  # deferred until the queued launches ran
        ze.memcpy_d2h(buf, memoryview(out), s)
        ze.event_record(ev, s)
        ze.event_wait(ev)
        ze.module_unload(module)
    finally:
        ze.mem_free(buf)
        ze.event_destroy(ev)
        ze.stream_destroy(s)
    assert np.frombuffer(bytes(out), np.float32)[0] == 2.0**n


def test_priorities(ze: ZeDriver) -> None:
    low, high = ze.priority_range()
    assert low < 0 < high
    for p in (low, 0, high):
        ze.stream_destroy(ze.stream_create(p))


def test_close_is_idempotent(ze: ZeDriver) -> None:
    ze.close()
    ze.close()


def test_streams_use_the_copy_engine_when_there_is_one(ze: ZeDriver) -> None:
    assert ze.has_copy_engine  # the sim has a copy-only queue group
    s = ze.stream_create(0)
    try:
        stream = s  # the driver's own stream object
        assert stream.copy is not None and stream.copy is not stream.compute  # type: ignore[attr-defined]
    finally:
        ze.stream_destroy(s)
    ze.stream_destroy(s)  # idempotent


def test_each_queue_group_hands_out_its_queues_in_turn(ze: Any) -> None:
    """A stream has a compute list and a copy list: each group's queues go round on
    their own, so with two copy queues the streams' copy lists use both."""
    compute, copy = 100, 101  # groups no list of this driver has used yet
    picks = []
    for _ in range(4):  # as stream_create asks: its compute list, then its copy list
        picks.append((ze._queue_index(compute, 4), ze._queue_index(copy, 2)))
    assert picks == [(0, 0), (1, 1), (2, 0), (3, 1)]
