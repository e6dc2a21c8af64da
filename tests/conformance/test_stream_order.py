"""Errors follow stream order on every backend (DESIGN.md section 4).

An op queued after a failed op on its stream, or after a wait on an event
recorded behind one, fails too, naming that first failure; awaiting any op
it poisoned marks the failure seen, so close() never raises it again.  The
failing op is one each backend can fail without losing the device: the
mock's injected fault, and on the sims a launch that stores into memory its
``reads=`` declared read-only (the device stays usable).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import aruntime as ar
from aruntime.testing import open_test_backend

from ..helpers import close_during

pytestmark = pytest.mark.anyio

N = 64
NBYTES = N * 4


def _data(value: float = 1.0) -> np.ndarray[Any, np.dtype[np.float32]]:
    return np.full(N, value, dtype=np.float32)


def _needs_a_failing_op(backend: ar.Backend) -> None:
    """Skip, before the test allocates, where :func:`_fail_on` has no op that fails.

    A sim's failing launch stores into memory that only the race checker
    declares read-only: off under ``ARUNTIME_CHECK_HAZARDS=0``.
    """
    if getattr(backend.driver, "checks_stores", False) and not backend.check_hazards:
        pytest.skip(f"{backend.name}: no failing op without race checking")


def _fail_on(
    backend: ar.Backend, ptr: ar.DevicePtr, stream: ar.Stream
) -> tuple[ar.Completion, str]:
    """Queue an op on ``stream`` that fails without losing the device; it and its name."""
    driver: Any = backend.driver
    if driver.checks_stores:
        scale = backend.kernel(backend.builtin_module("vector_ops"), "scale_f32")
        args = [np.uint32(N), np.float32(2), ptr]
        return backend.launch(scale, 1, N, args, reads=[ptr], stream=stream), "launch"
    if hasattr(driver, "inject_fault"):
        driver.inject_fault("copy_h2d", ar.DriverError)
        return backend.copy_h2d_async(_data(), ptr, stream=stream), "copy_h2d_async"
    pytest.skip(f"{backend.name}: no op here fails without losing the device")


async def test_an_op_after_a_failed_one_fails_naming_it(backend: ar.Backend) -> None:
    """The README's pattern: queue work, await only the download."""
    _needs_a_failing_op(backend)
    ptr = backend.alloc(NBYTES)
    with backend.create_stream() as stream:
        await backend.copy_h2d_async(_data(), ptr, stream=stream)
        failing, name = _fail_on(backend, ptr, stream)
        download = backend.copy_d2h_async(ptr, np.empty(N, np.float32), stream=stream)
        with pytest.raises(ar.DriverError) as info:
            await download
        message = str(info.value)
        assert message.startswith("copy_d2h_async: not done: the earlier op"), message
        assert f"{name} " in message, message
        assert info.value.first_failure is failing  # type: ignore[attr-defined]
        assert info.value.__cause__ is failing.error
        # Seen: the op that failed first says so too, and a new op starts clean.
        with pytest.raises(ar.DriverError):
            await failing
        out = await backend.copy_d2h_async(ptr, np.empty(N, np.float32), stream=stream)
        assert out.shape == (N,)
        await stream  # nothing left unseen
    backend.free(ptr)


async def test_ops_queued_before_the_failure_was_seen_all_fail(backend: ar.Backend) -> None:
    _needs_a_failing_op(backend)
    ptr = backend.alloc(NBYTES)
    with backend.create_stream() as stream:
        await backend.copy_h2d_async(_data(), ptr, stream=stream)
        _fail_on(backend, ptr, stream)
        later = [backend.memset_async(ptr, 0, 16, stream=stream) for _ in range(3)]
        for op in later:  # the first await sees the failure; the rest were queued before it
            with pytest.raises(ar.DriverError, match="memset_async: not done"):
                await op
        await backend.memset_async(ptr, 0, 16, stream=stream)
    backend.free(ptr)


