"""The compiled enqueue (aruntime/_enqueue.py, ffi/core/enqueue.c) against the Python one.

The C path must be the Python path, only cheaper: the same Completion, the
same tail bookkeeping, every other case handed back to Python, and the
stream's lock released however the call ends.  tests/test_stream_enqueue.py
runs its cases on both paths; these are the ones only C can get wrong.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import threading
import types
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import aruntime as ar
from aruntime import _enqueue, _sites
from aruntime._completion import Completion
from aruntime._native import load_core_extension
from aruntime._op import Op, OpKind
from aruntime._streamstate import StreamState
from aruntime.testing import inject_fault

from .helpers import backend_or_skip

pytestmark = pytest.mark.anyio

BACKENDS = ["mock", "cuda-sim", "levelzero-sim"]


@pytest.fixture(params=BACKENDS)
def gpu(request: pytest.FixtureRequest) -> Iterator[ar.Backend]:
    if not _enqueue.enabled():
        pytest.skip("the compiled enqueue is not built or is switched off")
    yield from backend_or_skip(request.param)


def _python_stream(gpu: ar.Backend, monkeypatch: pytest.MonkeyPatch) -> ar.Stream:
    with monkeypatch.context() as patch:
        patch.setenv("ARUNTIME_COMPILED_ENQUEUE", "0")
        return gpu.create_stream()


def _slots(completion: Completion) -> dict[str, Any]:
    return {name: getattr(completion, name) for name in Completion.__slots__ if name[0] == "_"}


def test_every_stream_gets_it_race_checked_or_not(gpu: ar.Backend) -> None:
    with gpu.create_stream() as stream:
        assert type(stream.enqueue).__name__ == "Enqueuer"
    with ar.open_backend(gpu.name, check_hazards=True) as checked, checked.create_stream() as s:
        assert type(s.enqueue).__name__ == "Enqueuer"


def test_a_race_checked_op_reaches_the_checker_as_an_op(
    gpu: ar.Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The checker reads an Op: the compiled path builds it whole, as Stream.enqueue does."""
    with ar.open_backend(gpu.name, check_hazards=True) as checked:
        seen: list[Op] = []
        hazards: Any = checked._state.hazards  # type: ignore[attr-defined]
        real = hazards.run
        monkeypatch.setattr(
            hazards, "run", lambda op, st, run: seen.append(op) or real(op, st, run)
        )
        host = np.arange(16, dtype=np.uint8)
        ptr = checked.alloc(16)
        with checked.create_stream() as stream:
            checked.copy_h2d_async(host, ptr, stream=stream).wait()
        (op,) = seen
        assert op.kind is OpKind.COPY_H2D and op.nbytes == 16
        assert op.held == (host,) and op.keepalive[0] is host and len(op.keepalive) == 2
        assert op.writes == ((int(ptr), 16),)
        checked.free(ptr)


