"""aruntime.gather: several Completions and coroutines awaited together."""

from __future__ import annotations

import inspect
import sys

import anyio
import anyio.lowlevel
import numpy as np
import pytest

import aruntime as ar

from .helpers import Gate

pytestmark = pytest.mark.anyio


async def test_results_in_argument_order(backend: ar.Backend) -> None:
    host = [np.full(64, i, dtype=np.uint8) for i in range(3)]
    ptrs = [backend.alloc(64) for _ in host]
    streams = [backend.create_stream() for _ in host]
    uploads = zip(host, ptrs, streams, strict=True)
    await ar.gather(*(backend.copy_h2d_async(h, p, stream=s) for h, p, s in uploads))

    async def label(value: str) -> str:
        await anyio.lowlevel.checkpoint()
        return value

    outs = [np.empty(64, dtype=np.uint8) for _ in host]
    results = await ar.gather(
        backend.copy_d2h_async(ptrs[2], outs[2], stream=streams[2]),
        label("first coroutine"),
        backend.memset_async(ptrs[0], 7, 64, stream=streams[0]),
        backend.copy_d2h_async(ptrs[1], outs[1], stream=streams[1]),
        label("second coroutine"),
    )
    assert results[0] is outs[2] and results[3] is outs[1]
    assert results[1:3] == ["first coroutine", None]
    assert results[4] == "second coroutine"
    np.testing.assert_array_equal(outs[2], host[2])
    np.testing.assert_array_equal(outs[1], host[1])
    for p, s in zip(ptrs, streams, strict=True):
        backend.free(p)
        s.close()


async def test_empty_gather_is_a_checkpoint() -> None:
    with anyio.CancelScope() as scope:
        scope.cancel()
        assert await ar.gather() == []
        pytest.fail("gather() did not checkpoint")  # pragma: no cover
    assert scope.cancelled_caught


async def test_failure_waits_for_the_others(async_mock_backend: ar.Backend) -> None:
    gpu = async_mock_backend
    stream = gpu.create_stream()
    gate = Gate(gpu)
    held = gate.launch(stream)
    result = np.zeros(16, dtype=np.uint8)
    dptr = gpu.alloc(16)
    gpu.memset_async(dptr, 9, 16, stream=stream)
    copy = gpu.copy_d2h_async(dptr, result, stream=stream)  # queued behind the gate
    returned = anyio.Event()

    async def fails_at_once() -> None:
        raise ValueError("bad request")

    async def run() -> None:
        with pytest.raises(ValueError, match="bad request"):
            await ar.gather(held, fails_at_once(), copy)
        returned.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        await anyio.wait_all_tasks_blocked()
        # The coroutine failed long ago, but the copy into `result` is still
        # queued: gather must not hand control back yet.
        assert not returned.is_set()
        assert not copy.done()
        gate.open()
    assert copy.done() and held.done()
    assert (result == 9).all()
    gpu.free(dptr)
    stream.close()


async def test_first_error_is_the_earliest_argument(mock_backend: ar.Backend) -> None:
    ptr, elsewhere = mock_backend.alloc(16), mock_backend.alloc(16)
    side = mock_backend.create_stream()  # ops queued after it on its stream would fail too
    mock_backend.driver.inject_fault("memset", ar.NotSupportedError)
    failed_op = mock_backend.memset_async(elsewhere, 1, 16, stream=side)
    later = anyio.Event()

    async def slow_failure() -> None:
        await later.wait()
        raise KeyError("argument 0")

    async def quick_failure() -> None:
        later.set()
        raise ValueError("argument 2")

    with pytest.raises(KeyError, match="argument 0") as info:
        await ar.gather(slow_failure(), mock_backend.memset_async(ptr, 2, 16), quick_failure())
    if sys.version_info >= (3, 11):
        assert info.value.__notes__ == ["aruntime.gather: 1 other awaitable(s) also failed"]

    with pytest.raises(ar.NotSupportedError, match="injected"):
        await ar.gather(mock_backend.memset_async(ptr, 3, 16), failed_op)
    # gather observed the failed op: synchronize() does not raise it again.
    await mock_backend.synchronize(side)
    side.close()
    mock_backend.free(ptr)
    mock_backend.free(elsewhere)


async def test_cancelling_gather(async_mock_backend: ar.Backend) -> None:
    gpu = async_mock_backend
    stream = gpu.create_stream()
    gate = Gate(gpu)
    held = gate.launch(stream)
    host = np.zeros(1 << 16, dtype=np.uint8)
    dptr = gpu.alloc(host.nbytes)
    copy = gpu.copy_d2h_async(dptr, host, stream=stream)
    ended: list[str] = []

    async def sleeper() -> None:
        try:
            await anyio.sleep_forever()
        finally:
            ended.append("sleeper")

    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as tg:
            tg.start_soon(ar.gather, held, sleeper(), copy)
            await anyio.wait_all_tasks_blocked()
            scope.cancel()
    assert scope.cancelled_caught
    assert ended == ["sleeper"]  # the coroutine was cancelled before gather returned
    # The device ops went on: the copy still lands once the stream moves.
    assert not copy.done()
    gate.open()
    assert await copy is host
    gpu.free(dptr)
    stream.close()


async def test_rejects_what_is_not_awaitable(mock_backend: ar.Backend) -> None:
    async def work() -> None:
        pass

    pending = work()
    with pytest.raises(TypeError, match=r"argument 1 is a method.*call it: gather\("):
        await ar.gather(pending, mock_backend.copy_d2h_async)
    # gather closed the coroutine it will never run, so nothing warns about it.
    assert inspect.getcoroutinestate(pending) == inspect.CORO_CLOSED
    with pytest.raises(TypeError, match="argument 0 is a int"):
        await ar.gather(3)


async def test_task_group_start_soon_points_at_gather(mock_backend: ar.Backend) -> None:
    dptr = mock_backend.alloc(8)
    out = bytearray(8)
    async with anyio.create_task_group() as tg:
        with pytest.raises(TypeError, match=r"aruntime\.gather.*not a coroutine"):
            tg.start_soon(mock_backend.copy_d2h_async, dptr, out)  # type: ignore[arg-type]
    # What to write instead: gather is an async function, so a task group runs it.
    await mock_backend.memset_async(dptr, 5, 8)
    async with anyio.create_task_group() as tg:
        tg.start_soon(ar.gather, mock_backend.copy_d2h_async(dptr, out))
    assert out == bytes([5]) * 8
    mock_backend.free(dptr)
