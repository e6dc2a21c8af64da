"""Completion: awaiting under asyncio and trio, checkpoints, wait(), errors, loops."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Iterator

import anyio
import numpy as np
import pytest

import aruntime as ar

from .helpers import Gate

pytestmark = pytest.mark.anyio

SLOW = 0.05  # seconds per op on the threaded mock where an await must really wait


@pytest.fixture
def slow_backend() -> Iterator[ar.Backend]:
    gpu = ar.open_backend("mock", latency=SLOW)
    try:
        yield gpu
    finally:
        gpu.close()


async def test_await_returns_none_and_d2h_returns_destination(
    backend: ar.Backend,
) -> None:
    ptr = backend.alloc(128)
    assert await backend.memset_async(ptr, 7, 128) is None
    dst = bytearray(128)
    assert await backend.copy_d2h_async(ptr, dst) is dst
    assert dst == b"\x07" * 128
    arr = np.zeros(32, np.float32)
    assert await backend.copy_d2h_async(ptr, arr) is arr
    backend.free(ptr)


async def test_born_done_is_a_checkpoint(mock_backend: ar.Backend) -> None:
    ptr = mock_backend.alloc(16)
    done = mock_backend.memset_async(ptr, 1, 16)
    assert done.done()
    # A cancelled scope around an await of a done Completion must still raise:
    # the await is a checkpoint (trio's rule; anyio enforces it on asyncio too).
    reached = False
    with anyio.CancelScope() as scope:
        scope.cancel()
        await done
        reached = True  # pragma: no cover
    assert not reached
    assert scope.cancelled_caught
    # Other tasks get to run during an await of a done Completion.
    ran: list[int] = []

    async def other() -> None:
        ran.append(1)

    async with anyio.create_task_group() as tg:
        tg.start_soon(other)
        for _ in range(3):
            await done
        assert ran == [1]
    mock_backend.free(ptr)


async def test_born_done_yields_to_other_asyncio_tasks(mock_backend: ar.Backend) -> None:
    ptr = mock_backend.alloc(16)
    order: list[str] = []

    async def main() -> None:
        async def other() -> None:
            order.append("other")

        task = asyncio.ensure_future(other())
        await mock_backend.memset_async(ptr, 0, 16)
        order.append("after await")
        await task

    # A plain asyncio run (no anyio wrapper) sees the checkpoint too.
    await anyio.to_thread.run_sync(asyncio.run, main())
    assert order == ["other", "after await"]
    mock_backend.free(ptr)


async def test_pending_await_really_waits_and_cancels(slow_backend: ar.Backend) -> None:
    ptr = slow_backend.alloc(64)
    gate = Gate(slow_backend)
    gate.launch()
    c = slow_backend.memset_async(ptr, 3, 64)
    assert not c.done()
    with anyio.move_on_after(SLOW / 10) as scope:
        await c
    assert scope.cancelled_caught
    assert not c.done()  # cancelling the await abandoned the wait only
    gate.open()
    await c
    assert c.done() and c.exception() is None
    assert await slow_backend.copy_d2h_async(ptr, bytearray(64)) == b"\x03" * 64
    slow_backend.free(ptr)


def test_wait_and_timeout(slow_backend: ar.Backend) -> None:
    ptr = slow_backend.alloc(64)
    gate = Gate(slow_backend)
    gate.launch()
    pending = slow_backend.memset_async(ptr, 1, 64)
    with pytest.raises(TimeoutError, match="memset_async"):
        pending.wait(timeout=0.01)
    with pytest.raises(TimeoutError):
        pending.wait(timeout=0)
    assert not pending.done()
    with pytest.raises(ar.AruntimeError, match="pending"):
        pending.exception()
    assert "pending" in repr(pending)
    assert not pending._callbacks  # a timed-out wait unregisters itself
    gate.open()
    assert pending.wait(timeout=30) is None
    assert pending.done() and "done" in repr(pending)
    dst = np.zeros(64, np.uint8)
    assert slow_backend.copy_d2h_async(ptr, dst).wait() is dst
    assert (dst == 1).all()
    slow_backend.free(ptr)


@pytest.mark.parametrize("timeout", [-1, -0.5, float("nan"), True, "1", [1]])
def test_wait_rejects_bad_timeouts(slow_backend: ar.Backend, timeout: object) -> None:
    ptr = slow_backend.alloc(8)
    c = slow_backend.memset_async(ptr, 1, 8)
    with pytest.raises((TypeError, ar.InvalidArgumentError)):
        c.wait(timeout)  # type: ignore[arg-type]
    c.wait()
    slow_backend.free(ptr)


@pytest.mark.parametrize("timeout", [float("inf"), 1e300, 10**30])
def test_wait_with_huge_timeout_means_forever(slow_backend: ar.Backend, timeout: float) -> None:
    ptr = slow_backend.alloc(8)
    assert slow_backend.memset_async(ptr, 1, 8).wait(timeout) is None
    slow_backend.free(ptr)


async def test_exception_and_failed_await(mock_backend: ar.Backend) -> None:
    ptr = mock_backend.alloc(16)
    mock_backend.driver.inject_fault("memset", ar.DriverError)
    c = mock_backend.memset_async(ptr, 1, 16)
    assert c.done()
    assert "failed" in repr(c)
    err = c.exception()
    assert isinstance(err, ar.DriverError) and err.backend == "mock"
    with pytest.raises(ar.DriverError, match="injected"):
        await c
    with pytest.raises(ar.DriverError):
        await anyio.to_thread.run_sync(c.wait)  # off the loop: wait() blocks
    # It was observed, so synchronize() does not raise it again.
    await mock_backend.synchronize()
    mock_backend.free(ptr)


async def test_failed_op_after_enqueue_raises_from_await(slow_backend: ar.Backend) -> None:
    ptr = slow_backend.alloc(16)
    slow_backend.driver.inject_fault("copy_h2d", ar.OutOfMemoryError)
    c = slow_backend.copy_h2d_async(bytes(16), ptr)
    ok = slow_backend.memset_async(ptr, 2, 16)
    with pytest.raises(ar.OutOfMemoryError):
        await c
    assert isinstance(c.exception(), MemoryError)
    # Stream order: queued after the failed copy, the memset fails too, naming it.
    with pytest.raises(ar.OutOfMemoryError, match="the earlier op copy_h2d_async failed"):
        await ok
    # Queued once the failure was seen, an op starts clean.
    await slow_backend.memset_async(ptr, 3, 16)
    await slow_backend.synchronize()
    slow_backend.free(ptr)


@pytest.mark.parametrize("latency", [None, SLOW])
async def test_unawaited_error_raised_by_next_synchronize(
    latency: float | None, caplog: pytest.LogCaptureFixture
) -> None:
    gpu = ar.open_backend("mock") if latency is None else ar.open_backend("mock", latency=latency)
    try:
        ptr = gpu.alloc(32)
        s = gpu.create_stream()
        # Faults hit the next op of a kind *executed*; use a kind only ``s`` runs.
        gpu.driver.inject_fault("copy_h2d", ar.NotSupportedError)
        gpu.copy_h2d_async(bytes(32), ptr, stream=s)  # nobody awaits this
        other = gpu.alloc(32)  # not `ptr`: two unordered streams writing it would race
        gpu.memset_async(other, 2, 32)  # the default stream is unaffected
        await gpu.synchronize()
        with (
            caplog.at_level(logging.ERROR, logger="aruntime"),
            pytest.raises(ar.NotSupportedError, match="injected"),
        ):
            await gpu.synchronize(s)
        assert any("nobody awaited" in r.getMessage() for r in caplog.records)
        await s  # raised once, then forgotten
        s.close()
        gpu.free(ptr)
        gpu.free(other)
    finally:
        gpu.close()


@pytest.mark.parametrize("latency", [None, SLOW])
def test_unawaited_error_raised_by_close(
    latency: float | None, caplog: pytest.LogCaptureFixture
) -> None:
    gpu = ar.open_backend("mock") if latency is None else ar.open_backend("mock", latency=latency)
    ptr = gpu.alloc(32)
    gpu.driver.inject_fault("launch", ar.DriverError)
    kern = gpu.kernel(gpu.builtin_module(), "fill_f32")
    gpu.launch(kern, 1, 8, [np.uint32(8), np.float32(1), ptr])
    with (
        caplog.at_level(logging.ERROR, logger="aruntime"),
        pytest.raises(ar.DriverError, match="injected"),
    ):
        gpu.close()
    assert any("nobody awaited" in r.getMessage() for r in caplog.records)
    assert gpu.closed
    gpu.close()  # idempotent, and the error is not raised twice
    assert gpu.live_alloc_count() == 0


async def test_awaiting_from_several_tasks(slow_backend: ar.Backend) -> None:
    ptr = slow_backend.alloc(16)
    c = slow_backend.memset_async(ptr, 9, 16)
    woke: list[int] = []

    async def waiter(i: int) -> None:
        await c
        woke.append(i)

    async with anyio.create_task_group() as tg:
        for i in range(5):
            tg.start_soon(waiter, i)
    assert sorted(woke) == list(range(5))
    slow_backend.free(ptr)


async def test_cancelled_task_leaves_no_callback(slow_backend: ar.Backend) -> None:
    ptr = slow_backend.alloc(16)
    gate = Gate(slow_backend)
    gate.launch()
    c = slow_backend.memset_async(ptr, 9, 16)
    for _ in range(5):
        with anyio.move_on_after(0.001):
            await c
    assert not c.done()
    assert len(c._callbacks) == 0  # each abandoned wait unregistered its wake-up
    gate.open()
    await c
    slow_backend.free(ptr)


def test_several_loops_in_several_threads_await_one_backend() -> None:
    import trio

    gpu = ar.open_backend("mock", latency=0.002)
    n = 64
    ptrs = [gpu.alloc(n) for _ in range(4)]
    streams = [gpu.create_stream() for _ in range(4)]
    errors: list[BaseException] = []
    results: dict[str, list[bytes]] = {}

    async def work(tag: str, idx: list[int]) -> None:
        out = []
        for rnd in range(10):
            for i in idx:
                value = (rnd * 7 + i) % 256
                await gpu.memset_async(ptrs[i], value, n, stream=streams[i])
                got = await gpu.copy_d2h_async(ptrs[i], bytearray(n), stream=streams[i])
                out.append(bytes(got))
                assert got == bytes([value]) * n
        results[tag] = out

    def run(tag: str, runner: str, idx: list[int]) -> None:
        try:
            if runner == "asyncio":
                asyncio.run(work(tag, idx))
            else:
                trio.run(work, tag, idx)
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    threads = [
        threading.Thread(target=run, args=("a", "asyncio", [0, 1])),
        threading.Thread(target=run, args=("b", "trio", [2])),
        threading.Thread(target=run, args=("c", "trio", [3])),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    try:
        assert not errors, errors
        assert set(results) == {"a", "b", "c"}
    finally:
        for s in streams:
            s.close()
        for p in ptrs:
            gpu.free(p)
        gpu.close()


def test_one_completion_awaited_from_asyncio_and_trio_threads() -> None:
    import trio

    gpu = ar.open_backend("mock", latency=0.1)
    ptr = gpu.alloc(8)
    c = gpu.memset_async(ptr, 4, 8)
    got: list[str] = []

    async def wait_for(tag: str) -> None:
        await c
        got.append(tag)

    ta = threading.Thread(target=asyncio.run, args=(wait_for("asyncio"),))
    tb = threading.Thread(target=trio.run, args=(wait_for, "trio"))
    ta.start()
    tb.start()
    ta.join(30)
    tb.join(30)
    assert sorted(got) == ["asyncio", "trio"]
    gpu.free(ptr)
    gpu.close()


def test_closed_asyncio_loop_while_op_pending_does_not_crash_the_waiter(
    caplog: pytest.LogCaptureFixture,
) -> None:
    baseline = threading.active_count()
    gpu = ar.open_backend("mock", latency=0.2)
    ptr = gpu.alloc(8)
    c = gpu.memset_async(ptr, 5, 8)

    async def await_it() -> None:
        await c

    loop = asyncio.new_event_loop()
    task = loop.create_task(await_it())
    loop.run_until_complete(asyncio.sleep(0.01))  # the task is now parked on the op
    assert not task.done()
    loop.close()  # closed with the task still waiting: nobody will wake it
    with caplog.at_level(logging.DEBUG, logger="aruntime"):
        assert c.wait(timeout=30) is None  # the op still finishes
        gpu.synchronize().wait(timeout=30)
    assert not [r for r in caplog.records if r.name == "aruntime"]
    gpu.free(ptr)
    gpu.close()
    assert threading.active_count() == baseline
    del task


def test_finished_trio_run_while_wake_pending_is_skipped() -> None:
    import trio

    gpu = ar.open_backend("mock", latency=0.1)
    ptr = gpu.alloc(8)
    c = gpu.memset_async(ptr, 5, 8)
    tokens = []

    async def grab() -> None:
        token = trio.lowlevel.current_trio_token()
        tokens.append(token)

        def wake() -> None:
            try:
                token.run_sync_soon(lambda: None)
            except trio.RunFinishedError:
                tokens.append("finished")

        c.subscribe(wake)

    trio.run(grab)  # the run ends before the op does
    c.wait(timeout=30)
    # wait() may return as soon as the op is marked finished, while the
    # waiter thread is still running the op's wake-ups.
    deadline = time.monotonic() + 30
    while len(tokens) < 2 and time.monotonic() < deadline:
        time.sleep(0.001)
    assert tokens[-1] == "finished"
    gpu.free(ptr)
    gpu.close()


async def test_capture_completion_raises_capture_error(mock_backend: ar.Backend) -> None:
    s = mock_backend.create_stream()
    ptr = mock_backend.alloc(8)
    with mock_backend.capture(s) as graph:
        c = mock_backend.memset_async(ptr, 1, 8, stream=s)
        zero = mock_backend.memset_async(ptr, 1, 0, stream=s)  # a no-op, still captured
        with pytest.raises(ar.CaptureError):
            mock_backend.synchronize(s)
    assert "captured" in repr(c)
    for comp in (c, zero):
        with pytest.raises(ar.CaptureError):
            await comp
        with pytest.raises(ar.CaptureError):
            await anyio.to_thread.run_sync(comp.wait)  # off the loop: wait() blocks
        with pytest.raises(ar.CaptureError):
            comp.exception()
    graph.close()
    s.close()
    mock_backend.free(ptr)


def test_op_property(mock_backend: ar.Backend) -> None:
    ptr = mock_backend.alloc(8)
    assert mock_backend.memset_async(ptr, 1, 8).op == "memset_async"
    assert mock_backend.copy_d2h_async(ptr, bytearray(8)).op == "copy_d2h_async"
    mock_backend.free(ptr)


async def test_event_recorded_on_a_closed_stream_still_waits(slow_backend: ar.Backend) -> None:
    gpu = slow_backend
    gate = Gate(gpu)
    s = gpu.create_stream()
    gate.launch(stream=s)
    ev = gpu.create_event()
    gpu.record_event(ev, s)
    s.close()  # never blocks: the stream is still draining
    c = gpu.event_synchronize(ev)
    assert not c.done() and not gpu.event_query(ev)
    with anyio.move_on_after(0.01) as scope:
        await ev
    assert scope.cancelled_caught
    gate.open()
    await c
    assert gpu.event_query(ev)
    await ev
    ev.close()


@pytest.mark.parametrize("latency", [None, 0.0])
@pytest.mark.parametrize("observe", [False, True])
def test_unawaited_error_of_a_closed_stream_raised_by_close(
    latency: float | None, observe: bool, caplog: pytest.LogCaptureFixture
) -> None:
    gpu = ar.open_backend("mock") if latency is None else ar.open_backend("mock", latency=latency)
    ptr = gpu.alloc(8)
    s = gpu.create_stream()
    gpu.driver.inject_fault("memset", ar.DriverError)
    c = gpu.memset_async(ptr, 0, 8, stream=s)
    s.close()  # no next synchronize() of s can report it now
    gpu.free(ptr)
    if observe:
        with pytest.raises(ar.DriverError):
            c.wait(30)
        gpu.close()  # seen, so not raised again
        return
    with caplog.at_level(logging.ERROR, logger="aruntime"), pytest.raises(ar.DriverError):
        gpu.close()
    assert any("nobody awaited" in r.getMessage() for r in caplog.records)


async def test_cancelled_synchronize_does_not_swallow_the_error(slow_backend: ar.Backend) -> None:
    gpu = slow_backend
    gate = Gate(gpu)
    s = gpu.create_stream()
    ptr = gpu.alloc(8)
    gate.launch(stream=s)
    gpu.driver.inject_fault("memset", ar.DriverError)
    gpu.memset_async(ptr, 0, 8, stream=s)  # will fail; nobody awaits it
    with anyio.move_on_after(0.01) as scope:
        await s
    assert scope.cancelled_caught
    gate.open()
    with pytest.raises(ar.DriverError, match="injected"):
        await s  # the abandoned synchronize did not consume the error
    await s  # raised once, then it is seen
    s.close()
    gpu.free(ptr)


@pytest.mark.parametrize("latency", [None, 0.0])
async def test_with_block_error_is_not_masked_by_close(
    latency: float | None, caplog: pytest.LogCaptureFixture
) -> None:
    def failing_op(gpu: ar.Backend) -> None:
        gpu.driver.inject_fault("memset", ar.DriverError)
        gpu.memset_async(gpu.alloc(8), 0, 8)  # fails; nobody awaits it

    opts = {} if latency is None else {"latency": latency}
    with caplog.at_level(logging.ERROR, logger="aruntime"):
        with pytest.raises(KeyError), ar.open_backend("mock", **opts) as gpu:
            failing_op(gpu)
            raise KeyError("the caller's own error")
        with pytest.raises(KeyError):
            async with ar.open_backend("mock", **opts) as agpu:
                failing_op(agpu)
                raise KeyError("the caller's own error")
        # Without an error of its own, the block's exit raises the unseen one.
        with pytest.raises(ar.DriverError):
            async with ar.open_backend("mock", **opts) as agpu:
                failing_op(agpu)
    assert sum("nobody awaited" in r.getMessage() for r in caplog.records) >= 3


def test_subscribe_runs_once_when_the_op_finishes(slow_backend: ar.Backend) -> None:
    gpu = slow_backend
    gate = Gate(gpu)
    pending = gate.launch()
    seen: list[str] = []
    assert pending.subscribe(lambda: seen.append("a"))
    dropped = lambda: seen.append("dropped")  # noqa: E731
    assert pending.subscribe(dropped)
    pending.unsubscribe(dropped)
    pending.unsubscribe(dropped)  # again: nothing happens
    assert seen == []
    gate.open()
    pending.wait(30)
    assert seen == ["a"]
    # Finished: nothing to subscribe to, and the function is not called.
    assert not pending.subscribe(lambda: seen.append("late"))
    assert seen == ["a"]
