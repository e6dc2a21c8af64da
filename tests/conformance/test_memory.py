"""Memory, copies and the ledger: the same tests on every backend."""

from __future__ import annotations

import numpy as np
import pytest

import aruntime as ar

pytestmark = pytest.mark.anyio


async def test_round_trip_h2d_d2h(backend: ar.Backend) -> None:
    host = np.arange(4096, dtype=np.float32)
    ptr = backend.alloc(host.nbytes)
    assert await backend.copy_h2d_async(host, ptr) is None
    out = np.zeros_like(host)
    result = await backend.copy_d2h_async(ptr, out)
    assert result is out
    np.testing.assert_array_equal(out, host)
    backend.free(ptr)


async def test_views_copy_the_right_bytes(backend: ar.Backend) -> None:
    ptr = backend.alloc(1024)
    await backend.memset_async(ptr, 0, 1024)
    await backend.copy_h2d_async(np.full(100, 7, np.uint8), ptr[200:300])
    await backend.memset_async(ptr.offset(900), 9, 24)
    out = await backend.copy_d2h_async(ptr, np.empty(1024, np.uint8))
    expected = np.zeros(1024, np.uint8)
    expected[200:300] = 7
    expected[900:924] = 9
    np.testing.assert_array_equal(out, expected)
    backend.free(ptr)


def test_pointers_are_equal_when_they_name_the_same_range(backend: ar.Backend) -> None:
    ptr, other = backend.alloc(1024), backend.alloc(1024)
    try:
        assert ptr[0:1024] == ptr and hash(ptr[0:1024]) == hash(ptr)
        assert ptr[16:32] == ptr.offset(16)[0:16] and {ptr[16:32], ptr.offset(16)[:16]} == {
            ptr[16:32]
        }
        assert ptr[0:512] != ptr  # the same start, a shorter range
        assert ptr.offset(16) != ptr and ptr != other and ptr != int(ptr)
    finally:
        backend.free(ptr)
        backend.free(other)


async def test_d2d_and_2d_copies(backend: ar.Backend) -> None:
    rows, src_pitch, dst_pitch, width = 5, 64, 48, 40
    src = backend.alloc(rows * src_pitch)
    dst = backend.alloc(rows * dst_pitch)
    pattern = (np.arange(rows * src_pitch) % 251).astype(np.uint8)
    await backend.copy_h2d_async(pattern, src)
    await backend.memset_async(dst, 0xEE, rows * dst_pitch)
    await backend.copy_d2d_2d_async(src, src_pitch, dst, dst_pitch, width, rows)
    out = await backend.copy_d2h_async(dst, np.empty(rows * dst_pitch, np.uint8))
    got = out.reshape(rows, dst_pitch)
    want = pattern.reshape(rows, src_pitch)[:, :width]
    np.testing.assert_array_equal(got[:, :width], want)
    assert (got[:, width:] == 0xEE).all()
    other = backend.alloc(rows * src_pitch)
    await backend.copy_d2d_async(src, other, rows * src_pitch)
    again = await backend.copy_d2h_async(other, np.empty(rows * src_pitch, np.uint8))
    np.testing.assert_array_equal(again, pattern)
    for p in (src, dst, other):
        backend.free(p)


def test_blocking_copies(backend: ar.Backend) -> None:
    data = np.random.default_rng(1).integers(0, 255, 3000, dtype=np.uint8)
    a = backend.alloc(3000)
    b = backend.alloc(3000)
    backend.copy_h2d(data, a)
    backend.copy_d2d(a, b, 3000)
    backend.memset(a, 1, 10)
    out = bytearray(3000)
    assert backend.copy_d2h(b, out) is out
    assert bytes(out) == data.tobytes()
    backend.copy_d2h(a, out)
    assert bytes(out[:10]) == b"\x01" * 10
    backend.free(a)
    backend.free(b)