def test_the_switch_keeps_new_streams_on_python(
    gpu: ar.Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    with _python_stream(gpu, monkeypatch) as stream:
        assert type(stream.enqueue).__name__ == "method"


@pytest.mark.parametrize("backend", ["cuda-sim", "levelzero-sim"])
async def test_its_completion_is_the_one_python_builds(
    backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Slot by slot, for a kept copy left pending as the stream's tail."""
    if not _enqueue.enabled():
        pytest.skip("the compiled enqueue is not built or is switched off")
    try:
        gpu = ar.open_backend(backend)
    except ar.BackendUnavailableError as exc:
        pytest.skip(f"{backend} unavailable: {exc}")
    async with gpu:
        host = np.arange(256, dtype=np.uint8)
        dst = gpu.alloc(256)
        made: dict[str, dict[str, Any]] = {}
        with gpu.create_stream() as c_stream, _python_stream(gpu, monkeypatch) as py_stream:
            for label, stream in (("c", c_stream), ("py", py_stream)):
                stream.state.defer_markers = True  # levelzero-sim marks every op otherwise
                done = gpu.copy_d2h_async(dst, np.empty(256, np.uint8), stream=stream)
                completion = gpu.copy_h2d_async(host, dst, stream=stream)
                assert stream.state.tail is completion
                made[label] = _slots(completion)
                held, views = stream.state.tail_held
                made[label]["tail_held"] = (held, tuple(map(type, views)))
                made[label]["hooks_is_state"] = completion.hooks is stream.state
                assert await done is not None
                await completion
        c, py = made["c"], made["py"]
        assert c.keys() == py.keys()
        for name in c:
            if name == "_seq":
                assert type(c[name]) is int and c[name] > 0
            elif name in ("_lock", "_callbacks"):
                assert type(c[name]) is type(py[name])
            elif name == "_keepalive":
                assert len(c[name]) == len(py[name]) == 1 and c[name][0] is py[name][0] is host
            elif name == "tail_held":
                assert c[name][0][0] is py[name][0][0] is host and c[name][1] == py[name][1]
            elif name == "_hooks":
                assert c["hooks_is_state"] and py["hooks_is_state"]
            elif name == "_views":
                assert len(c[name]) == len(py[name]) == 1
            else:
                assert c[name] == py[name], name
        gpu.free(dst)


async def test_dropped_ops_strand_and_a_kept_one_is_marked(gpu: ar.Backend) -> None:
    """The tail rule: a dropped op's buffers wait for a later marker; a kept op gets its own."""
    host = bytearray(64)
    dst = gpu.alloc(64)
    with gpu.create_stream() as stream:
        state = stream.state
        deferred = getattr(state, "defer_markers", False)
        for _ in range(3):
            gpu.copy_h2d_async(host, dst, stream=stream)
        if deferred:
            assert state.dropped == 2 and state.dropped_first == "copy_h2d_async"
            assert host in state.stranded
        kept = gpu.memset_async(dst, 7, 64, stream=stream)
        later = gpu.memset_async(dst, 9, 64, stream=stream)
        if deferred:
            assert state.tail is later
            assert not state.stranded  # the kept memset's marker took them
        await kept
        await later
        out = await gpu.copy_d2h_async(dst, np.empty(64, np.uint8), stream=stream)
    assert (out == 9).all()
    gpu.free(dst)


def test_the_compiled_watched_sets_what_pythons_does(gpu: ar.Backend) -> None:
    from aruntime._completion import watched

    compiled = _enqueue.watcher()
    assert compiled is not watched  # the extension's
    dev = gpu.alloc(64)
    try:
        with gpu.create_stream() as stream:
            # The mock's op is a shared finished Completion, copied; a sim's is pending.
            op = gpu.memset_async(dev, 1, 64, stream=stream)
            seen: list[int] = []
            by_c = compiled(op, seen.append)
            c_slots = _slots(by_c)
            by_python = watched(op, seen.append)
            assert (by_c is op) == (by_python is op) == (gpu.name != "mock")
            python_slots = _slots(by_python)
            if by_c is op:
                assert c_slots["_seen"] == seen.append
            else:
                assert c_slots == python_slots
                assert c_slots["_callbacks"] is not python_slots["_callbacks"]
                assert _slots(op)["_seen"] is None  # the shared one is left as it was
            with pytest.raises(TypeError, match="watched takes 2 arguments"):
                compiled(op)  # type: ignore[call-arg]
            with pytest.raises(TypeError, match="a Completion"):
                compiled(object(), seen.append)  # type: ignore[arg-type]
    finally:
        gpu.free(dev)


def test_keywords_and_wrong_counts_are_refused(gpu: ar.Backend) -> None:
    with gpu.create_stream() as stream:
        with pytest.raises(TypeError, match="positional arguments only"):
            stream.enqueue(OpKind.MEMSET, print, (), (), (), kernel=None)
        with pytest.raises(TypeError, match="5 to 9 arguments, got 3"):
            stream.enqueue(OpKind.MEMSET, print, ())


def test_a_raising_call_leaves_the_lock_free(gpu: ar.Backend) -> None:
    """Not a DriverError (an interrupt, a bug): it propagates, and the lock is released."""

    def boom(*args: Any) -> None:
        raise RuntimeError("boom")

    with gpu.create_stream() as stream:
        with pytest.raises(RuntimeError, match="boom"):
            stream.enqueue(OpKind.MEMSET, boom, (), (), ())
        taken: list[bool] = []

        def take() -> None:
            lock = stream.state.lock
            taken.append(lock.acquire(timeout=5))
            if taken[-1]:
                lock.release()

        thread = threading.Thread(target=take)
        thread.start()
        thread.join()
        assert taken == [True]


async def test_a_failed_call_fails_its_op_in_stream_order() -> None:
    """Faults are injected into the mock only: its policy's failure and ordering hooks."""
    if not _enqueue.enabled():
        pytest.skip("the compiled enqueue is not built or is switched off")
    gpu = ar.open_backend("mock")
    ptr = gpu.alloc(64)
    async with gpu:
        stream = gpu.create_stream()
        assert type(stream.enqueue).__name__ == "Enqueuer"
        inject_fault(gpu, "memset_async", ar.DriverError)
        failed = gpu.memset_async(ptr, 1, 64, stream=stream)
        after = gpu.memset_async(ptr, 2, 64, stream=stream)
        with pytest.raises(ar.DriverError):
            await failed
        with pytest.raises(ar.DriverError, match=r"memset_async.*failed before it"):
            await after
        stream.close()
        gpu.free(ptr)


def test_configure_refuses_a_completion_with_a_slot_it_would_leave_unset() -> None:
    module = _enqueue._module()
    if module is None:
        pytest.skip("the compiled enqueue is not built or is switched off")

    class Wider:
        __slots__ = (*Completion.__slots__, "_extra")

    with pytest.raises(TypeError, match="slot"):
        module.configure(
            Wider,
            Wider.__slots__,
            0,
            threading.Lock,
            iter(()).__next__,
            ((), ()),
            ar.DriverError,
            _enqueue._sites,
            256,
            Op,
            Op.__slots__,
        )
    with ar.open_backend("mock") as gpu, gpu.create_stream() as stream:
        ptr = gpu.alloc(16)
        assert type(stream.enqueue).__name__ == "Enqueuer"
        assert gpu.memset_async(ptr, 1, 16, stream=stream).done()
        gpu.free(ptr)


def test_an_extension_older_than_the_python_turns_it_off(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A stale build without a configure call this Python makes: off, with a warning."""
    module = _enqueue._module()
    if module is None:
        pytest.skip("the compiled enqueue is not built or is switched off")
    older = types.SimpleNamespace(
        **{name: getattr(module, name) for name in dir(module) if name != "configure_settle"}
    )
    monkeypatch.setattr(_enqueue, "load_core_extension", lambda name: older)
    with caplog.at_level("WARNING", logger="aruntime"):
        assert _enqueue._configured() is None
    assert "the compiled enqueue is off" in caplog.text
    assert "configure_settle" in caplog.text


async def test_a_recorded_call_site_goes_the_python_way(gpu: ar.Backend) -> None:
    """Recording sites needs the Completion before the call: the Python path does that."""
    ptr = gpu.alloc(64)
    with gpu.create_stream() as stream:
        assert type(stream.enqueue).__name__ == "Enqueuer"
        with _sites.record():
            completion = gpu.memset_async(ptr, 1, 64, stream=stream)  # this line
        plain = gpu.memset_async(ptr, 2, 64, stream=stream)
        site = _sites.site_of(completion)
        if gpu.name != "mock":  # the mock's finished ops share one Completion
            assert site is not None and site.endswith(f"{__file__}:{_line_of('# this line')}")
            assert _sites.site_of(plain) is None
        await plain
    gpu.free(ptr)


async def test_a_traced_op_goes_the_python_way(gpu: ar.Backend, tmp_path: Path) -> None:
    ptr = gpu.alloc(64)
    with gpu.create_stream() as stream:
        with gpu.trace(tmp_path / "trace.json"):
            await gpu.memset_async(ptr, 1, 64, stream=stream)
        await gpu.memset_async(ptr, 2, 64, stream=stream)
    spans = [
        e
        for e in json.loads((tmp_path / "trace.json").read_text())["traceEvents"]
        if e.get("name") == "memset_async"
    ]
    assert len(spans) == 1, spans
    gpu.free(ptr)


def _line_of(marker: str) -> int:
    lines = Path(__file__).read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if line.endswith(marker) and "=" in line)


def test_an_error_while_checking_leaves_the_lock_free(gpu: ar.Backend) -> None:
    """A check that raises (here an operand whose ``freed`` does) propagates, lock released."""

    class Broken:
        @property
        def freed(self) -> bool:
            raise RuntimeError("no answer")

    with gpu.create_stream() as stream:
        with pytest.raises(RuntimeError, match="no answer"):
            stream.enqueue(OpKind.MEMSET, print, (), (Broken(),), ())
        assert not stream.state.lock._is_owned()  # type: ignore[attr-defined]


@pytest.mark.parametrize("check_hazards", [False, True])
async def test_it_leaks_no_reference(backend_name: str, check_hazards: bool) -> None:
    """After many ops, kept and dropped, every object the path touched is back to its count."""
    if not _enqueue.enabled():
        pytest.skip("the compiled enqueue is not built or is switched off")
    try:
        gpu = ar.open_backend(backend_name, check_hazards=check_hazards)
    except ar.BackendUnavailableError as exc:
        pytest.skip(f"{backend_name} unavailable: {exc}")
    async with gpu:
        host = np.arange(256, dtype=np.uint8)
        out = np.empty(256, np.uint8)
        dst = gpu.alloc(256)
        with gpu.create_stream() as stream:
            assert type(stream.enqueue).__name__ == "Enqueuer"
            await gpu.copy_h2d_async(host, dst, stream=stream)  # warm: layouts, waiter
            await stream.synchronize()
            gc.collect()
            before = (sys.getrefcount(host), sys.getrefcount(out), sys.getrefcount(stream))
            for i in range(300):
                kept = gpu.copy_h2d_async(host, dst, stream=stream)
                gpu.memset_async(dst, i & 0xFF, 16, stream=stream)  # dropped
                if i % 3 == 0:
                    await kept
            assert await gpu.copy_d2h_async(dst, out, stream=stream) is out
            await stream.synchronize()
            del kept
            gc.collect()
            after = (sys.getrefcount(host), sys.getrefcount(out), sys.getrefcount(stream))
        assert after == before
        gpu.free(dst)


@pytest.fixture(params=BACKENDS)
def backend_name(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def test_an_enqueuer_refuses_a_state_whose_field_is_not_a_slot() -> None:
    """It reads the stream state's fields at their slots' offsets: a property in their
    place would be bypassed, so it is refused when the Enqueuer is made."""
    if not _enqueue.enabled():
        pytest.skip("the compiled enqueue is not built or is switched off")

    class Shadowed(StreamState):
        __slots__ = ()

        @property  # type: ignore[override]
        def tail(self) -> None:
            return None

    class FakeStream:
        state = Shadowed.__new__(Shadowed)  # its fields' offsets are all that is read
        handle = None
        hazards = None

    FakeStream.state.lock = threading.RLock()

    with pytest.raises(TypeError, match=r"Shadowed\.tail is not a slot"):
        _enqueue.compiled_enqueuer(
            FakeStream(),
            print,
            tracing=None,
            failed=print,
            mark=print,
            mark_now=print,
            done=None,
            run=print,
        )


def test_a_streams_completions_share_one_lock(gpu: ar.Backend) -> None:
    """The compiled enqueue gives each stream one lock for its Completions (none is made
    per op); another stream's are guarded by another."""
    if not _enqueue.enabled() or gpu.driver.synchronous:
        pytest.skip("the compiled enqueue's own Completions are the async policy's")
    with gpu.create_stream() as one, gpu.create_stream() as two:
        if one.state.defer_markers is False:
            pytest.skip("this driver marks every op: the policy's Python makes its Completions")
        ptr = gpu.alloc(64)
        first = gpu.memset_async(ptr, 1, 64, stream=one)
        second = gpu.memset_async(ptr, 2, 64, stream=one)
        other = gpu.memset_async(ptr, 3, 64, stream=two)
        assert first._lock is second._lock
        assert first._lock is not other._lock
        first.wait(30)
        second.wait(30)
        other.wait(30)
    gpu.free(ptr)


def _pending_with_wakeups(
    woken: list[str], label: str
) -> tuple[Completion, weakref.ref[Any], memoryview]:
    """A pending Completion holding a buffer and a view, with a failing and a counting wake-up."""

    class Held:
        pass

    held, view = Held(), memoryview(bytearray(8))
    completion = Completion("launch", None, None, (held,), (view,))

    def broken() -> None:
        raise RuntimeError("a broken wake-up")

    assert completion.subscribe(broken)
    assert completion.subscribe(lambda: woken.append(label))
    return completion, weakref.ref(held), view


def test_the_compiled_finish_does_what_finish_does(caplog: pytest.LogCaptureFixture) -> None:
    """ffi/core/settle.c against Completion._finish(None): the same slots, views released,
    keepalive let go, every wake-up run once (one that raises is logged), and a finished
    Completion left alone."""
    from aruntime._completion import _DONE, _NO_CALLBACKS

    module = _enqueue._module()
    if module is None:
        pytest.skip("the compiled enqueue is not built or is switched off")
    woken: list[str] = []
    by_python, python_held, python_view = _pending_with_wakeups(woken, "python")
    by_c, c_held, c_view = _pending_with_wakeups(woken, "c")
    with caplog.at_level("ERROR", logger="aruntime"):
        by_python._finish(None)
        module.finish_done(by_c)
    assert woken == ["python", "c"]
    assert [r.getMessage() for r in caplog.records] == ["Completion wake-up failed"] * 2
    python_slots, c_slots = _slots(by_python), _slots(by_c)
    assert python_slots.pop("_seq") != c_slots.pop("_seq")
    assert python_slots.pop("_lock") is not c_slots.pop("_lock")
    assert c_slots == python_slots
    assert c_slots["_state"] == _DONE and c_slots["_callbacks"] is _NO_CALLBACKS
    assert c_slots["_keepalive"] == () and c_slots["_views"] == ()
    gc.collect()
    assert python_held() is None and c_held() is None
    for view in (python_view, c_view):
        with pytest.raises(ValueError, match="released"):
            view.tobytes()
    module.finish_done(by_c)  # finished already: nothing runs again
    assert woken == ["python", "c"] and by_c.done()
    with pytest.raises(TypeError, match="finish_done: a Completion"):
        module.finish_done(object())


@pytest.fixture
def stream_lock() -> Any:
    if not _enqueue.enabled():
        pytest.skip("the compiled enqueue is not built or is switched off")
    lock = _enqueue.stream_lock()
    assert type(lock).__name__ == "StreamLock"
    return lock


def test_a_stream_lock_is_reentrant_and_owned(stream_lock: Any) -> None:
    with stream_lock:
        with stream_lock:
            assert stream_lock._is_owned()
        assert stream_lock._is_owned()
    assert not stream_lock._is_owned()
    with pytest.raises(RuntimeError, match="un-acquired"):
        stream_lock.release()
    assert stream_lock.acquire() is True
    others: list[object] = []

    def other() -> None:
        others.append(stream_lock.acquire(blocking=False))
        others.append(stream_lock._is_owned())
        try:
            stream_lock.release()
        except RuntimeError as exc:
            others.append(str(exc))

    thread = threading.Thread(target=other)
    thread.start()
    thread.join(30)
    assert others == [False, False, "cannot release un-acquired lock"]
    stream_lock.release()


def _hold_elsewhere(lock: Any, let_go: threading.Event) -> threading.Thread:
    """A thread that holds ``lock`` until ``let_go`` is set (returned once it holds it)."""
    held = threading.Event()

    def holder() -> None:
        with lock:
            held.set()
            let_go.wait(30)

    thread = threading.Thread(target=holder)
    thread.start()
    assert held.wait(30)
    return thread


def test_a_stream_lock_waits_for_its_holder(stream_lock: Any) -> None:
    let_go = threading.Event()
    thread = _hold_elsewhere(stream_lock, let_go)
    assert stream_lock.acquire(timeout=0.01) is False  # still held: the timeout ends the wait
    assert stream_lock.acquire(True, 0) is False
    let_go.set()
    assert stream_lock.acquire(timeout=30) is True  # the holder let go while this waited
    stream_lock.release()
    thread.join(30)


def test_a_stream_lock_checks_its_arguments(stream_lock: Any) -> None:
    with pytest.raises(ValueError, match="non-blocking"):
        stream_lock.acquire(False, 1)
    with pytest.raises(ValueError, match="non-negative"):
        stream_lock.acquire(timeout=-2)
    with pytest.raises(TypeError, match="'wait'"):
        stream_lock.acquire(wait=True)
    with pytest.raises(TypeError, match="at most 2"):
        stream_lock.acquire(True, 1, 2)
    with pytest.raises(TypeError, match="no arguments"):
        type(stream_lock)(1)
    assert not stream_lock._is_owned()


@pytest.mark.skipif(sys.platform == "win32", reason="SIGALRM")
def test_a_signal_handler_runs_while_a_stream_lock_waits(stream_lock: Any) -> None:
    """As an RLock's: a handler that raises ends the wait with its exception."""
    import signal

    class Interrupted(Exception):
        pass

    def handler(signum: int, frame: object) -> None:
        raise Interrupted

    let_go = threading.Event()
    thread = _hold_elsewhere(stream_lock, let_go)
    previous = signal.signal(signal.SIGALRM, handler)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.05)
        with pytest.raises(Interrupted):
            stream_lock.acquire()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        let_go.set()
        thread.join(30)
    assert not stream_lock._is_owned()


def test_streams_get_the_stream_lock_only_where_compiled(backend_name: str) -> None:
    """A stream's lock is the StreamLock under the compiled enqueue, an RLock without."""
    code = (
        "import aruntime as ar\n"
        f"gpu = ar.open_backend({backend_name!r})\n"
        "s = gpu.create_stream()\n"
        "print(type(s.state.lock).__name__)\n"
        "s.close(); gpu.close()\n"
    )
    kinds = []
    for switch in ("1", "0"):
        env = {**os.environ, "ARUNTIME_COMPILED_ENQUEUE": switch}
        env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1])
        out = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
        )
        if out.returncode != 0 and "unavailable" in out.stderr:
            pytest.skip(f"{backend_name} unavailable")
        assert out.returncode == 0, out.stderr
        kinds.append(out.stdout.strip())
    # Built or not, not switched on or off here: the child's switch is its own.
    built = load_core_extension("_aruntime_enqueue") is not None
    expected_compiled = "StreamLock" if built else "RLock"
    assert kinds == [expected_compiled, "RLock"]