async def test_an_unseen_failure_is_raised_by_synchronize_once(backend: ar.Backend) -> None:
    _needs_a_failing_op(backend)
    ptr = backend.alloc(NBYTES)
    with backend.create_stream() as stream:
        await backend.copy_h2d_async(_data(), ptr, stream=stream)
        failing, _ = _fail_on(backend, ptr, stream)
        backend.memset_async(ptr, 0, 16, stream=stream)  # nobody awaits either
        with pytest.raises(ar.DriverError) as info:
            await backend.synchronize(stream)
        # It raises only after the work it covers has settled.
        assert failing.done() and failing.error is not None
        assert info.value is failing.error or info.value.first_failure is failing  # type: ignore[attr-defined]
        await backend.synchronize(stream)  # raised once
    backend.free(ptr)


async def test_a_failure_flows_through_an_event_to_another_stream(backend: ar.Backend) -> None:
    _needs_a_failing_op(backend)
    ptr, other = backend.alloc(NBYTES), backend.alloc(NBYTES)
    s1, s2 = backend.create_stream(), backend.create_stream()
    event = backend.create_event()
    await backend.copy_h2d_async(_data(), ptr, stream=s1)
    failing, name = _fail_on(backend, ptr, s1)
    backend.record_event(event, s1)
    backend.stream_wait_event(s2, event)
    dependent = backend.memset_async(other, 0, NBYTES, stream=s2)
    with pytest.raises(ar.DriverError, match=f"through an event it waited for, the op {name}"):
        await dependent
    # Seen through s2: neither stream's synchronize nor close raises it again.
    await s1
    await s2
    # s2 waited before; an op on s2 now, after the failure was seen, is clean.
    await backend.memset_async(other, 1, NBYTES, stream=s2)
    assert failing.done()
    for handle in (event, s1, s2):
        handle.close()
    backend.free(ptr)
    backend.free(other)


async def test_close_after_an_observed_failure_raises_nothing(backend_name: str) -> None:
    gpu = _open(backend_name)
    ptr = gpu.alloc(NBYTES)
    stream = gpu.create_stream()
    _fail_on(gpu, ptr, stream)
    with pytest.raises(ar.DriverError):
        await gpu.copy_d2h_async(ptr, np.empty(N, np.float32), stream=stream)
    stream.close()
    gpu.free(ptr)
    gpu.close()  # the failure was seen through the download: nothing to raise


async def test_close_raises_a_failure_nobody_saw(backend_name: str) -> None:
    gpu = _open(backend_name)
    ptr = gpu.alloc(NBYTES)
    stream = gpu.create_stream()
    failing, _ = _fail_on(gpu, ptr, stream)
    gpu.memset_async(ptr, 0, 16, stream=stream)
    stream.close()
    gpu.free(ptr)
    with pytest.raises(ar.DriverError) as info:
        gpu.close()
    assert info.value is failing.error or info.value.first_failure is failing  # type: ignore[attr-defined]


def _open(name: str, check_hazards: bool = True) -> ar.Backend:
    try:
        return open_test_backend(name, check_hazards=check_hazards)
    except ar.BackendUnavailableError as exc:
        pytest.skip(f"{name} unavailable: {exc}")


