"""Completion: the awaitable result of one enqueued device op.

A Completion is finished by whichever thread learns that the device is done
(a backend's waiter thread, or the enqueueing thread for the mock).  Finishing
runs the registered wake-ups *on that thread*; each wake-up only hands a
callback to its event loop through the loop's own thread-safe, non-blocking
primitive (asyncio ``call_soon_threadsafe``, trio ``TrioToken.run_sync_soon``),
so no thread ever blocks on a loop and a closed loop or finished trio run is
simply skipped.
"""

from __future__ import annotations

import itertools
import logging
import numbers
import os
import sys
import threading
import time
from collections.abc import Callable, Generator
from typing import Any

from ._blocking import check as check_blocking
from ._exceptions import AruntimeError, CaptureError, InvalidArgumentError
from ._loop import _ONE_YIELD, checkpoint, checkpoint_returning, park, stepper
from ._protocols import CompletionHooks

__all__ = [
    "Completion",
    "born_captured",
    "born_done",
    "done_none",
    "fail_forked",
    "failed",
    "finish",
    "release_views",
    "run_wakeups",
    "seconds_from_env_us",
    "settled",
    "watched",
]

_log = logging.getLogger("aruntime")

_PENDING = 0
_DONE = 1
_FAILED = 2
_CAPTURED = 3

_Callback = Callable[[], None]


def seconds_from_env_us(name: str, default: float) -> float:
    """A duration knob given in microseconds (``default`` if unset or not a number), in seconds.

    Negative values count as 0.  Shared with the waiter's own spin knob.
    """
    raw = os.environ.get(name, "").strip()
    try:
        return max(float(raw), 0.0) * 1e-6 if raw else default * 1e-6
    except ValueError:
        _log.warning("%s=%r is not a number; using %s", name, raw, default)
        return default * 1e-6


#: How long an ``await`` of a pending op asks again at each loop step before
#: it parks (``ARUNTIME_AWAIT_SPIN_US``; 0 parks at once).  500 us: an op
#: that outlasts the window pays the waiter thread's round trip (about 100 us
#: on the sims here), which a user's polling loop never pays, and 50 us was
#: outlasted by a 128-block launch on the sims (1.5x the poller's time, 1.0x
#: with 500 us); awaiting a 50 ms op still costs the loop thread under 2% of
#: a core (DESIGN.md 6.3 allows 5%).
AWAIT_SPIN_S = seconds_from_env_us("ARUNTIME_AWAIT_SPIN_US", 500.0)

#: Numbers Completions in the order their ops were queued (``next`` is atomic
#: under the GIL): stream order for errors, see StreamState.ordered_error.
next_seq = itertools.count(1).__next__


def _check_timeout(timeout: object, op: str) -> float:
    """A non-negative number of seconds, capped at what ``threading`` accepts."""
    if isinstance(timeout, bool) or not isinstance(timeout, numbers.Real):
        raise TypeError(
            f"{op}: wait timeout must be None or a number of seconds, got {type(timeout).__name__}"
        )
    value = float(timeout)
    if not value >= 0:  # also rejects NaN
        raise InvalidArgumentError(f"{op}: wait timeout must be None or >= 0, got {timeout!r}")
    # threading's waits overflow past TIMEOUT_MAX; longer is "forever" in practice.
    return min(value, threading.TIMEOUT_MAX)