class _CountedLock:
    """A stream lock that is not the extension's: an RLock that counts its takes and drops."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self._lock = threading.RLock()

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        self.calls.append("acquire")
        return self._lock.acquire(blocking, timeout)

    def release(self) -> None:
        self.calls.append("release")
        self._lock.release()

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def test_another_lock_is_taken_and_dropped_through_its_own_methods(
    gpu: ar.Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stream whose lock is not a StreamLock: the compiled enqueue calls its acquire and
    release, once each per op, and leaves it free."""
    monkeypatch.setattr("aruntime._streamstate.stream_lock", _CountedLock)
    with gpu.create_stream() as stream:
        lock = stream.state.lock
        assert isinstance(lock, _CountedLock)
        assert type(stream.enqueue).__name__ == "Enqueuer"
        ptr = gpu.alloc(64)
        lock.calls.clear()
        gpu.memset_async(ptr, 1, 64, stream=stream).wait(30)
        assert lock.calls.count("acquire") >= 1
        assert lock.calls.count("acquire") == lock.calls.count("release")
        free: list[bool] = []

        def take_and_drop() -> None:
            free.append(lock.acquire(blocking=False))
            if free[0]:
                lock.release()

        thread = threading.Thread(target=take_and_drop)
        thread.start()
        thread.join(30)
        assert free == [True]
        gpu.free(ptr)


