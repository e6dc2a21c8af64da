"""A marker only where a wait needs one (aruntime/_submit.py, AsyncCompletion.run).

The op queued last on a stream keeps no marker until the next op comes or
somebody starts to wait.  An op whose Completion nobody holds by then never
gets one: a later marker covers it, in stream order.  These tests count the
driver's marker records, and check what must not change: a kept op's
completion stays exact, a dropped op's buffers live until the stream is past
it, and its error still reaches the next awaited op and ``close()``.
"""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import numpy as np
import pytest

import aruntime as ar
from aruntime._submit import STRANDED_KEPT
from aruntime.testing import open_test_backend

from .helpers import backend_or_skip, build_host_kernel

pytestmark = pytest.mark.anyio

# Backends whose errors reach the next marker (Driver.errors_reach_next_marker).
DEFERRING = ["mock-async", "cuda-sim"]


class _Records:
    """Counts the core's asks of the device about a stream's progress.

    A marker (an event record) or, where the driver can tell a stream is
    done, a settle of the whole stream (``stream_finished``): what an op
    that somebody waits for costs, and what one that nobody waits for must
    not.  Patched on the driver object, which the policy looks up per call,
    and on ``state``, whose awaited tail may be asked in C (its ``ask_tail``).
    """

    def __init__(self, gpu: ar.Backend, state: Any = None) -> None:
        #: Every ask; ``markers``: the event records among them.
        self.count = self.markers = 0
        self._driver: Any = gpu.driver
        self._record = record = self._driver.event_record
        self._marking = marking = gpu._policy.marking  # type: ignore[attr-defined]
        self._finished = finished = marking._stream_finished

        def counting_record(*args: Any) -> None:
            self.count += 1
            self.markers += 1
            record(*args)

        def counting_finished(*args: Any) -> Any:
            self.count += 1
            return finished(*args)

        self._driver.event_record = counting_record
        if finished is not None:
            marking._stream_finished = counting_finished
        self._state = state
        self._ask_tail = ask_tail = None if state is None else state.ask_tail
        if ask_tail is not None:

            def counting_ask(completion: Any) -> bool:
                self.count += 1
                answered: bool = ask_tail(completion)
                return answered

            state.ask_tail = counting_ask

    def restore(self) -> None:
        self._driver.event_record = self._record
        self._marking._stream_finished = self._finished
        if self._ask_tail is not None:
            self._state.ask_tail = self._ask_tail


@pytest.fixture(params=DEFERRING)
def gpu(request: pytest.FixtureRequest) -> Iterator[ar.Backend]:
    yield from backend_or_skip(request.param, test_variant=True, check_hazards=False)


@pytest.fixture
def records(gpu: ar.Backend) -> Iterator[_Records]:
    counter = _Records(gpu)
    try:
        yield counter
    finally:
        counter.restore()


async def test_ops_nobody_keeps_get_no_marker(gpu: ar.Backend, records: _Records) -> None:
    dev = gpu.alloc(64)
    with gpu.create_stream() as stream:
        for value in range(50):
            gpu.memset_async(dev, value, 64, stream=stream)
        assert records.count == 0
        await stream.synchronize()  # its own op is the one marked
        assert records.count == 1
        out = await gpu.copy_d2h_async(dev, np.zeros(64, np.uint8), stream=stream)
    assert (out == 49).all()
    gpu.free(dev)


async def test_a_kept_op_is_marked_before_the_next_op(gpu: ar.Backend, records: _Records) -> None:
    dev = gpu.alloc(64)
    with gpu.create_stream() as stream:
        kept = [gpu.memset_async(dev, 1, 64, stream=stream)]  # referenced from a list
        assert records.count == 0
        gpu.memset_async(dev, 2, 64, stream=stream)
        assert records.count == 1  # kept's marker, recorded before the next op
        await kept[0]
        assert records.count == 1
        await stream.synchronize()
    gpu.free(dev)