def test_out_of_bounds_is_rejected_before_the_driver(backend: ar.Backend) -> None:
    ptr = backend.alloc(4096)
    with pytest.raises(ar.InvalidArgumentError, match="8192 bytes past the end of a 4096-byte"):
        backend.copy_h2d_async(np.zeros(4096 * 3, np.uint8), ptr)
    with pytest.raises(ar.InvalidArgumentError, match="past the end"):
        backend.copy_d2h_async(ptr[4000:], np.zeros(200, np.uint8))
    with pytest.raises(ar.InvalidArgumentError):
        backend.memset_async(ptr, 0, 4097)
    with pytest.raises(ar.InvalidArgumentError, match="overlap"):
        backend.copy_d2d_async(ptr, ptr[10:], 100)
    backend.free(ptr)
    with pytest.raises(ar.InvalidArgumentError, match="freed"):
        backend.copy_h2d_async(np.zeros(4, np.uint8), ptr)
    with pytest.raises(ar.InvalidArgumentError, match="freed"):
        backend.free(ptr)


def test_host_buffer_rules(backend: ar.Backend) -> None:
    ptr = backend.alloc(64)
    with pytest.raises(ar.InvalidArgumentError, match="read-only"):
        backend.copy_d2h_async(ptr, b"\x00" * 64)
    with pytest.raises(ar.InvalidArgumentError, match="C-contiguous"):
        backend.copy_h2d_async(np.zeros((8, 16), np.uint8)[:, ::2], ptr)
    with pytest.raises(TypeError):
        backend.copy_h2d_async("not a buffer", ptr)
    with pytest.raises(ar.InvalidArgumentError):
        backend.alloc(0)
    with pytest.raises(TypeError):
        backend.alloc(1.5)  # type: ignore[arg-type]
    assert backend.copy_h2d_async(b"", ptr).done()  # zero bytes: a no-op
    backend.free(ptr)


async def test_pinned_host_memory(backend: ar.Backend) -> None:
    pinned = backend.alloc_host_pinned(1 << 16)
    assert isinstance(pinned, ar.HostBuffer) and pinned.nbytes == 1 << 16
    pinned.view(np.float32)[:] = np.linspace(0, 1, (1 << 16) // 4, dtype=np.float32)
    ptr = backend.alloc(1 << 16)
    await backend.copy_h2d_async(pinned, ptr)
    out = backend.alloc_host_pinned(1 << 16)
    await backend.copy_d2h_async(ptr, out)
    np.testing.assert_array_equal(out, pinned)
    alias = backend.host_ptr_to_device(pinned)
    assert alias.nbytes == pinned.nbytes
    backend.free_host_pinned(pinned)
    with pytest.raises(ar.InvalidArgumentError, match="freed"):
        backend.copy_h2d_async(pinned, ptr)
    with pytest.raises(ar.InvalidArgumentError):
        backend.free_host_pinned(pinned)
    backend.free_host_pinned(out)
    backend.free(ptr)


def test_ledger_reports_sites(backend: ar.Backend) -> None:
    before = backend.live_alloc_count()
    a = backend.alloc(1000)
    b = backend.alloc_managed(2000)
    c = backend.alloc_arena(3000)
    assert backend.live_alloc_count() == before + 3
    assert backend.live_bytes() >= 6000
    sites = [x.site for x in backend.live_allocations()]
    assert all(s.startswith(__file__) for s in sites[-3:]), sites
    report = backend.alloc_report(top_n=5)
    assert "test_memory.py" in report
    backend.free(a)
    backend.free(b)
    backend.free_arena(c)
    assert backend.live_alloc_count() == before
    d = backend.alloc(10)
    assert backend.sweep_unreleased() == 1
    with pytest.raises(ar.InvalidArgumentError):
        backend.free(d)


def test_device_queries(backend: ar.Backend) -> None:
    assert backend.total_memory() > 0
    assert 0 <= backend.device_free_memory() <= backend.total_memory()
    assert backend.sm_count() >= 1
    assert backend.device.name
    backend.bind_to_thread()