class _SiteProbe:
    """A LaunchSite over a stand-in entry and caches, whose setter records what it is told."""

    def __init__(self) -> None:
        import cffi

        self.ffi = cffi.FFI()
        self.told: list[bytes] = []
        self.hooked = 0
        self.on_hook: Callable[[], None] | None = None
        self._callback = self.ffi.callback("void(const char *)", self._set)
        self.inside: dict[str, bool] = {}
        self.sites: dict[Any, Any] = {}
        self.note = _enqueue.launch_site(
            self._hook,
            inside=self.inside,
            sites=self.sites,
            setter=int(self.ffi.cast("uintptr_t", self._callback)),
        )

    def _set(self, site: Any) -> None:
        self.told.append(self.ffi.string(site))

    def _hook(self) -> None:
        self.hooked += 1
        if self.on_hook is not None:
            self.on_hook()


#: What a public method does: call into the core, which notes the launch.  Compiled as
#: if in a file of aruntime's own, which the note must look past.
_ENTRY_FILE = "/aruntime-under-test/_backend.py"
_entry_namespace: dict[str, Any] = {"sys": sys}
exec(
    compile(
        "def _entry(note, calls):\n"
        "    caller = sys._getframe(1)\n"
        "    calls.append((caller.f_code, caller.f_lasti))  # the key the hook's cache uses\n"
        "    note()\n",
        _ENTRY_FILE,
        "exec",
    ),
    _entry_namespace,
)
_entry: Callable[[Any, list[tuple[Any, int]]], None] = _entry_namespace["_entry"]