class Completion:
    """The outcome of one enqueued op.

    ``await completion`` returns when the device has finished the op: the
    destination buffer for ``copy_d2h_async``, ``None`` otherwise.  It works
    under asyncio and trio and is always a checkpoint, even when the op was
    already done.

    Cancellation: cancelling the awaiting task abandons the wait only.  The op
    continues on the device, and every host buffer it reads or writes stays
    referenced (and, for resizable objects, locked against resizing) until the
    device has finished with it.

    Awaiting a pending op first asks the driver, once and without blocking,
    whether it is already done, and if so finishes it (and the done ops
    queued before it on its stream) on the awaiting thread: see _waiter.py.
    The stream's unmarked last op is asked about after the await's first
    loop step instead (:meth:`_await_tail`).

    A Completion of an op recorded during graph capture never runs: awaiting
    it, or calling :meth:`wait`, raises :class:`CaptureError`.

    A Completion is an awaitable, not a coroutine: a task group cannot run
    it (``tg.start_soon(gpu.copy_d2h_async, ...)`` raises ``TypeError``);
    await several with :func:`aruntime.gather`.
    """

    __slots__ = (
        "__weakref__",
        "_callbacks",
        "_error",
        "_hooks",
        "_keepalive",
        "_lock",
        "_op",
        "_result",
        "_seen",
        "_seq",
        "_state",
        "_views",
    )

    _hooks: CompletionHooks[Completion] | None

    def __init__(
        self,
        op: str,
        hooks: CompletionHooks[Completion] | None = None,
        result: Any = None,
        keepalive: tuple[Any, ...] = (),
        views: tuple[memoryview, ...] = (),
    ) -> None:
        self._op = op
        self._hooks = hooks
        self._result = result
        self._error: BaseException | None = None
        self._state = _PENDING
        self._keepalive = keepalive
        # Views the core made of the caller's buffers (released when the op
        # finishes, which unlocks resizing); the caller's own objects, even
        # memoryviews, are only referenced, never released.
        self._views = views
        self._callbacks: list[_Callback] = []
        self._lock = threading.Lock()
        # What to tell when the host first sees the op finished (hazard checking).
        self._seen: _Callback | None = None
        self._seq = next_seq()

    # -- public ------------------------------------------------------------
    @property
    def op(self) -> str:
        """The op's name (``"copy_h2d_async"``, ``"launch"``...)."""
        return self._op

    def done(self) -> bool:
        """True once the device has finished the op (or it failed).  Never blocks.

        The stream's last op, with no marker yet, is asked about as an
        awaited one is (``probe_tail``): a loop of ``done()`` checks sees it
        finish as soon as the stream says so, with no marker and no waiter
        thread between.
        """
        hooks = self._hooks
        if hooks is not None and hooks.tail is self:
            probe = hooks.ask_tail or hooks.probe_tail  # as in _await_tail
            if not probe(self):
                return False  # still running, still the unmarked tail: ask again later
        state = self._state
        if state == _PENDING:
            self._kick_waiter()  # someone is watching: its waiter must not sleep on it
            return False
        if state == _CAPTURED:
            return False
        if self._seen is not None:
            self._host_saw()
        return True

    def exception(self) -> BaseException | None:
        """The op's error, or None if it succeeded.

        Raises :class:`AruntimeError` while the op is still pending and
        :class:`CaptureError` for an op recorded during capture.  Asking marks
        the error as seen, so ``synchronize()`` will not raise it again.
        """
        state = self._state
        if state == _CAPTURED:
            raise CaptureError(f"{self._op}: this op was recorded into a graph and never runs")
        if state == _PENDING:
            raise AruntimeError(f"{self._op}: still pending; await it or call wait() first")
        if self._seen is not None:
            self._host_saw()
        if state == _FAILED:
            self._observe()
            return self._error
        return None

    def wait(self, timeout: float | None = None) -> Any:
        """Block the calling thread until the op finishes; return like ``await``.

        For synchronous code only: it blocks the thread (and the event loop,
        if called from one).  Raises :class:`TimeoutError` if ``timeout``
        seconds pass first; the op itself continues.
        """
        check_blocking(f"Completion.wait() (of {self._op})", "'await' on the Completion instead")
        return self._block(timeout)

    def _block(self, timeout: float | None = None) -> Any:
        """:meth:`wait`, for the blocking calls that have checked their own caller."""
        if timeout is not None:
            timeout = _check_timeout(timeout, self._op)
        if self._state == _PENDING:
            flag = threading.Event()
            if self.subscribe(flag.set) and not flag.wait(timeout):
                self.unsubscribe(flag.set)
                raise TimeoutError(f"{self._op}: not finished after {timeout} s")
        return self._outcome()

    def subscribe(self, fn: _Callback) -> bool:
        """Call ``fn()`` once the op finishes; False (and no call) if it already has.

        ``fn`` runs on whichever thread finishes the op (a waiter thread, or an
        awaiting one), so it must be quick, must not block and must not
        raise.  Tracing and the core's deferred releases use this hook.
        """
        hooks = self._hooks
        if hooks is not None and hooks.tail is self:
            hooks.mark_tail(self)
        lock = self._lock
        lock.acquire()
        try:
            if self._state != _PENDING:
                return False
            self._callbacks.append(fn)
        finally:
            lock.release()
        self._kick_waiter()
        return True

    def unsubscribe(self, fn: _Callback) -> None:
        """Undo :meth:`subscribe` (nothing happens if ``fn`` ran or was never added)."""
        with self._lock:
            try:
                self._callbacks.remove(fn)
            except ValueError:
                pass

    @property
    def finished(self) -> bool:
        """Whether the op has finished (or failed), without counting as the host seeing it.

        :meth:`done` also orders the host after the op for race checking;
        the core's own bookkeeping asks this instead.
        """
        state = self._state
        return state in (_DONE, _FAILED)

    @property
    def order(self) -> int:
        """Where this op was queued among all ops: later ops have larger numbers (0: born done)."""
        return self._seq

    @property
    def hooks(self) -> CompletionHooks[Completion] | None:
        """The stream this op was queued on, as Completions see it (None for one born done)."""
        return self._hooks

    @property
    def error(self) -> BaseException | None:
        """The op's error once it failed, without marking it seen (None otherwise)."""
        return self._error

    def __await__(self) -> Generator[Any, None, Any]:
        if self._state == _PENDING:
            hooks = self._hooks
            if hooks is not None:
                if hooks.tail is self and AWAIT_SPIN_S > 0.0:
                    return self._await_tail(hooks)
                if hooks.tail is self:
                    hooks.mark_tail(self)  # often finishes it: the device is past it
                if self._state == _PENDING:
                    hooks.finish_ready(self)
        if self._state == _DONE:
            # Finished already (always, on the mock): still a checkpoint, and
            # one made without a generator of our own around it.
            seen = self._seen
            if seen is not None:  # _host_saw, inline: with race checking, every mock op
                self._seen = None
                seen()
            result = self._result
            if result is None and "trio" not in sys.modules:
                return iter(_ONE_YIELD)  # type: ignore[return-value]  # checkpoint_returning, inline
            return checkpoint_returning(result)
        return self._await_slow()

    def _await_tail(self, hooks: CompletionHooks[Completion]) -> Generator[Any, None, Any]:
        """Await the stream's last op, with nothing queued before it left to wait for.

        As a user's polling loop would: the stream itself is asked at each
        loop step (``probe_tail``: one query), with no marker recorded and
        no waiter involved, for the spin window (DESIGN.md 6.3).  On CUDA
        with the compiled enqueue the ask, and the op's finish once the
        stream is done, is one C call (``ask_tail``, ffi/core/tailprobe.c,
        ``probe_tail`` in C), which calls ``probe_tail`` only for what it
        cannot tell.  The first
        ask comes after the first loop step, not before it: an await is a
        checkpoint either way, and a tail awaited right after its enqueue
        (a launch, above all) is rarely done yet, so an ask before the
        step would mostly be wasted.  Once the
        op is no longer the unmarked tail (a later op, a synchronize or an
        event record gave it a marker) or the window ends (its marker now),
        it is awaited as any marked op, in what is left of the window.
        Cancelled meanwhile, the op stays the stream's unmarked tail, as if
        it had never been awaited.
        """
        clock = time.perf_counter
        deadline = clock() + AWAIT_SPIN_S
        probe = hooks.ask_tail or hooks.probe_tail
        step = stepper()
        while True:
            yield from step()
            if probe(self):
                break
            if clock() >= deadline:
                hooks.mark_tail(self)
                break
        if self._state == _PENDING:
            hooks.finish_ready(self)
        if self._state != _PENDING:
            return self._outcome()
        return (yield from self._await_slow(deadline))

    def _await_slow(self, deadline: float | None = None) -> Generator[Any, None, Any]:
        hooks = self._hooks
        if self._state == _PENDING and hooks is not None and AWAIT_SPIN_S > 0.0:
            yield from self._poll(hooks, deadline)
            if self._state != _PENDING:
                return self._outcome()
        if self._state == _PENDING:
            yield from park(self.subscribe, self.unsubscribe)
        else:
            yield from checkpoint()
        return self._outcome()

    def _poll(
        self, hooks: CompletionHooks[Completion], deadline: float | None = None
    ) -> Generator[Any, None, None]:
        """Ask again at each loop step, for a bounded time, before parking (DESIGN.md 6.3).

        What a user's polling loop does, with the waiter thread kept asleep
        meanwhile: an op that ends within the window is finished here, with
        no thread woken, and the loop's other tasks run between the asks.
        ``deadline``: the window's end, where part of it was spent already.
        """
        clock = time.perf_counter
        if deadline is None:
            deadline = clock() + AWAIT_SPIN_S
        hooks.poll_begin()
        step = stepper()
        try:
            while True:
                yield from step()
                hooks.finish_ready(self)
                if self._state != _PENDING or clock() >= deadline:
                    return
        finally:
            hooks.poll_end()

    def __repr__(self) -> str:
        state = ("pending", "done", "failed", "captured")[self._state]
        # Task groups name the returned object when `tg.start_soon(gpu.copy_d2h_async, ...)`
        # fails for want of a coroutine: the repr is the only place to say what to do.
        return f"<Completion {self._op} {state} (await it; aruntime.gather() awaits several)>"

    # -- internals -----------------------------------------------------------
    def _kick_waiter(self) -> None:
        """Wake the stream's waiter thread now if its wake-up was deferred (see _waiter.py)."""
        hooks = self._hooks
        if hooks is not None:
            hooks.kick()

    def _finish_if_ready(self) -> None:
        """Finish this op (and the done ones queued before it) here if the device is done.

        Saves the two thread wake-ups of the waiter path (waiter thread, then
        the loop) when the op finished before it was awaited: see _waiter.py.
        """
        hooks = self._hooks
        if hooks is not None:
            hooks.finish_ready(self)

    def _host_saw(self) -> None:
        """The host has seen the op finish: say so once (see :func:`watched`)."""
        seen, self._seen = self._seen, None
        if seen is not None:
            seen()

    def _outcome(self) -> Any:
        state = self._state
        if self._seen is not None and state in (_DONE, _FAILED):
            self._host_saw()
        if state == _DONE:
            return self._result
        if state == _FAILED:
            self._observe()
            assert self._error is not None
            raise self._error
        if state == _CAPTURED:
            raise CaptureError(
                f"{self._op}: this op was recorded during graph capture and never runs; "
                "await launch_graph(graph) instead"
            )
        raise AruntimeError(f"{self._op}: woke before finishing")  # pragma: no cover

    def _observe(self) -> None:
        hooks = self._hooks
        if hooks is not None:
            hooks.forget_failure(self)

    def _finish(self, error: BaseException | None = None) -> None:
        """Mark the op finished (on any thread) and run the wake-ups.

        The stream decides the outcome first: an op queued after one that
        failed fails too, naming that first failure (stream order).
        """
        hooks = self._hooks
        if hooks is not None and (error is not None or hooks.ordering):
            error = hooks.ordered_error(self, error)
        lock = self._lock
        lock.acquire()  # not ``with``: every op that finishes comes here, and it costs twice
        try:
            if self._state != _PENDING:
                return
            if error is None:
                self._state = _DONE
            else:
                self._error = error
                self._state = _FAILED
            callbacks, self._callbacks = self._callbacks, _NO_CALLBACKS
            views, self._views = self._views, ()
            self._keepalive = ()
        finally:
            lock.release()
        if error is not None and hooks is not None:
            hooks.note_failure(self)
        if views:
            release_views(views)
        if callbacks:
            run_wakeups(callbacks)

    # -- for the module's functions below: a Completion changes only its own state

    def _init_born(self, op: str, result: Any, state: int) -> None:
        self._op = op
        self._hooks = None
        self._result = result
        self._error = None
        self._state = state
        self._keepalive = ()
        self._views = ()
        self._callbacks = []
        self._lock = _NO_LOCK
        self._seen = None
        self._seq = 0

    def _watched(self, seen: _Callback) -> Completion:
        """:func:`watched`: this Completion, or a copy of a shared finished one."""
        if self._lock is not _NO_LOCK:
            self._seen = seen
            return self
        # A copy of a shared finished one (what born_done makes, inlined: with
        # stream-race checking on, every mock op comes here).
        watched: Completion = _new_object(Completion)
        watched._op = self._op
        watched._hooks = None
        watched._result = self._result
        watched._error = None
        watched._state = self._state
        watched._keepalive = ()
        watched._views = ()
        watched._callbacks = []
        watched._lock = _NO_LOCK
        watched._seen = seen
        watched._seq = 0
        return watched

    def _fail_queued(self, error: BaseException) -> tuple[Any, ...]:
        with self._lock:
            held = (*self._keepalive, *self._views)
            self._views = ()
        # In stream order: an op queued before this one and still pending
        # finishes first (a synchronize() never fails ahead of the work it covers).
        hooks = self._hooks
        if hooks is None or not hooks.after_pending(lambda: self._finish(error)):
            self._finish(error)
        return held

    def _fail_forked(self, error: Callable[[str], BaseException]) -> None:
        self._lock = threading.Lock()
        if self._state != _PENDING:
            return
        self._error = error(self._op)
        self._state = _FAILED
        self._callbacks = []
        self._keepalive = ()
        self._views = ()


