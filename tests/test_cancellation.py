"""Cancelling awaits at random points: results stay right, nothing freed early or leaked.

The pattern of httpx's tests/test_cancellations.py: a deliberately slow fake
(the threaded mock, whose ops take real time), ``move_on_after`` with random
small timeouts, then assertions that nothing leaked.
"""

from __future__ import annotations

import gc
import math
import random
import threading
import weakref
from collections.abc import Iterator

import anyio
import numpy as np
import pytest

import aruntime as ar

from .helpers import Gate, thread_count

pytestmark = pytest.mark.anyio

N = 256  # bytes per slot


@pytest.fixture
def slow() -> Iterator[ar.Backend]:
    baseline = thread_count()
    gpu = ar.open_backend("mock", latency=0.0002)
    try:
        yield gpu
    finally:
        gpu.close()
        assert not [t for t in threading.enumerate() if t.name.startswith("aruntime-")]
        assert thread_count() <= baseline, threading.enumerate()


def _pattern(i: int) -> np.ndarray:
    return ((np.arange(N) + i * 31) % 251).astype(np.uint8)


async def test_random_cancellation_of_many_copies(slow: ar.Backend) -> None:
    gpu = slow
    rng = random.Random(1234)
    streams = [gpu.create_stream() for _ in range(3)]
    ops = 300
    ptrs = [gpu.alloc(N) for _ in range(ops)]
    src_refs: list[weakref.ref[np.ndarray]] = []
    cancelled = finished = 0

    async def one(i: int) -> None:
        nonlocal cancelled, finished
        src = _pattern(i)
        src_refs.append(weakref.ref(src))
        c = gpu.copy_h2d_async(src, ptrs[i], stream=streams[i % 3])
        del src  # only the Completion keeps the host buffer now
        with anyio.move_on_after(rng.choice([0, 0, 1e-5, 1e-4, 5e-4, 2e-3, math.inf])) as scope:
            await c
        if scope.cancelled_caught:
            cancelled += 1
        else:
            finished += 1
            assert c.done()

    async with anyio.create_task_group() as tg:
        for i in range(ops):
            tg.start_soon(one, i)
            if i % 16 == 0:
                await anyio.sleep(0)
    gc.collect()
    # Every source still referenced belongs to a copy that has not finished yet.
    assert cancelled > 0 and finished > 0, (cancelled, finished)
    for s in streams:
        await s
    gc.collect()
    assert all(r() is None for r in src_refs), "a finished op kept its host buffer"
    # Every copy ran to completion, the abandoned ones included.
    for i, p in enumerate(ptrs):
        out = await gpu.copy_d2h_async(p, np.empty(N, np.uint8), stream=streams[i % 3])
        np.testing.assert_array_equal(out, _pattern(i))
        gpu.free(p)
    for s in streams:
        s.close()
    stats = gpu.statistics()
    assert stats.live_allocations == 0 and stats.pending_ops == 0


async def test_cancelled_ops_keep_host_buffers_until_the_device_is_done(slow: ar.Backend) -> None:
    gpu = slow
    gate = Gate(gpu)
    s = gpu.create_stream()
    gate.launch(stream=s)  # everything queued after this is still pending
    ptr = gpu.alloc(N)
    refs: list[weakref.ref[object]] = []
    for i in range(20):
        src = _pattern(i)
        dst = np.zeros(N, np.uint8)
        refs += [weakref.ref(src), weakref.ref(dst)]
        h2d = gpu.copy_h2d_async(src, ptr, stream=s)
        d2h = gpu.copy_d2h_async(ptr, dst, stream=s)
        for c in (h2d, d2h):
            with anyio.move_on_after(0):
                await c
            assert not c.done()
        del src, dst, h2d, d2h, c  # the caller lets go of everything
    gc.collect()
    assert all(r() is not None for r in refs), "a pending op's host buffer was collected"
    gpu.free(ptr)  # freed while the device still uses it: the release is deferred
    assert gpu.driver.calls("free") == []
    assert gpu.statistics().pending_ops > 0
    gate.open()
    await s
    gc.collect()
    assert all(r() is None for r in refs), "host buffers outlived their ops"
    assert len(gpu.driver.calls("free")) == 1
    s.close()