def _user(note: Any, calls: list[tuple[Any, int]]) -> None:
    """The user's launch, always from this one line."""
    _entry(note, calls)


def test_a_launch_site_note_uses_the_caches_or_the_hook() -> None:
    if not _enqueue.enabled():
        pytest.skip("the compiled enqueue is not built or is switched off")
    probe = _SiteProbe()
    note, calls = probe.note, []
    _user(note, calls)
    assert probe.hooked == 1 and probe.told == []  # no file classified yet: the hook
    probe.inside[_ENTRY_FILE] = True
    _user(note, calls)
    assert probe.hooked == 2  # past aruntime's frame, the caller's file is not classified
    code, lasti = calls[-1]
    probe.inside[code.co_filename] = False
    _user(note, calls)
    assert probe.hooked == 3  # its line is not cached yet
    probe.sites[(id(code), lasti)] = (code, b"user.py:7")  # what the hook caches
    _user(note, calls)
    assert probe.told == [b"user.py:7"] and probe.hooked == 3 and note.taken == 1
    probe.inside[code.co_filename] = True  # a caller inside aruntime: walked past, up to
    _user(note, calls)  # pytest's frames, not classified: the hook finds the user
    assert probe.hooked == 4 and note.taken == 1
    probe.inside[code.co_filename] = False
    probe.sites[(id(code), lasti)] = (_entry.__code__, b"stale.py:1")  # an id reused
    _user(note, calls)
    assert probe.hooked == 5 and note.taken == 1 and probe.told == [b"user.py:7"]
    assert {c for c in calls} == {(code, lasti)}  # every call came from the same instruction


