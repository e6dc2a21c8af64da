"""The waiter's completion policy: await-time query, bounded spin, order, errors."""

from __future__ import annotations

import threading
import time

import anyio
import pytest

import aruntime as ar
from aruntime import _waiter
from aruntime._completion import seconds_from_env_us
from aruntime._driver import DriverEvent
from aruntime._exceptions import DriverError

from .helpers import sim_op_latency

pytestmark = pytest.mark.anyio


class _FakeDriver:
    def __init__(self, answers: list[object]) -> None:
        self.answers = answers
        self.queries = 0

    def event_query(self, event: DriverEvent) -> bool:
        self.queries += 1
        answer = self.answers.pop(0) if self.answers else False
        if isinstance(answer, BaseException):
            raise answer
        return bool(answer)


def test_spin_returns_once_done() -> None:
    driver = _FakeDriver([False, False, True])
    assert _waiter._spin(driver, object(), 1.0)  # type: ignore[arg-type]
    assert driver.queries == 3


def test_spin_gives_up_after_its_window() -> None:
    driver = _FakeDriver([])
    start = time.perf_counter()
    assert not _waiter._spin(driver, object(), 0.001)  # type: ignore[arg-type]
    assert driver.queries >= 1
    assert time.perf_counter() - start < 5.0  # bounded, however slow the machine


def test_spin_leaves_an_error_to_event_wait() -> None:
    driver = _FakeDriver([False, DriverError("boom")])
    assert _waiter._spin(driver, object(), 1.0)  # type: ignore[arg-type]


@pytest.mark.parametrize(("raw", "value"), [("", 50.0), ("0", 0.0), ("12.5", 12.5), ("x", 50.0)])
def test_spin_setting(monkeypatch: pytest.MonkeyPatch, raw: str, value: float) -> None:
    monkeypatch.setenv("ARUNTIME_WAITER_SPIN_US", raw)
    assert seconds_from_env_us("ARUNTIME_WAITER_SPIN_US", 50.0) == value * 1e-6


async def test_awaits_finish_in_queue_order() -> None:
    """Awaiting the last op first finishes every earlier one first, in order."""
    gpu = ar.open_backend("cuda-sim")
    stream = gpu.create_stream()
    dev = gpu.alloc(64)
    try:
        order: list[int] = []
        ops = [gpu.memset_async(dev, i & 0xFF, 64, stream=stream) for i in range(200)]
        for i, op in enumerate(ops):
            if not op.subscribe(lambda i=i: order.append(i)):
                order.append(i)
        for op in reversed(ops):
            await op
        assert order == sorted(order)
        assert len(order) == len(ops)
    finally:
        gpu.free(dev)
        stream.close()
        gpu.close()


async def test_await_query_finishes_a_done_op_here() -> None:
    gpu = ar.open_backend("cuda-sim")
    stream = gpu.create_stream()
    dev = gpu.alloc(64)
    try:
        await gpu.memset_async(dev, 0, 64, stream=stream)
        waiter = stream.state.waiter
        assert waiter is not None
        for _ in range(50):
            with sim_op_latency("cuda-sim", 500):  # pending when handed to the waiter
                op = gpu.memset_async(dev, 1, 64, stream=stream)
            while not op.done():
                waiter.finish_ready(op)  # the thread or this call finishes it
                await anyio.sleep(0)
            await op
    finally:
        gpu.free(dev)
        stream.close()
        gpu.close()


async def test_done_polled_from_a_blocked_loop_still_finishes() -> None:
    """The waiter's wake-up is deferred to the end of the loop step; done() kicks it."""
    gpu = ar.open_backend("cuda-sim")
    stream = gpu.create_stream()
    dev = gpu.alloc(64)
    try:
        with sim_op_latency("cuda-sim", 2000):  # pending when handed to the waiter
            await gpu.memset_async(dev, 0, 64, stream=stream)  # the waiter thread exists, parked
            op = gpu.memset_async(dev, 1, 64, stream=stream)
        deadline = time.monotonic() + 30.0
        while not op.done() and time.monotonic() < deadline:
            time.sleep(0.001)  # the loop never gets to run its deferred callbacks
        assert op.done()
    finally:
        gpu.free(dev)
        stream.close()
        gpu.close()


def test_ops_left_behind_by_a_finished_loop_still_finish() -> None:
    import asyncio

    gpu = ar.open_backend("cuda-sim")
    stream = gpu.create_stream()
    dev = gpu.alloc(64)
    try:

        async def enqueue_only() -> list[ar.Completion]:
            await gpu.memset_async(dev, 0, 64, stream=stream)
            return [gpu.memset_async(dev, i, 64, stream=stream) for i in range(8)]

        loop = asyncio.new_event_loop()
        try:
            with sim_op_latency("cuda-sim", 2000):  # pending when handed to the waiter
                ops = loop.run_until_complete(enqueue_only())
        finally:
            loop.close()  # drops the deferred wake-up if it has not run
        for op in ops:
            op.wait(timeout=30.0)
        assert all(op.done() for op in ops)
    finally:
        gpu.free(dev)
        stream.close()
        gpu.close()


class _HeldDriver:
    """Event "held" stays pending until ``go`` is set; every other event is passed."""

    def __init__(self) -> None:
        self.go = threading.Event()

    def event_query(self, event: DriverEvent) -> bool:
        return event != "held" or self.go.is_set()

    def event_wait(self, event: DriverEvent) -> None:
        if event == "held":
            self.go.wait(30)


def test_an_op_passed_at_submit_is_left_to_queue_behind_one_being_finished() -> None:
    """``passed`` reads the queue without the lock: while the thread holds an op it
    has taken off the queue, a later op must queue behind it, not finish first."""
    from aruntime._completion import Completion

    driver = _HeldDriver()
    waiter = _waiter.StreamWaiter(driver, "t")  # type: ignore[arg-type]
    first, second = Completion("first"), Completion("second")
    order: list[str] = []
    first.subscribe(lambda: order.append("first"))
    second.subscribe(lambda: order.append("second"))
    try:
        waiter.submit("held", first, None)  # type: ignore[arg-type]
        deadline = time.monotonic() + 30
        while waiter._queue and time.monotonic() < deadline:  # the thread takes it
            time.sleep(0.001)
        assert not waiter._queue and not first.done()
        assert not waiter.passed("next")  # type: ignore[arg-type]
        waiter.submit("next", second, None)  # type: ignore[arg-type]
        assert not second.done()
        driver.go.set()
        assert second.wait(30) is None
    finally:
        driver.go.set()
        waiter.close()
        waiter.join(30)
    assert order == ["first", "second"]


def test_an_idle_waiter_passes_a_done_op_and_refuses_once_closing() -> None:
    driver = _HeldDriver()
    waiter = _waiter.StreamWaiter(driver, "t")  # type: ignore[arg-type]
    assert waiter.passed("done")  # type: ignore[arg-type]
    assert not waiter.passed("held")  # type: ignore[arg-type]
    assert waiter.settle("done", None, "op") is None  # type: ignore[arg-type]
    waiter.close()
    with pytest.raises(ar.AruntimeError, match="closing"):
        waiter.passed("done")  # type: ignore[arg-type]
