"""Typed device arrays where a user expects them: slicing, copies, launches, numpy (issue 22)."""

from __future__ import annotations

import anyio
import numpy as np
import pytest

import aruntime as ar

pytestmark = pytest.mark.anyio


def test_basic_slicing_returns_views_of_the_same_memory(backend: ar.Backend) -> None:
    host = np.arange(24, dtype=np.float32).reshape(4, 6)
    with backend.array_from_numpy(host) as a:
        rows = a[1:3]
        assert rows.shape == (2, 6) and rows.ptr.alloc_id == a.ptr.alloc_id
        assert rows.ptr.address == a.ptr.address + 6 * 4
        np.testing.assert_array_equal(rows.to_numpy(), host[1:3])
        np.testing.assert_array_equal(a[2].to_numpy(), host[2])
        np.testing.assert_array_equal(a[-1, 1:5:2].to_numpy(), host[-1, 1:5:2])
        np.testing.assert_array_equal(a[:, 3].to_numpy(), host[:, 3])
        np.testing.assert_array_equal(a[..., ::3].to_numpy(), host[..., ::3])
        np.testing.assert_array_equal(a[1:3][1].to_numpy(), host[2])
        assert a[4:].shape == (0, 6) and a[4:].to_numpy().shape == (0, 6)
        # A write through the view lands in the parent.
        backend.copy_h2d(np.full(6, -1, np.float32), a[3])
        assert (a.to_numpy()[3] == -1).all()
        for bad, message in (
            (np.s_[4], "out of bounds"),
            (np.s_[0, 0, 0], "too many indices"),
            (np.s_[::-1], "step must be positive"),
            (np.s_[[0, 1]], "basic indexing"),
        ):
            with pytest.raises(IndexError, match=message):
                a[bad]


def test_a_view_keeps_its_owning_array_alive(backend: ar.Backend) -> None:
    a = backend.array_from_numpy(np.arange(8, dtype=np.int32))
    view = a[2:4]
    del a  # the view holds the owner: no ResourceWarning, no free underneath it
    np.testing.assert_array_equal(view.to_numpy(), [2, 3])
    assert view._base is not None
    view._base.close()


async def test_copies_accept_a_device_array(backend: ar.Backend) -> None:
    host = np.arange(12, dtype=np.float32).reshape(3, 4)
    # array_from_numpy and to_numpy block: off the loop, as sync code calls them.
    upload, run = backend.array_from_numpy, anyio.to_thread.run_sync
    with await run(upload, np.zeros((3, 4), np.float32)) as a:
        await backend.copy_h2d_async(host, a)
        out = np.empty((3, 4), np.float32)
        assert await backend.copy_d2h_async(a, out) is out
        np.testing.assert_array_equal(out, host)
        raw = np.empty(a.nbytes, np.uint8)  # raw bytes of the same size are fine
        await backend.copy_d2h_async(a, raw)
        assert raw.tobytes() == host.tobytes()
        row = np.empty(4, np.float32)
        await backend.copy_d2h_async(a[1], row)
        np.testing.assert_array_equal(row, host[1])
        with await run(upload, np.zeros((3, 4), np.float32)) as b:
            await backend.copy_d2d_async(a, b, a.nbytes)
            await backend.memset_async(a, 0, a.nbytes)
            np.testing.assert_array_equal(await run(b.to_numpy), host)
            assert not (await run(a.to_numpy)).any()


def test_a_copy_names_a_dtype_or_shape_mismatch(backend: ar.Backend) -> None:
    with backend.array_from_numpy(np.zeros((3, 4), np.float32)) as a:
        with pytest.raises(ar.InvalidArgumentError, match=r"dtype mismatch.*float32.*float64"):
            backend.copy_d2h_async(a, np.empty((3, 4), np.float64))
        with pytest.raises(ar.InvalidArgumentError, match="dtype mismatch"):
            backend.copy_h2d_async(np.ones((3, 4)), a)
        with pytest.raises(ar.InvalidArgumentError, match=r"shape mismatch.*\(3, 4\).*\(4, 3\)"):
            backend.copy_d2h_async(a, np.empty((4, 3), np.float32))
        with pytest.raises(ar.InvalidArgumentError, match=r"size mismatch.*48 bytes"):
            backend.copy_d2h_async(a, bytearray(40))
        with pytest.raises(ar.InvalidArgumentError, match="strided DeviceArray"):
            backend.copy_d2h_async(a[:, ::2], np.empty((3, 2), np.float32))
        with pytest.raises(TypeError, match="DevicePtr or a DeviceArray, got str"):
            backend.copy_d2h_async("a", np.empty(4, np.float32))  # type: ignore[arg-type]


def test_launch_takes_a_device_array(backend: ar.Backend) -> None:
    kernel = backend.kernel(backend.builtin_module("vector_ops"), "scale_f32")
    with backend.array_from_numpy(np.arange(256, dtype=np.float32)) as a:
        backend.launch(kernel, 1, 256, [np.uint32(256), np.float32(2), a]).wait()
        np.testing.assert_array_equal(a.to_numpy(), np.arange(256, dtype=np.float32) * 2)


def test_numpy_does_not_silently_wrap_device_memory(backend: ar.Backend) -> None:
    # The mock too: its memory is numpy's, but a test must not come to rely on it.
    with backend.array_from_numpy(np.arange(4, dtype=np.float32)) as a:
        with pytest.raises(TypeError, match=r"to_numpy\(\)"):
            np.asarray(a)
        with pytest.raises(TypeError, match="copy_d2h_async"):
            np.array(a)


def test_device_ptr_arithmetic_and_slices_say_what_to_use(backend: ar.Backend) -> None:
    p = backend.alloc(64)
    with pytest.raises(TypeError, match=r"use p\.offset\(8\)"):
        p + 8  # type: ignore[operator]
    with pytest.raises(TypeError, match=r"use p\.offset\(8\)"):
        8 + p  # type: ignore[operator]
    with pytest.raises(TypeError, match="offset"):
        p - 8  # type: ignore[operator]
    for bad in (np.s_[8:100], np.s_[65:], np.s_[:65], np.s_[-65:]):
        with pytest.raises(ar.InvalidArgumentError, match="outside this 64-byte view"):
            p[bad]
    assert p[8:64].nbytes == 56 and p[-8:].nbytes == 8 and p[64:].nbytes == 0
    assert p[10:5].nbytes == 0
    backend.free(p)


def test_out_of_memory_names_the_request_and_what_is_free(backend: ar.Backend) -> None:
    if backend.name in ("cuda", "levelzero"):
        pytest.skip("filling a real device's memory is not a conformance test")
    total = backend.total_memory()
    want = total // 2 + 4096  # within one allocation's limit; two do not fit
    keep = backend.alloc(want)  # the drivers back memory lazily: nothing is touched
    try:
        with pytest.raises(ar.OutOfMemoryError) as caught:
            backend.alloc(want)
        text = str(caught.value)
        assert f"{want} bytes" in text and "requested" in text, text
        assert f"of {total} free" in text, text
    finally:
        backend.free(keep)