def test_a_note_with_the_users_frame_innermost_takes_it() -> None:
    """Through a Backend's compiled front no Python frame lies between the user's and
    the note: the innermost frame is the launch's site."""
    if not _enqueue.enabled():
        pytest.skip("the compiled enqueue is not built or is switched off")
    probe = _SiteProbe()
    note = probe.note
    here = sys._getframe(0).f_code

    def cache_the_callers_site() -> None:  # what the sims' hook does: _sim_faults._site_bytes
        frame = sys._getframe(2)  # past _hook: the caller of the note
        assert frame.f_code is here
        probe.sites[(id(here), frame.f_lasti)] = (here, b"front.py:3")

    probe.on_hook = cache_the_callers_site
    probe.inside[here.co_filename] = False
    for _ in range(3):
        note()  # one instruction, three launches
    assert probe.hooked == 1 and note.taken == 2
    assert probe.told == [b"front.py:3"] * 2
    probe.inside[here.co_filename] = True  # innermost inside aruntime: walked past it
    note()
    assert probe.hooked == 2 and note.taken == 2


def test_a_launch_site_note_checks_what_it_is_given() -> None:
    module = _enqueue._module()
    if module is None:
        pytest.skip("the compiled enqueue is not built or is switched off")
    good: dict[str, Any] = dict(inside={}, sites={}, hook=print, setter=1)
    with pytest.raises(TypeError, match="non-null"):
        module.LaunchSite(**{**good, "setter": 0})
    with pytest.raises(TypeError):
        module.LaunchSite(**{**good, "inside": []})
    note = module.LaunchSite(**good)
    with pytest.raises(TypeError, match="no arguments"):
        note(1)


