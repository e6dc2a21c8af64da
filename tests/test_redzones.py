"""Guard bands around device allocations (ARUNTIME_REDZONE=1)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import aruntime as ar
from aruntime._ledger import REDZONE_BYTES


@pytest.fixture(params=["mock", "mock-async"])
def rz_backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    monkeypatch.setenv("ARUNTIME_REDZONE", "1")
    options = {"latency": 0.0} if request.param == "mock-async" else {}
    gpu = ar.open_backend("mock", **options)
    try:
        yield gpu
    finally:
        gpu.close()


def _band(gpu: ar.Backend, address: int) -> np.ndarray:
    return gpu.driver.view(address, REDZONE_BYTES).copy()  # type: ignore[attr-defined,no-any-return]


def test_guards_are_written_and_scan_clean(rz_backend: ar.Backend) -> None:
    gpu = rz_backend
    ptr = gpu.alloc(1000)
    arena = gpu.alloc_arena(64)
    assert gpu.scan_redzones() == 0
    assert (_band(gpu, ptr.address - REDZONE_BYTES) == 0xA5).all()
    assert (_band(gpu, ptr.address + 1000) == 0x5A).all()
    # The user range is untouched and fully usable.
    data = np.arange(1000, dtype=np.uint32).astype(np.uint8)
    gpu.copy_h2d(data, ptr)
    gpu.memset(arena, 0xFF, 64)
    out = np.empty(1000, np.uint8)
    gpu.copy_d2h(ptr, out)
    np.testing.assert_array_equal(out, data)
    assert gpu.live_bytes() == 1064  # guards are not counted
    assert gpu.scan_redzones() == 0
    gpu.free(ptr)
    gpu.free_arena(arena)


def test_kernel_writing_past_the_end_is_caught(rz_backend: ar.Backend) -> None:
    gpu = rz_backend
    victim = gpu.alloc(128)
    neighbour = gpu.alloc(128)
    driver: Any = gpu.driver

    def overflow(launch: Any, n: Any, buf: np.ndarray) -> None:
        # A buggy kernel: its DevicePtr view is bounded, so it reaches past the
        # end through the raw device address, as a real kernel would.
        driver.view(victim.address, int(n))[:] = 0x11

    kern = gpu.kernel(gpu.load_module("buggy", {"overflow": overflow}), "overflow")
    gpu.launch(kern, 1, 1, [np.uint32(128), victim]).wait()
    assert gpu.scan_redzones() == 0  # in bounds so far
    gpu.launch(kern, 1, 1, [np.uint32(136), victim]).wait()
    assert gpu.scan_redzones() == 1  # victim's high band
    gpu.free(victim)
    gpu.free(neighbour)


def test_raw_copy_below_the_start_is_caught(rz_backend: ar.Backend) -> None:
    gpu = rz_backend
    src = gpu.alloc(64)
    dst = gpu.alloc(64)
    gpu.memset(src, 0x33, 64)
    stream = gpu.default_stream().handle
    # Bypass validation as a wrong pointer computed in native code would.
    gpu.driver.memcpy_d2d(src.address, dst.address - 16, 16, stream)
    gpu.synchronize().wait(30)
    assert gpu.scan_redzones() == 1
    gpu.driver.memcpy_d2d(src.address, src.address + 64, 1, stream)
    gpu.synchronize().wait(30)
    assert gpu.scan_redzones() == 2
    gpu.free(src)
    gpu.free(dst)


def test_poison_redzones_changes_the_patterns(rz_backend: ar.Backend) -> None:
    gpu = rz_backend
    a = gpu.alloc(100)
    b = gpu.alloc_managed(50)
    host = gpu.alloc_host_pinned(10)  # host memory has no guard bands
    assert gpu.poison_redzones(0x00, 0xFF) == 2
    assert (_band(gpu, a.address - REDZONE_BYTES) == 0x00).all()
    assert (_band(gpu, b.address + 50) == 0xFF).all()
    assert gpu.scan_redzones() == 0
    c = gpu.alloc(10)  # new allocations use the new patterns
    assert (_band(gpu, c.address + 10) == 0xFF).all()
    assert gpu.scan_redzones() == 0
    for bad in (-1, 256):
        with pytest.raises(ar.InvalidArgumentError):
            gpu.poison_redzones(bad, 0)
    with pytest.raises(TypeError):
        gpu.poison_redzones(0, "x")  # type: ignore[arg-type]
    for p in (a, b, c):
        gpu.free(p)
    gpu.free_host_pinned(host)


def test_no_guards_without_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ARUNTIME_REDZONE", raising=False)
    with ar.open_backend("mock") as gpu:
        a = gpu.alloc(100)
        b = gpu.alloc(100)
        assert gpu.scan_redzones() == 0
        assert gpu.poison_redzones(1, 2) == 0
        assert b.address - a.address >= 100  # no band between them
        with pytest.raises(ar.InvalidArgumentError, match="run past"):  # the mock still checks
            gpu.driver.memcpy_d2d(a.address, a.address + 100, 16, gpu.default_stream().handle)
        gpu.free(a)
        gpu.free(b)


@pytest.mark.parametrize("value", ["0", "yes", "true", ""])
def test_only_exactly_one_turns_guards_on(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("ARUNTIME_REDZONE", value)
    with ar.open_backend("mock") as gpu:
        a = gpu.alloc(8)
        assert gpu.poison_redzones(1, 2) == 0
        gpu.free(a)


def test_failed_guard_write_leaves_no_allocation(rz_backend: ar.Backend) -> None:
    gpu = rz_backend
    gpu.driver.inject_fault("memset", ar.DriverError)  # type: ignore[attr-defined]
    with pytest.raises(ar.DriverError, match="injected"):
        gpu.alloc(64)
    gpu.synchronize().wait(30)
    assert gpu.live_alloc_count() == 0
    assert gpu.device_free_memory() == gpu.total_memory()  # the raw block was freed too
    p = gpu.alloc(64)
    assert gpu.scan_redzones() == 0
    gpu.free(p)