def test_waiting_for_the_last_op_marks_it(gpu: ar.Backend, records: _Records) -> None:
    dev = gpu.alloc(64)
    with gpu.create_stream() as stream:
        op = gpu.memset_async(dev, 3, 64, stream=stream)
        assert records.count == 0
        op.wait(30)
        assert records.count == 1 and op.done()
        second = gpu.memset_async(dev, 4, 64, stream=stream)
        second.done()  # asks for the marker too
        assert records.count == 2
        second.wait(30)
        assert records.count == 2
    gpu.free(dev)


@pytest.fixture(scope="module")
def hold_image(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    return build_host_kernel("hold_kernel", Path(tmp_path_factory.mktemp("hold")))


async def test_a_kept_op_is_not_held_back_by_the_ops_after_it(hold_image: bytes) -> None:
    """Exact, not over-waited: the kept op finishes while a held kernel queued after it waits."""
    gpu = _cuda_sim()
    try:
        hold = gpu.kernel(gpu.load_module("hold", hold_image), "hold_until")
        flag, dev = gpu.alloc(4), gpu.alloc(64)
        await gpu.memset_async(flag, 0, 4)
        with gpu.create_stream() as stream, gpu.create_stream() as other:
            kept = gpu.memset_async(dev, 1, 64, stream=stream)
            held = gpu.launch(hold, 1, 1, [flag], stream=stream)  # ends once flag is set
            await kept
            assert not held.done()
            await gpu.copy_h2d_async(np.ones(1, np.uint32), flag, stream=other)
            await held
        gpu.free(flag)
        gpu.free(dev)
    finally:
        gpu.close()


async def test_a_dropped_ops_buffers_live_until_a_later_marker(gpu: ar.Backend) -> None:
    dev = gpu.alloc(4096)
    with gpu.create_stream() as stream:
        src = np.ones(4096, np.uint8)
        alive = weakref.ref(src)
        gpu.copy_h2d_async(src, dev, stream=stream)  # nobody keeps it
        gpu.memset_async(dev, 0, 16, stream=stream)  # the copy is dropped here, unmarked
        del src
        gc.collect()
        assert alive() is not None  # the copy may still read it
        await gpu.memset_async(dev, 0, 16, stream=stream)
        gc.collect()
        assert alive() is None  # the stream is past the copy now
    gpu.free(dev)


async def test_dropped_copies_in_a_row_each_keep_their_own_source(gpu: ar.Backend) -> None:
    """Each unkept copy's source is held until the stream is past it, and lands whole."""
    first, second = gpu.alloc(1 << 16), gpu.alloc(1 << 16)
    with gpu.create_stream() as stream:
        sources = [np.full(1 << 16, 3, np.uint8), np.full(1 << 16, 7, np.uint8)]
        alive = [weakref.ref(src) for src in sources]
        gpu.copy_h2d_async(sources[0], first, stream=stream)  # nobody keeps either
        gpu.copy_h2d_async(sources[1], second, stream=stream)
        gpu.memset_async(first, 3, 1, stream=stream)  # drops the second copy too
        del sources
        gc.collect()
        assert [ref() is not None for ref in alive] == [True, True]
        got = await gpu.copy_d2h_async(second, np.zeros(1 << 16, np.uint8), stream=stream)
        assert (got == 7).all()
        got = await gpu.copy_d2h_async(first, np.zeros(1 << 16, np.uint8), stream=stream)
        assert (got == 3).all()
    gpu.free(first)
    gpu.free(second)


async def test_a_long_run_of_dropped_copies_is_bounded(gpu: ar.Backend, records: _Records) -> None:
    dev = gpu.alloc(64)
    src = np.ones(64, np.uint8)
    with gpu.create_stream() as stream:
        for _ in range(2 * STRANDED_KEPT + 2):
            gpu.copy_h2d_async(src, dev, stream=stream)
        assert 1 <= records.count <= 3
        assert len(stream.state.stranded) <= STRANDED_KEPT
        await stream.synchronize()
    gpu.free(dev)


async def test_a_dropped_ops_error_fails_the_next_awaited_op(backend_name: str) -> None:
    gpu = open_test_backend(backend_name)
    try:
        dev = gpu.alloc(64)
        stream = gpu.create_stream()
        name = _queue_a_failing_op(gpu, dev, stream)  # its Completion is dropped at once
        with pytest.raises(ar.DriverError) as info:
            await gpu.copy_d2h_async(dev, np.zeros(64, np.uint8), stream=stream)
        message = str(info.value)
        assert message.startswith("copy_d2h_async: not done: it, or the op queued before it"), (
            message
        )
        assert f"nobody kept (the first a {name})" in message, message
        stream.close()
        gpu.free(dev)
    finally:
        gpu.close()  # seen through the download: nothing more to raise


async def test_close_raises_a_dropped_ops_error_nobody_saw(backend_name: str) -> None:
    gpu = open_test_backend(backend_name)
    dev = gpu.alloc(64)
    stream = gpu.create_stream()
    _queue_a_failing_op(gpu, dev, stream)
    gpu.memset_async(dev, 0, 16, stream=stream)
    stream.close()
    gpu.free(dev)
    with pytest.raises(ar.DriverError):
        gpu.close()


def _queue_a_failing_op(gpu: ar.Backend, dev: ar.DevicePtr, stream: ar.Stream) -> str:
    """Queue an op that fails on the device, dropping its Completion; the op's name."""
    driver: Any = gpu.driver
    if driver.checks_stores:  # a store into memory the launch declared read-only
        scale = gpu.kernel(gpu.builtin_module("vector_ops"), "scale_f32")
        gpu.launch(scale, 1, 16, [np.uint32(16), np.float32(2), dev], reads=[dev], stream=stream)
        return "launch"
    driver.inject_fault("copy_h2d", ar.DriverError)
    gpu.copy_h2d_async(np.ones(64, np.uint8), dev, stream=stream)
    return "copy_h2d_async"


@pytest.fixture(params=DEFERRING)
def backend_name(request: pytest.FixtureRequest) -> str:
    try:
        open_test_backend(request.param).close()
    except ar.BackendUnavailableError as exc:
        pytest.skip(f"{request.param} unavailable: {exc}")
    return str(request.param)


def _cuda_sim() -> ar.Backend:
    try:
        return ar.open_backend("cuda-sim")
    except ar.BackendUnavailableError as exc:
        pytest.skip(f"cuda-sim unavailable: {exc}")


async def test_an_idle_streams_last_op_is_settled_without_a_marker() -> None:
    """cuda-sim can tell a stream is done (cuStreamQuery, then cuStreamSynchronize)."""
    gpu = _cuda_sim()
    try:
        records = _Records(gpu)
        dev = gpu.alloc(64)
        with gpu.create_stream() as stream:
            await gpu.memset_async(dev, 7, 64, stream=stream)  # a small op: done in place
            assert records.count == 1 and records.markers == 0  # one settle, no marker
            out = await gpu.copy_d2h_async(dev, np.zeros(64, np.uint8), stream=stream)
            assert (out == 7).all()
        records.restore()
        gpu.free(dev)
    finally:
        gpu.close()


class _SharedStream:
    def __init__(self, handle: int) -> None:
        self._handle = handle

    def __cuda_stream__(self) -> tuple[int, int]:
        return (0, self._handle)


def test_a_stream_shared_with_other_libraries_marks_every_op() -> None:
    """Their work may follow ours on it: a marker recorded later would cover theirs too."""
    gpu = _cuda_sim()
    try:
        dev = gpu.alloc(64)
        with gpu.create_stream() as own:
            wrapped = gpu.wrap_stream(_SharedStream(own.__cuda_stream__()[1]))
            records = _Records(gpu)
            try:
                for value in range(5):
                    gpu.memset_async(dev, value, 64, stream=wrapped)
                assert records.count == 5
            finally:
                records.restore()
            gpu.synchronize(wrapped).wait(30)
            wrapped.close()
        gpu.free(dev)
    finally:
        gpu.close()


@pytest.mark.parametrize("export", ["__cuda_stream__", "__cuda_array_interface__"])
def test_a_stream_handed_out_marks_every_op_from_then_on(export: str) -> None:
    """Once another library holds the native stream, its work may follow ours on it."""
    gpu = _cuda_sim()
    try:
        dev = gpu.alloc(64)
        with gpu.create_stream() as stream:
            records = _Records(gpu)
            try:
                gpu.memset_async(dev, 1, 64, stream=stream)
                gpu.memset_async(dev, 2, 64, stream=stream)
                assert records.count == 0  # unkept ops, deferred
                assert stream.state.tail is not None
                if export == "__cuda_stream__":
                    stream.__cuda_stream__()
                else:
                    array = gpu.array(dev, (64,), np.uint8, stream=stream)
                    assert array.__cuda_array_interface__["stream"] is not None
                assert stream.state.tail is None  # the op queued last got its marker then
                asked = records.count
                for value in range(3):
                    gpu.memset_async(dev, value, 64, stream=stream)
                assert records.count == asked + 3
            finally:
                records.restore()
            gpu.synchronize(stream).wait(30)
        gpu.free(dev)
    finally:
        gpu.close()


def test_a_dlpack_export_keeps_deferring() -> None:
    """DLPack orders the consumer's stream by an event on ours: nothing foreign joins ours."""
    gpu = _cuda_sim()
    try:
        dev = gpu.alloc(64)
        with gpu.create_stream() as stream:
            array = gpu.array(dev, (64,), np.uint8, stream=stream)
            capsule = array.__dlpack__(stream=None)
            assert capsule is not None
            assert stream.state.defer_markers
            gpu.synchronize(stream).wait(30)
        gpu.free(dev)
    finally:
        gpu.close()


class _Held:
    """cuda-sim with a hold kernel: each launch holds its stream until its flag is set
    from another stream, whose copy gives this one's stream no marker."""

    def __init__(self, gpu: ar.Backend, hold_image: bytes) -> None:
        self.gpu = gpu
        self._hold = gpu.kernel(gpu.load_module("hold", hold_image), "hold_until")
        self._flags: list[ar.DevicePtr] = []
        self.stream = gpu.create_stream()
        self._other = gpu.create_stream()

    async def flag(self) -> ar.DevicePtr:
        """A cleared flag, made before the markers are counted."""
        flag = self.gpu.alloc(4)
        self._flags.append(flag)
        await self.gpu.memset_async(flag, 0, 4, stream=self._other)
        return flag

    def launch(self, flag: ar.DevicePtr) -> ar.Completion:
        """A launch on ``stream`` that runs until :meth:`release` of ``flag``."""
        return self.gpu.launch(self._hold, 1, 1, [flag], stream=self.stream)

    def release(self, flag: ar.DevicePtr) -> None:
        self.gpu.copy_h2d_async(np.ones(1, np.uint32), flag, stream=self._other)

    def close(self) -> None:
        for flag in self._flags:  # releases any launch a failed test left holding
            self.gpu.copy_h2d_async(np.ones(1, np.uint32), flag, stream=self._other)
        self.stream.close()
        self._other.close()
        self.gpu.synchronize().wait(60)
        for flag in self._flags:
            self.gpu.free(flag)
        self.gpu.close()


@pytest.fixture
def held(hold_image: bytes) -> Iterator[_Held]:
    made = _Held(_cuda_sim(), hold_image)
    try:
        yield made
    finally:
        made.close()


def _spin(monkeypatch: pytest.MonkeyPatch, seconds: float) -> None:
    """An await's polling window (ARUNTIME_AWAIT_SPIN_US), for this test."""
    import aruntime._completion as completion_module

    monkeypatch.setattr(completion_module, "AWAIT_SPIN_S", seconds)


async def _await_into(completion: ar.Completion, out: list[object]) -> None:
    out.append(await completion)


async def test_an_awaited_last_op_is_polled_without_a_marker(
    held: _Held, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Awaiting the stream's last op asks the stream at each loop step, as a poller
    would, and records no marker while it runs (Completion._await_tail)."""
    _spin(monkeypatch, 30.0)  # the window outlasts the op
    flag = await held.flag()
    op = held.launch(flag)
    records = _Records(held.gpu, op.hooks)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_await_into, op, [])
            for _ in range(20):
                await anyio.lowlevel.checkpoint()
            # Still running, still the unmarked tail (looked at through hooks: done() asks).
            assert op.hooks.tail is op
            asks = records.count
            assert asks >= 5 and records.markers == 0
            held.release(flag)  # a marker on the other stream, none on this one
        assert op.done() and op.hooks.tail is None
        assert records.markers == 0 and records.count > asks
    finally:
        records.restore()


async def test_a_done_loop_polls_the_last_op_without_a_marker(held: _Held) -> None:
    """``while not op.done(): await sleep(0)``, as a poller writes it: each ``done()``
    asks the stream (Completion.done, probe_tail), records no marker while the op
    runs, and sees it finish without a waiter thread between."""
    flag = await held.flag()
    op = held.launch(flag)
    records = _Records(held.gpu, op.hooks)
    try:
        for _ in range(10):
            assert not op.done()
            await anyio.lowlevel.checkpoint()
        assert op.hooks.tail is op and records.markers == 0
        assert records.count >= 10  # one ask of the stream per done()
        held.release(flag)  # a marker on the other stream, none on this one
        with anyio.fail_after(30):
            while not op.done():
                await anyio.lowlevel.checkpoint()
        assert records.markers == 0 and op.hooks.tail is None
        await op  # finished, and seen
    finally:
        records.restore()


async def test_an_op_queued_behind_a_polled_one_gives_it_its_marker(
    held: _Held, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Exact, not over-waited: once a later op is queued, the polled op gets its marker and
    finishes when the device is past it, not when the stream is."""
    _spin(monkeypatch, 30.0)
    flag, gate = await held.flag(), await held.flag()
    first = held.launch(flag)
    records = _Records(held.gpu)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_await_into, first, [])
            for _ in range(5):
                await anyio.lowlevel.checkpoint()
            assert records.markers == 0
            second = held.launch(gate)  # held after it
            assert records.markers == 1 and first.hooks.tail is second
            held.release(flag)
        assert first.done() and not second.done()
    finally:
        records.restore()
    held.release(gate)
    await second


async def test_a_polled_op_gets_its_marker_when_the_window_ends(
    held: _Held, monkeypatch: pytest.MonkeyPatch
) -> None:
    _spin(monkeypatch, 0.001)
    flag = await held.flag()
    op = held.launch(flag)
    records = _Records(held.gpu)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_await_into, op, [])
            await anyio.sleep(0.05)  # past the window: marked, then parked
            assert records.markers == 1 and op.hooks.tail is None
            assert not op.done()  # marked already: done() asks the waiter
            held.release(flag)
        assert op.done()
    finally:
        records.restore()


async def test_a_cancelled_poll_leaves_the_op_the_unmarked_last_one(
    held: _Held, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Cancelling the await abandons the wait only: the op is as if never awaited."""
    _spin(monkeypatch, 30.0)
    flag = await held.flag()
    op = held.launch(flag)
    records = _Records(held.gpu)
    try:
        with anyio.move_on_after(0.02) as scope:
            await op
        assert scope.cancelled_caught
        assert op.hooks.tail is op and records.markers == 0
        held.release(flag)
        await op  # polled again, and finished
        assert records.markers == 0
    finally:
        records.restore()