def test_host_view_takes_only_the_plain_case_and_matches_as_host_view(gpu: ar.Backend) -> None:
    """Its view is as_host_view's, byte for byte (typed data cast to bytes, as it casts);
    None wherever as_host_view must look or refuse."""
    from aruntime._validate import as_host_view

    view_of = _enqueue.host_viewer()
    if not _enqueue.enabled():
        assert view_of(bytearray(4), False) is None
        return
    pinned = gpu.alloc_host_pinned(64)
    pinned[:] = np.arange(64, dtype=np.uint8)
    taken = {
        "uint8 array": (np.arange(16, dtype=np.uint8), True),
        "bytearray": (bytearray(b"abcd"), True),
        "bytes, read": (b"abcd", False),
        "memoryview": (memoryview(bytearray(8)), True),
        "pinned": (pinned, True),
        "float32 array (cast)": (np.arange(4, dtype=np.float32), True),
        "2-D array (cast)": (np.arange(4, dtype=np.uint8).reshape(2, 2), False),
        "complex array (cast)": (np.ones(3, np.complex64), False),
    }
    for what, (obj, writable) in taken.items():
        view = view_of(obj, writable)
        assert view is not None, what
        expected = as_host_view(obj, "test", writable=writable)
        assert view.tobytes() == expected.tobytes() and view.obj is expected.obj, what
        assert view.format == "B" and view.ndim == 1, what
    left = {
        "strided array": (np.zeros(8, np.uint8)[::2], False),
        "read-only float32 array, written": (np.frombuffer(b"abcdefgh", np.float32), True),
        "objects": (np.array([None, 1], dtype=object), False),
        "bytes, written": (b"abcd", True),
        "a list": ([1, 2], False),
        "a DevicePtr": (gpu.alloc(8), False),
    }
    for what, (obj, writable) in left.items():
        assert view_of(obj, writable) is None, what
    gpu.free(left["a DevicePtr"][0])
    gpu.free_host_pinned(pinned)
    assert view_of(pinned, False) is None  # freed: as_host_view says so
    with pytest.raises(ar.InvalidArgumentError, match="freed"):
        as_host_view(pinned, "copy_h2d_async", writable=False)