async def test_cancelled_pipelines_leave_correct_results(slow: ar.Backend) -> None:
    gpu = slow
    rng = random.Random(99)
    kern = gpu.kernel(gpu.builtin_module(), "scale_f32")
    n = 64
    jobs = 40
    streams = [gpu.create_stream() for _ in range(4)]
    bufs = [gpu.alloc(n * 4) for _ in range(jobs)]
    outs = [np.zeros(n, np.float32) for _ in range(jobs)]

    async def pipeline(i: int) -> None:
        s = streams[i % 4]
        host = np.full(n, i, np.float32)
        with anyio.move_on_after(rng.random() * 2e-3):
            await gpu.copy_h2d_async(host, bufs[i], stream=s)
            await gpu.launch(kern, 1, 64, [np.uint32(n), np.float32(2), bufs[i]], stream=s)
            await gpu.copy_d2h_async(bufs[i], outs[i], stream=s)
            return
        # Cancelled somewhere in the middle: finish the rest without waiting
        # on what already ran (re-enqueueing is idempotent for this job).
        gpu.copy_h2d_async(host, bufs[i], stream=s)
        gpu.launch(kern, 1, 64, [np.uint32(n), np.float32(2), bufs[i]], stream=s)
        gpu.copy_d2h_async(bufs[i], outs[i], stream=s)

    async with anyio.create_task_group() as tg:
        for i in range(jobs):
            tg.start_soon(pipeline, i)
    for s in streams:
        await s
        s.close()
    for i in range(jobs):
        np.testing.assert_array_equal(outs[i], np.full(n, 2 * i, np.float32))
        gpu.free(bufs[i])
    assert gpu.statistics().live_allocations == 0


async def test_cancelled_synchronize_and_event_waits(slow: ar.Backend) -> None:
    gpu = slow
    gate = Gate(gpu)
    s = gpu.create_stream()
    ev = gpu.create_event()
    gate.launch(stream=s)
    gpu.record_event(ev, s)
    for awaitable in (lambda: gpu.synchronize(s), lambda: s, lambda: ev):
        with anyio.move_on_after(0.001) as scope:
            await awaitable()
        assert scope.cancelled_caught
    assert not gpu.event_query(ev)
    gate.open()
    await ev
    assert gpu.event_query(ev)
    await s
    ev.close()
    s.close()


async def test_async_with_exit_cancelled_still_closes() -> None:
    gpu = ar.open_backend("mock", latency=0.0002)
    gate = Gate(gpu)
    gate.launch()
    # close() frees the allocation left live, and warns that it did.
    with pytest.warns(ResourceWarning, match="still live"), anyio.move_on_after(0.01) as scope:
        async with gpu:
            ptr = gpu.alloc(8)
            gpu.memset_async(ptr, 1, 8)
            threading.Timer(0.05, gate.open).start()  # close() waits for the device
    assert scope.cancelled_caught
    assert gpu.closed
    assert gpu.live_alloc_count() == 0


async def test_async_with_exit_awaits_closed_streams_without_blocking() -> None:
    gpu = ar.open_backend("mock", latency=0.0)
    gate = Gate(gpu)
    exiting = False
    ticks_while_exiting = 0

    async def ticker() -> None:
        # Opens the gate only after running during the exit: if the exit
        # blocked the loop, this would never run (a 10 s timer then rescues it).
        nonlocal ticks_while_exiting
        while True:
            if exiting:
                ticks_while_exiting += 1
                if ticks_while_exiting == 5:
                    gate.open()
            await anyio.sleep(0)

    rescue = threading.Timer(10, gate.open)
    rescue.start()
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(ticker)
            async with gpu:
                s = gpu.create_stream()
                gate.launch(stream=s)
                s.close()  # still draining when the block ends
                exiting = True
            assert ticks_while_exiting >= 5
            tg.cancel_scope.cancel()
    finally:
        rescue.cancel()
    assert gpu.closed