@pytest.fixture(params=["mock", "mock-async", "cuda-sim", "levelzero-sim"])
def backend_name(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.mark.parametrize("target", ["stream", "backend"])
def test_close_against_enqueues_from_another_thread(backend_name: str, target: str) -> None:
    """Each op either completes or raises ClosedResourceError: no crash, no hang."""
    for _ in range(10):
        _close_race_round(backend_name, target)


def _close_race_round(name: str, target: str, check_hazards: bool = True) -> None:
    gpu = _open(name, check_hazards)
    ptr = gpu.alloc(NBYTES)
    stream = gpu.create_stream()

    def close() -> None:
        if target == "stream":
            stream.close()
        else:
            with warnings.catch_warnings():  # ptr is the worker's until close: freed by close
                warnings.simplefilter("ignore", ResourceWarning)
                gpu.close()

    done = close_during(
        lambda: gpu.memset_async(ptr, 1, NBYTES, stream=stream),
        close,
        ar.ClosedResourceError,
        "",  # whichever closed first, the stream or its backend
        hang="an enqueue hung against close()",
    )
    for completion in done:  # each op queued before close ran to the end
        assert isinstance(completion, ar.Completion)
        completion.wait(timeout=60)
    if target == "stream":
        gpu.free(ptr)
        gpu.close()


def test_free_against_enqueues_from_another_thread(backend_name: str) -> None:
    """free() is linearized against another thread's ops on the pointer: never a device fault."""
    for _ in range(20):
        _free_race_round(backend_name)


def test_graph_close_against_replays_from_another_thread(backend_name: str) -> None:
    """Graph.close() is linearized against another thread's replays, as free() is."""
    gpu = _open(backend_name)
    ptr = gpu.alloc(NBYTES)
    try:
        with gpu.create_stream() as stream:
            for round_ in range(20):
                graph_close_during(gpu, ptr, stream, after=round_ % 4)
            out = np.zeros(N, np.float32)
            gpu.copy_d2h_async(ptr, out, stream=stream).wait(timeout=60)
            assert (out == 1.0).all()
    finally:
        gpu.free(ptr)
        gpu.close()  # raises any error no one saw: a replay of a destroyed graph would


def graph_close_during(gpu: ar.Backend, ptr: ar.DevicePtr, stream: ar.Stream, after: int) -> None:
    """Close a graph while another thread replays it, once ``after`` replays are queued:
    each replay is refused (ClosedResourceError) or runs before the graph is destroyed."""
    with gpu.capture(stream) as graph:
        gpu.copy_h2d_async(_data(1.0), ptr, stream=stream)
    queued = close_during(
        lambda: gpu.launch_graph(graph, stream),
        graph.close,
        ar.ClosedResourceError,
        "is closed",
        after,
        "a replay hung against Graph.close()",
    )
    for completion in queued:  # every replay that got onto the stream ran whole
        assert isinstance(completion, ar.Completion)
        completion.wait(timeout=60)


#: What another thread does with an event while it is closed (event_close_during).
EVENT_USES = ["record", "wait", "query", "elapsed", "synchronize"]


@pytest.mark.parametrize("use", EVENT_USES)
def test_event_close_against_its_uses_from_another_thread(backend_name: str, use: str) -> None:
    """Event.close() is linearized against another thread's records of it, waits on it and
    host-side questions (query, elapsed_ms, event_synchronize)."""
    gpu = _open(backend_name)
    ptr = gpu.alloc(NBYTES)
    try:
        with gpu.create_stream() as stream, gpu.create_stream() as other:
            for round_ in range(20):
                event_close_during(gpu, ptr, stream, other, use, after=round_ % 4)
    finally:
        gpu.free(ptr)
        gpu.close()


@pytest.mark.parametrize("use", ["record", "wait"])
def test_an_event_closed_after_its_check_is_refused_at_its_stream(
    backend_name: str, use: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Closed between the check and the stream's lock: refused there, with no driver call."""
    gpu = _open(backend_name)
    try:
        with gpu.create_stream() as stream, gpu.create_stream() as other:
            event = gpu.create_event()
            event.record(stream)
            calls: list[object] = []
            driver: Any = gpu.driver
            monkeypatch.setattr(driver, "event_record", lambda *a: calls.append(a))
            monkeypatch.setattr(driver, "stream_wait_event", lambda *a: calls.append(a))
            accepting = ar.Stream.check_accepting

            def close_first(st: ar.Stream, fn: str) -> None:
                event.close()  # another thread's close, between the check and the lock
                accepting(st, fn)

            monkeypatch.setattr(ar.Stream, "check_accepting", close_first)
            with pytest.raises(ar.ClosedResourceError, match=r"(record_event|wait_event).*closed"):
                if use == "record":
                    gpu.record_event(event, other)
                else:
                    gpu.stream_wait_event(other, event)
            monkeypatch.undo()
            assert calls == []
            stream.synchronize().wait(timeout=60)
    finally:
        gpu.close()


@pytest.mark.parametrize("use", ["query", "elapsed", "synchronize"])
def test_an_event_closed_after_its_check_is_refused_before_the_driver(
    backend_name: str, use: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Closed right after a host-side call's check: refused before any driver call on it."""
    gpu = _open(backend_name)
    try:
        with gpu.create_stream() as stream:
            event, end = gpu.create_event(timing=True), gpu.create_event(timing=True)
            event.record(stream)
            end.record(stream)
            stream.synchronize().wait(timeout=60)
            calls: list[object] = []
            driver: Any = gpu.driver
            for name in ("event_query", "event_elapsed_ms"):
                monkeypatch.setattr(driver, name, lambda *a: calls.append(a))
            check = ar.Event.check_open
            closing = [event]

            def check_then_close(ev: ar.Event, fn: str) -> None:
                check(ev, fn)
                if closing and ev is closing[0]:
                    closing.clear()
                    ev.close()  # another thread's close, right after the check

            monkeypatch.setattr(ar.Event, "check_open", check_then_close)
            if use == "synchronize" and driver.synchronous:
                # Work there is done at its enqueue: the wait asks no driver, and is done.
                assert gpu.event_synchronize(event).done()
            else:
                with pytest.raises(ar.ClosedResourceError, match=r"(query|elapsed|synch).*closed"):
                    if use == "query":
                        event.query()
                    elif use == "elapsed":
                        gpu.elapsed_ms(event, end)
                    else:
                        gpu.event_synchronize(event)
            monkeypatch.undo()
            assert calls == [] and not closing
            end.close()
            stream.synchronize().wait(timeout=60)
    finally:
        gpu.close()


def event_close_during(
    gpu: ar.Backend,
    ptr: ar.DevicePtr,
    stream: ar.Stream,
    other: ar.Stream,
    use: str,
    after: int,
) -> None:
    """Close an event while another thread uses it, ``use`` being one of :data:`EVENT_USES`:
    records it on ``stream`` or makes ``other`` wait on it, each after a memset, or asks the
    host's questions of it (``query``, ``elapsed_ms``, ``event_synchronize``).  Each use
    reaches the driver before the event is destroyed, or raises ClosedResourceError."""
    event = gpu.create_event(timing=use == "elapsed")
    event.record(stream)
    stream.synchronize().wait(timeout=60)  # elapsed_ms needs the record done

    def use_it() -> object:
        if use == "record":
            gpu.memset_async(ptr, 1, NBYTES, stream=stream)
            return gpu.record_event(event, stream)
        if use == "wait":
            gpu.memset_async(ptr, 1, NBYTES, stream=stream)
            return gpu.stream_wait_event(other, event)
        if use == "query":
            return event.query()
        if use == "elapsed":
            return gpu.elapsed_ms(event, event)
        gpu.memset_async(ptr, 1, NBYTES, stream=stream)
        return gpu.event_synchronize(event)

    returned = close_during(
        use_it,
        event.close,
        ar.ClosedResourceError,
        "is closed",
        after,
        f"{use} hung against Event.close()",
    )
    for done in returned:  # a synchronize that got onto its stream finishes, unfailed
        if isinstance(done, ar.Completion):
            done.wait(timeout=60)
    for st in (stream, other):  # nothing queued failed: no call on a destroyed event
        st.synchronize().wait(timeout=60)


def free_during(
    gpu: ar.Backend, ptr: ar.DevicePtr, submit: Callable[[], ar.Completion], after: int = 0
) -> None:
    """Free ``ptr`` while another thread submits ops on it (``submit``), once ``after``
    of them are queued: each op is refused or runs on live memory, and nothing hangs."""
    queued = close_during(
        submit,
        lambda: gpu.free(ptr),
        ar.InvalidArgumentError,
        "was freed",
        after,
        "an enqueue hung against free()",
    )
    for completion in queued:  # every op that got onto the stream ran on live memory
        assert isinstance(completion, ar.Completion)
        completion.wait(timeout=60)


def test_pinned_free_against_copies_from_another_thread(backend_name: str) -> None:
    """free_host_pinned() is linearized against another thread's copies of the buffer."""
    gpu = _open(backend_name)
    try:
        with gpu.create_stream() as stream:
            for round_ in range(20):
                pinned_free_during(gpu, stream, after=round_ % 4)
    finally:
        gpu.close()  # raises any error no one saw (levelzero-sim: a free of memory in use)


def pinned_free_during(gpu: ar.Backend, stream: ar.Stream, after: int) -> None:
    """Free a pinned buffer while another thread copies it to the device and back, once
    ``after`` copies are queued: each copy is refused, or reaches the driver (and ends)
    before the memory goes back to it."""
    buf = gpu.alloc_host_pinned(NBYTES)
    dev = gpu.alloc(NBYTES)
    driver: Any = gpu.driver
    gone: list[int] = []  # set once the driver has the buffer's memory back
    late: list[str] = []  # copies that reached the driver after their memory went back
    real = {name: getattr(driver, name) for name in ("host_free", "memcpy_h2d", "memcpy_d2h")}

    at = buf.address

    def host_free(address: int, *rest: Any) -> Any:
        if address == at:
            gone.append(address)
        return real["host_free"](address, *rest)

    def checked(name: str, view_at: int) -> Callable[..., Any]:
        # The copy's view is of the buffer itself (``obj``): asking makes no new view,
        # which free_host_pinned, on another thread, would count as one alive.
        def copy(*args: Any) -> Any:
            if gone and getattr(args[view_at], "obj", None) is buf:
                late.append(name)
            return real[name](*args)

        return copy

    driver.host_free = host_free
    driver.memcpy_h2d, driver.memcpy_d2h = checked("memcpy_h2d", 0), checked("memcpy_d2h", 1)
    turn = [0]

    def copy() -> ar.Completion:
        turn[0] += 1
        if turn[0] % 2:
            return gpu.copy_h2d_async(buf, dev, stream=stream)
        return gpu.copy_d2h_async(dev, buf, stream=stream)

    def free() -> None:
        # A copy the driver is running holds a view of the buffer (the mock's numpy
        # copy, say), and the free refuses while one is alive, as it says it does:
        # asked again, it goes once the other thread's copies have let go.
        while True:
            try:
                return gpu.free_host_pinned(buf)
            except ar.InvalidArgumentError as exc:
                if "still alive" not in str(exc):
                    raise
                time.sleep(0)

    try:
        queued = close_during(
            copy, free, ar.InvalidArgumentError, "freed", after, "a copy hung against the free"
        )
        for completion in queued:  # every copy that got onto the stream ran on live memory
            assert isinstance(completion, ar.Completion)
            completion.wait(timeout=60)
        stream.synchronize().wait(timeout=60)
        assert late == []
    finally:
        for name in real:
            delattr(driver, name)  # the class's methods again
        gpu.free(dev)


@pytest.mark.parametrize("use", ["copy", "mapped"])
def test_a_pinned_buffer_a_graph_uses_is_freed_with_the_graph(backend_name: str, use: str) -> None:
    """free_host_pinned() of a buffer a live graph uses (copies from it, or launches a kernel
    on its device mapping): the memory stays till the graph goes, as device memory freed
    under a graph does, and its replays reach it."""
    gpu = _open(backend_name)
    try:
        with gpu.create_stream() as stream:
            buf = gpu.alloc_host_pinned(NBYTES)
            buf.view(np.float32)[:] = 3.0
            dev = gpu.alloc(NBYTES)
            with gpu.capture(stream) as graph:
                if use == "copy":
                    gpu.copy_h2d_async(buf, dev, stream=stream)
                else:  # the kernel fills the pinned memory, then a copy takes it
                    fill = gpu.kernel(gpu.builtin_module("vector_ops"), "fill_f32")
                    mapped = gpu.host_ptr_to_device(buf)
                    gpu.launch(fill, 1, N, [np.uint32(N), np.float32(3.0), mapped], stream=stream)
                    gpu.copy_h2d_async(buf, dev, stream=stream)
            freed: list[int] = []
            driver: Any = gpu.driver
            host_free = driver.host_free

            def record_free(address: int, *rest: Any) -> Any:
                freed.append(address)
                return host_free(address, *rest)

            driver.host_free = record_free
            gpu.free_host_pinned(buf)
            gpu.launch_graph(graph, stream).wait(timeout=60)
            assert freed == []  # the graph still copies from it
            out = gpu.copy_d2h_async(dev, np.zeros(N, np.float32), stream=stream).wait(60)
            assert (out == 3.0).all()
            graph.close()
            stream.synchronize().wait(timeout=60)
            assert len(freed) == 1  # released with the graph, once its replays are done
            del driver.host_free
            gpu.free(dev)
    finally:
        gpu.close()


def _free_race_round(name: str) -> None:
    gpu = _open(name)
    ptr = gpu.alloc(NBYTES)
    stream = gpu.create_stream()
    free_during(gpu, ptr, lambda: gpu.memset_async(ptr, 1, NBYTES, stream=stream))
    # The device is fine: a new allocation works, and close() has nothing to report.
    fresh = gpu.alloc(NBYTES)
    gpu.memset_async(fresh, 2, NBYTES, stream=stream).wait(timeout=60)
    gpu.free(fresh)
    stream.close()
    gpu.close()