def test_a_copy_of_a_freed_pinned_buffer_is_refused(gpu: ar.Backend) -> None:
    pinned = gpu.alloc_host_pinned(16)
    ptr = gpu.alloc(16)
    gpu.free_host_pinned(pinned)
    with pytest.raises(ar.InvalidArgumentError, match="copy_h2d_async: the HostBuffer was freed"):
        gpu.copy_h2d_async(pinned, ptr)
    with pytest.raises(ar.InvalidArgumentError, match="copy_d2h_async: the HostBuffer was freed"):
        gpu.copy_d2h_async(ptr, pinned)
    gpu.free(ptr)


@pytest.mark.parametrize("backend_name", ["mock", "cuda-sim"])
def test_a_checked_op_runs_through_the_compiled_steps(
    backend_name: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The checker's ``run`` is the compiled plain steps (a Runner) on a race-checked
    stream; under a trace it hands the op to the policy's own ``run``, which traces."""
    if not _enqueue.enabled():
        pytest.skip("the compiled enqueue is not built or is switched off")
    from aruntime._racecheck import RaceCheck

    runs: list[str] = []
    real = RaceCheck.run

    def spy(self: RaceCheck, op: Op, stream: Any, run: Any) -> Any:
        runs.append(type(run).__name__)
        return real(self, op, stream, run)

    monkeypatch.setattr(RaceCheck, "run", spy)  # before the stream binds it
    try:
        gpu = ar.open_backend(backend_name, check_hazards=True)
    except ar.BackendUnavailableError as exc:
        pytest.skip(f"{backend_name} unavailable: {exc}")
    with gpu:
        host = np.arange(64, dtype=np.uint8)
        ptr = gpu.alloc(64)
        with gpu.create_stream() as stream:
            gpu.copy_h2d_async(host, ptr, stream=stream)
            out = gpu.copy_d2h_async(ptr, np.zeros(64, np.uint8), stream=stream).wait(30)
            np.testing.assert_array_equal(out, host)
            assert runs == ["Runner", "Runner"]
            with gpu.trace(tmp_path / "trace.json"):
                gpu.memset_async(ptr, 7, 64, stream=stream).wait(30)
            assert runs[-1] == "Runner"  # the Runner itself hands a traced op on
            spans = [
                e
                for e in json.loads((tmp_path / "trace.json").read_text())["traceEvents"]
                if e.get("name") == "memset_async"
            ]
            assert len(spans) == 1, spans
        gpu.free(ptr)
