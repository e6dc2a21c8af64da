"""Waiter threads: one per stream that has had async work, created lazily.

A stream executes in order, so its ops finish in the order they were queued.
Each waiter thread therefore handles one marker event at a time, in FIFO
order, then finishes the matching Completion, which wakes the awaiting loops.
Threads are O(streams), never one per await, and the event loop itself never
polls at an interval.

Python runs on these threads, but they are ours, not the driver's: no driver
lock is held while the wake-ups run.

Waiting policy (docs/design.md, "Threads": spin-then-block, measured)
---------------------------------------------------------------------
Thread wake-ups and the GIL, not driver calls, are what an await costs on
the sims, so the policy removes wake-ups rather than shaving calls (the
measurements behind it are in ``docs/performance.md`` and come from
``benchmarks/bench_backends.py``):

0. ``submit`` asks, once and without blocking, whether the op is done
   already (on the sims a small copy or memset on an idle engine, and a
   marker on an idle stream, complete within the enqueue: see
   ``ffi/sim/engine_threads.c``).  If it is, and nothing queued before it on
   the stream is left to finish, it is finished right there, with the same
   ``event_wait`` (returns at once, raises the op's error) and marker return
   as the thread uses: no thread is woken or even started, and awaiting it
   is one checkpoint.  The policy asks first
   (:meth:`StreamWaiter.settle_if_passed`, the one place that settles an op
   at its submit) and hands over an already finished Completion, so no
   pending one is made and finished for such an op.
1. ``await`` first asks, once and without blocking, whether the op is done
   (:meth:`StreamWaiter.finish_ready`: one lock-free ``event_query`` per op
   queued before it, only when the waiter thread is not mid-op).  If it is,
   the op is finished on the awaiting thread, in queue order, with the same
   ``event_wait`` (returns at once, raises the op's error) and marker return
   as the thread uses, and neither the waiter thread nor the loop wakes.  One
   query per ``await`` is not polling.
2. ``submit`` from a thread running an event loop does not wake a parked
   waiter thread at once: the wake-up is deferred to the end of the current
   loop step (asyncio ``call_soon``, trio ``run_sync_soon``), so an op that
   the task awaits, and finds done, costs no thread wake-up at all.  Anyone
   who starts to wait (an ``await`` that finds the op pending, ``wait()``,
   ``done()``, any internal callback: :meth:`kick`) wakes it at once, and so
   does closing the stream, so a loop that is blocked or closed before the
   deferred call runs strands nothing.  Without a loop, ``submit`` wakes the
   thread at once.  ``ARUNTIME_AWAIT_QUERY=0`` turns 0, 1 and 2 off.
3. The waiter thread polls ``event_query`` (lock-free on both sims, cheap on
   real CUDA; cffi releases the GIL on every call) for up to
   ``ARUNTIME_WAITER_SPIN_US`` microseconds (default 50; 0 parks at once),
   then parks in the driver's blocking wait (CUDA: a ``BLOCKING_SYNC``
   event; Level Zero: ``zeEventHostSynchronize``).  After a spin that sees
   the op done, or a query that raises, it still calls ``event_wait`` once:
   that is what raises the op's error.  The spin adapts per stream: after an
   op that took more than twice the window to finish, the next op parks at
   once, so a stream of long ops does not spin, and the spin costs at most
   one window of CPU per op that ends within two.  In the wake-latency
   benchmark the spin changed nothing measurable (1 and 2 did the work); it
   is kept for ops that end just after the waiter reaches them.
"""

from __future__ import annotations

import collections
import enum
import logging
import os
import threading
import time
import weakref
from collections.abc import Callable
from typing import Final, Literal, Protocol

from ._completion import Completion, fail_forked, finish, seconds_from_env_us
from ._driver import Driver, DriverEvent
from ._exceptions import AruntimeError, DriverError
from ._loop import defer_to_loop

__all__ = ["AWAIT_QUERY", "QUEUED", "StreamWaiter"]