class _NoLock:
    """A lock for born-finished completions, whose state never changes."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None

    def acquire(self) -> bool:
        return True

    def release(self) -> None:
        return None


#: The callbacks of a finished Completion: none, and none can be added (subscribe
#: checks the state first), so every finished one shares this empty list.
_NO_CALLBACKS: list[_Callback] = []


_NO_LOCK: Any = _NoLock()
_new_object = object.__new__
_DONE_NONE: dict[str, Completion] = {}


def born_done(op: str, result: Any = None, state: int = _DONE) -> Completion:
    """A Completion that is finished before anyone sees it (mock ops, no-op sizes)."""
    c = Completion.__new__(Completion)
    c._init_born(op, result, state)
    return c


#: ``watched(completion, seen)``: ``completion``, made to call ``seen()`` once
#: the host first sees it finished.  Seeing is what orders the host after an
#: op: awaiting it, ``wait()``, or ``done()`` or ``exception()`` answering.  A
#: Completion born finished may be shared between ops (:func:`done_none`), so
#: it is copied first.  The method itself, not a function around it: with
#: race checking on, every op passes here.
watched: Callable[[Completion, _Callback], Completion] = Completion._watched


def done_none(op: str) -> Completion:
    """A shared, finished, result-less Completion for ``op``.

    A finished Completion never changes again (no callbacks, no error, no
    stream to report to), so one object per op name serves every caller.
    """
    done = _DONE_NONE.get(op)
    if done is None:
        done = _DONE_NONE[op] = born_done(op)
    return done


#: Finish a Completion (on any thread), with the error if its op failed:
#: ``finish(completion, error=None)``.  The method itself, not a function
#: around it: every op that finishes passes here, and a call costs.
finish: Callable[..., None] = Completion._finish


def failed(completion: Completion, error: BaseException) -> Completion:
    """Fail a Completion that was never handed out (its enqueue raised); returns it."""
    completion._finish(error)
    return completion


def failed_queued(completion: Completion, error: BaseException) -> tuple[Any, ...]:
    """Fail a Completion whose op reached the driver but has no marker behind it.

    Returns the op's buffers (its keepalive and views, the views not
    released): the op may still use them, so the caller holds them until the
    stream is past it.
    """
    return completion._fail_queued(error)


def fail_forked(completion: Completion, error: Callable[[str], BaseException]) -> None:
    """In a forked child: fail ``completion``, pending on a thread that did not survive fork().

    Its lock may have been held by such a thread, so it gets a new one, and
    its wake-ups are dropped, not run: they belong to the parent's loops.
    """
    completion._fail_forked(error)


def born_captured(op: str) -> Completion:
    """The Completion of an op recorded into a graph: it never runs."""
    return born_done(op, None, _CAPTURED)


class settled:
    """Wait until ``completion`` finishes, without taking its outcome.

    Awaiting it would mark a failure as seen, and the op's error belongs to
    whoever awaits the op (or to the stream's next ``synchronize()``).
    """

    __slots__ = ("_completion",)

    def __init__(self, completion: Completion) -> None:
        self._completion = completion

    def __await__(self) -> Generator[Any, None, None]:
        completion = self._completion
        if not completion.done():
            yield from park(completion.subscribe, completion.unsubscribe)


def run_wakeups(callbacks: list[_Callback]) -> None:
    """Run a finished op's wake-ups, each once; one that fails is logged, the rest still run."""
    for fn in callbacks:
        try:
            fn()
        except Exception:  # a wake-up must never stop the others
            _log.exception("Completion wake-up failed")


def release_views(views: tuple[memoryview, ...]) -> None:
    """Release the core's own views of an op's host buffers, unlocking resizable ones."""
    for view in views:
        try:
            view.release()
        except BufferError:
            pass  # someone else still exports it; dropping our reference is enough
