"""Completion semantics every backend must honour (docs/design.md, "The life of an op")."""

from __future__ import annotations

import gc
import threading

import anyio
import numpy as np
import pytest

import aruntime as ar

pytestmark = pytest.mark.anyio


async def test_await_is_always_a_checkpoint(backend: ar.Backend) -> None:
    ptr = backend.alloc(1 << 16)
    c = backend.memset_async(ptr, 1, 1 << 16)
    with anyio.CancelScope() as scope:
        scope.cancel()
        await c  # done or not, a cancelled scope must raise here
        pytest.fail("awaiting a Completion was not a checkpoint")  # pragma: no cover
    await c
    assert c.done()
    with anyio.CancelScope() as scope:
        scope.cancel()
        await c  # already done: still a checkpoint
        pytest.fail("awaiting a done Completion was not a checkpoint")  # pragma: no cover
    backend.free(ptr)


async def test_cancelled_awaits_do_not_change_results(backend: ar.Backend) -> None:
    n = 1 << 16
    ptrs = [backend.alloc(n) for _ in range(8)]
    outs = [np.zeros(n, np.uint8) for _ in range(8)]
    for i, p in enumerate(ptrs):
        src = np.full(n, i + 1, np.uint8)
        with anyio.move_on_after(0):
            await backend.copy_h2d_async(src, p)
        del src  # the op keeps its source alive
        with anyio.move_on_after(0):
            await backend.copy_d2h_async(p, outs[i])
    gc.collect()
    await backend.synchronize()
    for i, out in enumerate(outs):
        assert (out == i + 1).all()
        backend.free(ptrs[i])


async def test_free_right_after_enqueue_is_safe(backend: ar.Backend) -> None:
    n = 1 << 18
    data = (np.arange(n) % 251).astype(np.uint8)
    a = backend.alloc(n)
    b = backend.alloc(n)
    backend.copy_h2d_async(data, a)
    backend.copy_d2d_async(a, b, n)
    backend.free(a)  # released by the driver only after the copies ran
    out = await backend.copy_d2h_async(b, np.empty(n, np.uint8))
    np.testing.assert_array_equal(out, data)
    backend.free(b)


async def test_closed_stream_finishes_its_work(backend: ar.Backend) -> None:
    n = 1 << 18
    data = (np.arange(n) % 13).astype(np.uint8)
    s = backend.create_stream()
    a = backend.alloc(n)
    out = np.zeros(n, np.uint8)
    ev = backend.create_event()
    backend.copy_h2d_async(data, a, stream=s)
    done = backend.copy_d2h_async(a, out, stream=s)
    backend.record_event(ev, s)
    s.close()  # never blocks
    backend.free(a)  # nor does this pull the memory from under the queued copies
    await ev
    assert done.done()
    await done
    np.testing.assert_array_equal(out, data)
    ev.close()


async def test_callers_memoryview_survives_async_copies(backend: ar.Backend) -> None:
    ptr = backend.alloc(16)
    src = memoryview(bytearray(b"0123456789abcdef"))
    await backend.copy_h2d_async(src, ptr)
    dst = memoryview(bytearray(16))
    assert await backend.copy_d2h_async(ptr, dst) is dst
    assert src.tobytes() == dst.tobytes() == b"0123456789abcdef"
    backend.free(ptr)


async def test_several_tasks_await_one_completion(backend: ar.Backend) -> None:
    ptr = backend.alloc(1 << 16)
    c = backend.memset_async(ptr, 5, 1 << 16)
    woke = []

    async def wait(i: int) -> None:
        await c
        woke.append(i)

    async with anyio.create_task_group() as tg:
        for i in range(4):
            tg.start_soon(wait, i)
    assert sorted(woke) == [0, 1, 2, 3]
    backend.free(ptr)


def test_wait_from_other_threads(backend: ar.Backend) -> None:
    ptr = backend.alloc(1 << 16)
    c = backend.memset_async(ptr, 6, 1 << 16)
    results: list[object] = []
    threads = [threading.Thread(target=lambda: results.append(c.wait(30))) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [None, None, None]
    backend.free(ptr)


async def test_async_with_waits_for_queued_work(backend: ar.Backend) -> None:
    # The fixture's backend is closed by this test; its own teardown then only closes.
    n = 1 << 18
    out = np.zeros(n, np.uint8)
    async with backend:
        a = backend.alloc(n)
        backend.memset_async(a, 9, n)
        backend.copy_d2h_async(a, out)
        backend.free(a)  # released once the queued ops have run
    assert backend.closed
    assert (out == 9).all()
    assert all(w.join(timeout=0) for w in list(backend._state.waiters))  # every waiter ended