_log = logging.getLogger("aruntime")


#: How long a waiter thread polls ``event_query`` before parking in ``event_wait``.
_SPIN_S = seconds_from_env_us("ARUNTIME_WAITER_SPIN_US", 50.0)
#: Whether ``await`` first asks (once, without blocking) whether the op is already done.
AWAIT_QUERY = _AWAIT_QUERY = os.environ.get("ARUNTIME_AWAIT_QUERY", "1").strip() != "0"

_Item = tuple[DriverEvent, Completion, "Callable[[DriverEvent], None] | None"]


class _TailOwner(Protocol):
    """The stream state a waiter asks for the stream's last, unmarked op (_streamstate)."""

    lock: threading.RLock
    tail: Completion | None

    def flush_tail(self) -> None: ...


class _Queued(enum.Enum):
    QUEUED = "queued"


#: What :meth:`StreamWaiter.settle_if_passed` returns for an op the device is not past yet.
QUEUED: Final = _Queued.QUEUED


class StreamWaiter:
    """Finishes a stream's Completions in order, on one lazily started thread."""

    def __init__(self, driver: Driver, label: str, tail_owner: _TailOwner | None = None) -> None:
        self._driver = driver
        self._label = label
        # The stream's state, weakly (it holds this waiter): its last op may
        # have no marker yet, and whoever asks what is pending needs it to.
        self._tail_owner = None if tail_owner is None else weakref.ref(tail_owner)
        self._queue: collections.deque[_Item] = collections.deque()
        # Reentrant: a garbage-collection finalizer that closes this waiter may
        # run on this very thread while it holds the lock.
        # Taken as ``with self._lock``: a Condition's own ``with`` runs Python code.
        self._lock = threading.RLock()
        self._cond = threading.Condition(self._lock)
        self._thread: threading.Thread | None = None
        self._closing = False
        self._exited = False
        self._on_exit: list[Callable[[], None]] = []
        self._abandon = False
        self._current: Completion | None = None  # the popped item's Completion
        # Held by whoever pops and finishes items (the thread, or finish_ready),
        # so that Completions finish in queue order.
        self._turn = threading.Lock()
        self._spin_next = True  # see _complete
        self._parked = False  # the thread waits on _cond for work
        self._kick_pending = False  # its wake-up is deferred to the end of a loop step
        self._pollers = 0  # awaiting tasks polling from their loops (Completion._poll)

    def submit(
        self,
        event: DriverEvent,
        completion: Completion,
        release: Callable[[DriverEvent], None] | None,
    ) -> None:
        """Hand over an op's marker and Completion; the caller holds the stream's lock.

        An op that the device has finished by now, with nothing of this
        stream's before it left to finish, is finished here: nothing else
        needs to run for it, and no thread is woken or started (see 0. in
        the module's docstring).
        """
        # settle_if_passed, inline: an await of a fresh op comes here.
        if self._closing:
            raise AruntimeError(f"{self._label}: stream is closing")
        if self._queue or self._current is not None or not _AWAIT_QUERY:
            self.enqueue(event, completion, release)
            return
        try:
            passed = self._driver.event_query(event)
        except DriverError:
            passed = True  # an error: settle's event_wait raises it, as the thread's would
        if not passed:
            self.enqueue(event, completion, release)
            return
        outcome = self.settle(event, release, completion)
        if not self._abandon:
            finish(completion, outcome)

    def settle_if_passed(
        self, event: DriverEvent, release: Callable[[DriverEvent], None] | None, op: str
    ) -> BaseException | Literal[_Queued.QUEUED] | None:
        """The op's outcome if the device is past ``event`` with nothing here before it, else
        :data:`QUEUED`, and the caller hands the op to :meth:`enqueue`.

        The one place an op is settled at its submit (0. in the module's
        docstring): :meth:`passed`, then :meth:`settle`, which returns the
        marker.  The caller holds the stream's lock and has just recorded
        ``event``.
        """
        if not self.passed(event):
            return QUEUED
        return self.settle(event, release, op)

    @property
    def idle(self) -> bool:
        """Nothing queued here, nothing being waited on: every op handed over has finished."""
        return not self._queue and self._current is None

    @property
    def abandoned(self) -> bool:
        """True after interpreter exit began (:meth:`abandon`): nothing is to be finished."""
        return self._abandon

    def passed(self, event: DriverEvent) -> bool:
        """Whether the device is past ``event`` with nothing queued here before it.

        The caller holds the stream's lock and has just recorded ``event``
        behind an op.  True means the op may be settled (:meth:`settle`) and
        finished on the caller's thread: 0. in the module's docstring.  Raises
        if the stream is closing.
        """
        # Read without _cond: submits are serialized by the stream's lock, and
        # the thread and finish_ready only take what is queued, so a waiter
        # seen idle stays idle; one seen busy is left to queue in order.
        if self._closing:
            raise AruntimeError(f"{self._label}: stream is closing")
        if self._queue or self._current is not None or not _AWAIT_QUERY:
            return False
        try:
            return self._driver.event_query(event)
        except DriverError:
            return True  # an error: settle's event_wait raises it, as the thread's would

    def settle(
        self,
        event: DriverEvent,
        release: Callable[[DriverEvent], None] | None,
        op: str | Completion,
    ) -> BaseException | None:
        """The error of the op behind ``event``, which it is past; then return the marker.

        ``event_wait`` returns at once on a passed event, and is what raises
        the op's error (Level Zero reports replay failures only there).  An
        interrupt (KeyboardInterrupt, SystemExit) is not the op's outcome: it
        propagates, after the marker is returned (the device is past it).  A
        caller that must settle the op again passes no ``release`` and keeps
        the marker.
        """
        error: BaseException | None = None
        try:
            self._driver.event_wait(event)
        except DriverError as exc:
            error = exc
        except (KeyboardInterrupt, SystemExit):
            _return_marker(release, event)
            raise
        except BaseException as exc:  # never leave an awaiter hanging
            name = op if isinstance(op, str) else op.op
            error = AruntimeError(f"{name}: waiting for the device failed: {exc!r}")
            error.__cause__ = exc
        if release is not None:  # _return_marker, inline: every settled op comes here
            try:
                release(event)
            except Exception:
                _log.exception("returning a marker event failed")
        return error

    def enqueue(
        self,
        event: DriverEvent,
        completion: Completion,
        release: Callable[[DriverEvent], None] | None,
    ) -> None:
        """Queue an op's marker and Completion for the thread (the stream's lock is held)."""
        lock = self._lock
        lock.acquire()
        try:
            if self._closing:
                raise AruntimeError(f"{self._label}: stream is closing")
            self._queue.append((event, completion, release))
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name=f"aruntime-waiter-{self._label}", daemon=True
                )
                self._thread.start()
                return
            if not self._parked or self._kick_pending:
                return  # busy: it reaches this item by itself; or a wake is on its way
            self._kick_pending = _AWAIT_QUERY and defer_to_loop(self._deferred_kick)
            if not self._kick_pending:
                self._cond.notify()
        finally:
            lock.release()

    def _deferred_kick(self) -> None:
        """The wake-up deferred to the end of a loop step: held back while a task polls."""
        if self._pollers == 0:
            self.kick()

    def poll_begin(self) -> None:
        lock = self._lock
        lock.acquire()
        try:
            self._pollers += 1
        finally:
            lock.release()

    def poll_end(self) -> None:
        """A polling task stopped: a wake-up held back for it goes out now (deferred again)."""
        lock = self._lock
        lock.acquire()
        try:
            self._pollers -= 1
            if self._pollers or not self._kick_pending or not self._queue:
                return
            if not defer_to_loop(self._deferred_kick):
                self._kick_pending = False
                self._cond.notify()
        finally:
            lock.release()

    def kick(self) -> None:
        """Wake the thread now if a deferred wake-up is pending (cheap if none is)."""
        if not self._kick_pending:
            return
        with self._lock:
            if self._kick_pending:
                self._kick_pending = False
                if self._queue:  # else an awaiting thread finished it all (finish_ready)
                    self._cond.notify()

    def last_pending(self) -> Completion | None:
        """The Completion of the latest op not yet finished (None when drained).

        The stream runs in order, so once it finishes, everything queued on the
        stream before it has finished too.  The stream's last op gets its
        marker first, if it has none (see _submit.py).
        """
        self._flush_tail()
        with self._lock:
            if self._queue:
                return self._queue[-1][1]
            return self._current

    def _owner(self) -> _TailOwner | None:
        ref = self._tail_owner
        return None if ref is None else ref()

    def _flush_tail(self) -> None:
        """Give the stream's last op its marker, if it has none (see _submit.py)."""
        owner = self._owner()
        if owner is not None and owner.tail is not None:
            with owner.lock:
                owner.flush_tail()

    def pending(self) -> int:
        """Ops queued or being waited on whose Completion has not finished."""
        # Ask the Completion, not the busy flag: a woken awaiter may run (and
        # check for leaks) before this thread has cleared the flag.  The
        # stream's last op without a marker counts too, and is not marked
        # here: this also runs at interpreter exit, where no driver call may.
        owner = self._owner()
        tail = None if owner is None else owner.tail
        unmarked = tail is not None and not tail.finished
        with self._lock:
            current = self._current
            return len(self._queue) + (current is not None and not current.done()) + unmarked

    @property
    def started(self) -> bool:
        return self._thread is not None

    def close(self, on_exit: Callable[[], None] | None = None) -> None:
        """Stop after the queued work: never blocks.  ``on_exit`` runs once drained.

        It may be called again (by another owner) with another ``on_exit``;
        each runs once, right away if the thread has already ended.  The
        stream's last op gets its marker first, if it has none, so that the
        work drained includes it.
        """
        if not self._closing:
            self._flush_tail()
        run_now = False
        with self._lock:
            if on_exit is not None:
                if self._exited or self._thread is None:
                    run_now = True
                else:
                    self._on_exit.append(on_exit)
            if not self._closing:
                self._closing = True
                self._kick_pending = False
                self._cond.notify()
        if run_now:
            assert on_exit is not None
            on_exit()

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the thread to end; True if it has (or never started)."""
        thread = self._thread
        if thread is None or thread is threading.current_thread():
            return True
        thread.join(timeout)
        return not thread.is_alive()

    def abandon(self) -> None:
        """At interpreter exit: stop waking anything, finish nothing more."""
        with self._lock:
            self._abandon = True
            self._closing = True
            self._kick_pending = False
            self._cond.notify()

    def fail_after_fork(self, error: Callable[[str], BaseException]) -> None:
        """In a forked child: the thread is gone; fail every op it held, at once.

        Only the forking thread survived, and a lock held by another at the
        fork would never be released: the waiter gets new ones, and nothing
        here waits.  Nothing is woken either (the loops are the parent's).
        """
        self._lock = threading.RLock()
        self._cond = threading.Condition(self._lock)
        self._turn = threading.Lock()
        self._closing = self._abandon = self._exited = True
        self._kick_pending = False
        self._on_exit = []
        held = [item[1] for item in self._queue]
        if self._current is not None:
            held.append(self._current)
        owner = self._owner()
        if owner is not None and owner.tail is not None:  # no lock: see above
            held.append(owner.tail)
            owner.tail = None
        self._queue.clear()
        self._current = None
        for completion in held:
            fail_forked(completion, error)

    def finish_ready(self, completion: Completion) -> None:
        """On an awaiting thread: finish, in order, queued ops already done, up to ``completion``.

        One non-blocking ``event_query`` per queued op, no waiting: if the
        waiter thread is busy, the head op is not done yet, or the query
        reports an error (left to the waiter thread, whose ``event_wait``
        raises it), this returns at once and the caller waits as usual.
        """
        if not _AWAIT_QUERY or not self._turn.acquire(blocking=False):
            return
        try:
            query = self._driver.event_query
            while True:
                lock = self._lock
                lock.acquire()
                try:
                    if self._abandon or not self._queue:
                        return
                    event, head, release = self._queue[0]
                finally:
                    lock.release()
                # Only the holder of _turn pops, so the head cannot change under us.
                try:
                    if not query(event):
                        return
                except DriverError:
                    return
                lock = self._lock
                lock.acquire()
                try:
                    # _current first: passed() reads both without _cond.
                    self._current = head
                    self._queue.popleft()
                finally:
                    lock.release()
                try:
                    error = self.settle(event, None, head)
                except BaseException:
                    # An interrupt on this (the awaiting) thread: the op stays
                    # queued, first, with its marker, for the waiter thread.
                    lock = self._lock
                    lock.acquire()
                    try:
                        self._queue.appendleft((event, head, release))
                        self._current = None
                        self._cond.notify()
                    finally:
                        lock.release()
                    raise
                try:
                    _return_marker(release, event)
                finally:  # settled: finished whatever happens next
                    if not self._abandon:
                        finish(head, error)
                lock = self._lock
                lock.acquire()
                try:
                    self._current = None
                finally:
                    lock.release()
                if head is completion:
                    return
        finally:
            self._turn.release()

    def _run(self) -> None:
        while True:
            with self._lock:
                self._parked = True
                while (not self._queue or self._kick_pending) and not self._closing:
                    self._cond.wait()
                self._parked = False
                if self._abandon or (not self._queue and self._closing):
                    on_exit, self._on_exit = self._on_exit, []
                    self._exited = True
                    break
            with self._turn:
                with self._lock:
                    if not self._queue:
                        continue  # an awaiting thread finished it first (finish_ready)
                    event, completion, release = self._queue[0]
                    # _current first: passed() reads both without _cond.
                    self._current = completion
                    self._queue.popleft()
                self._complete(event, completion, release, _SPIN_S)
                with self._lock:
                    self._current = None
                # Drop this op before parking: otherwise the idle thread keeps its
                # Completion, and through it the stream and a D2H destination, alive.
                del event, completion, release
        if not self._abandon:
            for fn in on_exit:
                try:
                    fn()
                except Exception:
                    _log.exception("%s: cleanup after the last op failed", self._label)

    def _complete(
        self,
        event: DriverEvent,
        completion: Completion,
        release: Callable[[DriverEvent], None] | None,
        spin_s: float,
    ) -> None:
        """The thread's and finish_ready's end of an op: spin, settle, finish."""
        if spin_s > 0.0:
            start = time.perf_counter()
            try:
                caught = self._spin_next and _spin(self._driver, event, spin_s)
            except Exception:  # a broken query: settle's event_wait reports what is wrong
                caught = False
        # Also after a spin that saw the op done: settle's event_wait is what
        # raises the op's error.
        error = self.settle(event, release, completion)
        if spin_s > 0.0 and error is None:
            # Spin for the next op only while this stream's ops end soon
            # after we reach them: a stream of long ops parks at once.
            self._spin_next = caught or time.perf_counter() - start <= 2.0 * spin_s
        if not self._abandon:
            finish(completion, error)


def _return_marker(release: Callable[[DriverEvent], None] | None, event: DriverEvent) -> None:
    """Give a settled op's marker back to its pool, if it has one (a failure is only logged)."""
    if release is None:
        return
    try:
        release(event)
    except Exception:
        _log.exception("returning a marker event failed")


def _spin(driver: Driver, event: DriverEvent, spin_s: float) -> bool:
    """Poll ``event_query`` for at most ``spin_s`` seconds; True once done (or failed)."""
    query = driver.event_query
    clock = time.perf_counter
    deadline = clock() + spin_s
    try:
        while not query(event):
            if clock() >= deadline:
                return False
    except DriverError:
        pass  # event_wait reports it
    return True
