"""Completion policies: how an op on a stream gets its Completion finished.

:meth:`aruntime.Stream.submit` takes the stream's lock, records the op into
the graph if the stream is capturing, and otherwise hands it to the
backend's policy, chosen once when the backend opens:

* :class:`SyncCompletion`, for drivers whose ops have finished (or raised)
  when their enqueue returns (the mock): the op runs, and its Completion is
  born done (one shared finished Completion per op kind when it returns
  nothing), with no marker and no waiter;
* :class:`AsyncCompletion`, for drivers that run ops later: after the op, a
  marker event from the backend's :class:`Markers` pool, handed with the
  op's Completion to the stream's waiter, which finishes the Completion
  when the device passes the marker.  An op the device has passed by the
  time its marker is recorded, with nothing before it left to finish (a
  sim's small op on an idle stream), gets a finished Completion at once,
  as on the mock.

No op tests which kind of driver it runs on.  Both trace the op when
tracing is on.  The life of an op end to end is in docs/design.md.
"""

from __future__ import annotations

import functools
import logging
import sys
from collections.abc import Callable
from typing import Any

from . import _sites as sites
from ._completion import (
    Completion,
    born_done,
    done_none,
    failed,
    failed_queued,
    finish,
    release_views,
)
from ._driver import Driver, DriverEvent, DriverStream
from ._enqueue import NOTHING_HELD, STRANDED_KEPT, compiled_enqueuer, tail_probe
from ._exceptions import DriverError
from ._handles import Event, Stream
from ._ledger import Entry
from ._op import Op, OpKind
from ._state import BackendState
from ._streamstate import StreamState
from ._trace import Tracing
from ._waiter import AWAIT_QUERY, QUEUED

__all__ = [
    "MARKERS_KEPT",
    "STRANDED_KEPT",
    "AsyncCompletion",
    "Markers",
    "SyncCompletion",
    "make_policy",
    "with_unseen_errors",
]

_log = logging.getLogger("aruntime")


def _nothing(stream: DriverStream) -> None:
    del stream


#: Free markers a backend keeps for reuse; more are destroyed as they come back,
#: so that a burst of ops in flight does not hold its peak of events for good.
#: A stream kept a few hundred ops deep (a block of launches, then an await)
#: reuses its markers rather than creating and destroying one per op: at 64,
#: a block of 200 created 136 events and destroyed as many, 8% of a launch.
MARKERS_KEPT = 256

#: References to an object; where the interpreter keeps no counts, every op
#: looks referenced and so gets its marker.
_refcount = getattr(sys, "getrefcount", lambda obj: 1 << 30)


class Markers:
    """A pool of the untimed events recorded after each op (one per op in flight).

    A resource of the backend: registered when the backend opens, so it is
    released after every stream, event and graph.  It keeps at most
    :data:`MARKERS_KEPT` free ones.

    Every op takes a marker and, when the device is already past it, gives
    it straight back, so the pool takes no lock: a list's ``pop`` and
    ``append`` are each atomic, and the pool's list is never replaced.  A
    marker given back while :meth:`release` runs is destroyed by whichever
    of the two sees the other (the recheck in :meth:`give_back`).
    """

    def __init__(self, state: BackendState) -> None:
        # The driver, not the state: every op in flight holds its marker's
        # give_back, and through the state it would keep the backend alive.
        self._driver = state.driver
        #: The free markers (the policy pops from it directly, so it is never replaced).
        self.free: list[DriverEvent] = []
        self._released = False
        state.resources.add(self)

    def acquire(self) -> DriverEvent:
        try:
            return self.free.pop()
        except IndexError:
            return self._driver.event_create(False)

    def give_back(self, marker: DriverEvent) -> None:
        free = self.free
        if not self._released and len(free) < MARKERS_KEPT:
            free.append(marker)
            if self._released:  # release() may have emptied the pool before this append
                self._destroy_free()
            return
        self._driver.event_destroy(marker)

    def release(self) -> None:
        """The backend is closing: destroy every pooled marker, and later ones as they return."""
        self._released = True
        self._destroy_free()

    def _destroy_free(self) -> None:
        free = self.free
        while True:
            try:
                marker = free.pop()
            except IndexError:
                return
            self._driver.event_destroy(marker)


#: What the compiled enqueue calls back: the policy's run, then its failed,
#: mark, mark_now and done (see _enqueue.compiled_enqueuer).
_CompiledHooks = tuple[
    Callable[..., Completion],
    Callable[..., Completion],
    Callable[..., None] | None,
    Callable[..., Completion],
    dict[Any, Completion] | None,
]


class _Policy:
    """What both policies share: the driver, the tracing hub and the marker pool."""

    def __init__(self, state: BackendState, markers: Markers) -> None:
        self._driver = state.driver
        self._tracing: Tracing = state.tracing
        self._markers = markers

    def compiled_enqueue(self, stream: Stream) -> Callable[..., Completion] | None:
        """``stream``'s enqueue in C (see _enqueue.py), or None where it was not built."""
        run, failed, mark, mark_now, done = self._compiled_hooks()
        return compiled_enqueuer(
            stream,
            Stream.enqueue,
            tracing=self._tracing,
            failed=failed,
            mark=mark,
            mark_now=mark_now,
            done=done,
            run=run,
        )

    def _compiled_hooks(self) -> _CompiledHooks:
        raise NotImplementedError


class SyncCompletion(_Policy):
    """For drivers whose ops have finished (or raised) when their enqueue returns."""

    def __init__(self, state: BackendState, markers: Markers) -> None:
        super().__init__(state, markers)
        # One shared finished Completion per kind, for the ops that return nothing.
        self._done = {kind: done_none(kind.public) for kind in OpKind.ALL}

    def run(self, op: Op, stream: Stream) -> Completion:
        return self.queue(
            stream, op.kind, op.call, op.args, (), op.views, op.nbytes, op.result, op.kernel
        )

    def queue(
        self,
        stream: Stream,
        kind: OpKind,
        call: Callable[..., None],
        args: tuple[Any, ...],
        held: tuple[Any, ...],
        views: tuple[memoryview, ...] = (),
        nbytes: int = 0,
        result: Any = None,
        kernel: Any = None,
    ) -> Completion:
        """:meth:`run` of an op given by its parts (``Stream.enqueue``: no Op is built).

        The op has finished when ``call`` returns, so nothing is held.
        """
        try:
            if self._tracing.recorder is None:
                call(*args, stream.handle)
            else:
                self._traced(
                    Op(kind, call, args, views=views, nbytes=nbytes, kernel=kernel), stream
                )
        except DriverError as exc:
            return self._call_failed(kind, stream.state, exc)
        state = stream.state
        if state.ordering or result is not None:
            return self._settled(kind, state, result)
        return self._done[kind]

    @staticmethod
    def _call_failed(kind: OpKind, state: StreamState, exc: DriverError) -> Completion:
        """The Completion of an op whose call raised ``exc``."""
        completion = failed(Completion(kind.public, state), exc)
        sites.note(completion)  # the user's call is on the stack: it costs only here
        return completion

    @staticmethod
    def _settled(kind: OpKind, state: StreamState, result: Any) -> Completion:
        """The finished Completion of an op that returned ``result``, in stream order."""
        if state.ordering:  # an earlier op on the stream (or upstream) failed
            completion = Completion(kind.public, state, result)
            finish(completion)
            return completion
        return born_done(kind.public, result)

    def _compiled_hooks(self) -> _CompiledHooks:
        # Every op has finished at its call: no tail to mark, a shared Completion per kind.
        return self.run, self._call_failed, None, self._settled, self._done

    def _traced(self, op: Op, stream: Stream) -> None:
        recorder = self._tracing.recorder
        span = (
            None
            if recorder is None
            else recorder.span(op.kind.public, stream, op.nbytes, op.kernel)
        )
        if span is None:
            op.call(*op.args, stream.handle)
        else:
            span.enqueue(op.call, op.args, stream.handle)

    def drained(self, kind: OpKind, stream: Stream) -> Completion:
        """Done at once, unless the driver reports a sticky error at a marker.

        Everything already ran, but the device may be in a sticky error state
        that a real synchronize would report: ask the driver.
        """
        markers = self._markers
        marker = markers.acquire()
        try:
            self._driver.event_record(marker, stream.handle)
        except DriverError as exc:
            return failed(Completion(kind.public, stream.state), exc)
        finally:
            markers.give_back(marker)
        return born_done(kind.public)

    def event_synchronize(self, name: str, event: Event) -> Completion:
        return born_done(name)

    def bind_marks(self, state: StreamState, handle: DriverStream, *, shared: bool) -> None:
        """Nothing to bind: no op here is left without a finished Completion."""


class Marking:
    """Records an op's marker and hands it to the stream's waiter (or settles it at once)."""

    __slots__ = ("_driver", "_markers", "_pop_free", "_stream_finished")

    def __init__(self, driver: Driver, markers: Markers) -> None:
        self._driver = driver
        self._markers = markers
        # A driver that can tell a stream is done settles an idle stream's
        # last op with no marker at all (mark); None where it cannot.
        finished = driver.stream_finished
        self._stream_finished = (
            finished
            if AWAIT_QUERY and type(driver).stream_finished is not Driver.stream_finished
            else None
        )
        # The pool's list is never replaced: its pop, bound once, is the hot path's acquire.
        self._pop_free = markers.free.pop

    def mark(self, state: StreamState, handle: DriverStream, completion: Completion) -> None:
        """Settle ``completion``'s op, the last queued on ``handle``, or record its marker.

        The caller holds the stream's lock.  Where every op handed to the
        stream's waiter has finished and the driver can tell that the
        stream is done (``Driver.stream_finished``), the op is finished
        here, with the stream's error if it has one: one query and one wait
        that returns at once, where a marker is a record, a query and a
        wait.  Otherwise its marker is recorded (:meth:`record`).
        """
        if not self.probe(state, handle, completion):
            self.record(state, handle, completion)

    def probe(self, state: StreamState, handle: DriverStream, completion: Completion) -> bool:
        """:meth:`mark`, but False (nothing recorded) where the stream, asked, is not done.

        The caller holds the stream's lock and has taken ``completion`` off
        the tail.  True: finished here, or its marker recorded (the stream
        cannot be asked: no query, or ops handed to the waiter before it).
        False: the stream is still running it, with nothing queued before it
        elsewhere; an awaiting task may ask again (``StreamState.probe_tail``).
        """
        finished = self._stream_finished
        waiter = state.waiter
        if finished is None or not (waiter is None or waiter.idle):
            self.record(state, handle, completion)
            return True
        error: DriverError | None = None
        try:
            done = finished(handle)
        except DriverError as exc:
            done, error = True, exc
        if not done:
            return False
        self._past(state, completion, error)
        return True

    @staticmethod
    def _past(state: StreamState, completion: Completion, error: DriverError | None) -> None:
        """The stream is past ``completion``'s op and every op before it: finish it."""
        if state.dropped:
            state.note_covers(completion)
        if state.stranded:
            state.stranded.clear()
        finish(completion, error)

    def settle_probed(
        self, state: StreamState, completion: Completion, error: BaseException | None
    ) -> None:
        """:meth:`probe`'s done case, where the stream was asked in C (``tail_probe``).

        The caller holds the stream's lock and ``completion`` is still its
        unmarked tail; the driver found the stream done and synchronized it,
        or raised ``error``.  An error other than a DriverError is raised.
        """
        if error is not None and not isinstance(error, DriverError):
            raise error
        state.tail = None
        state.tail_held = NOTHING_HELD
        self._past(state, completion, error)

    def tail_probe(
        self, state: StreamState, handle: DriverStream
    ) -> Callable[[Completion], bool] | None:
        """``state.probe_tail`` with its common cases in C, for ``state.ask_tail``; None: none."""
        finished = self._stream_finished
        if finished is None:
            return None
        settle = functools.partial(self.settle_probed, state)
        return tail_probe(state, finished, settle, handle)

    def recorded(self, handle: DriverStream) -> DriverEvent:
        """A marker from the pool, recorded on ``handle`` now; on any failure it goes back."""
        try:
            marker = self._pop_free()
        except IndexError:
            marker = self._markers.acquire()  # may raise: a sticky error surfacing at creation
        try:
            self._driver.event_record(marker, handle)
        except BaseException:
            self._markers.give_back(marker)
            raise
        return marker

    def record(
        self, state: StreamState, handle: DriverStream, completion: Completion, span: Any = None
    ) -> None:
        """Record the marker of ``completion``'s op, the last queued on ``handle`` (lock held).

        It settles at once if the device is past it, else goes to the
        stream's waiter.  If the record fails, the op fails in stream order
        and its buffers wait for the stream's next op.
        """
        markers = self._markers
        try:
            marker = self.recorded(handle)
        except DriverError as exc:
            if span is not None:
                span.abandon()
            state.stranded.extend(failed_queued(completion, exc))
            return
        except BaseException:
            # An interrupt: the op is queued and still the stream's last, so it
            # stays the tail, to be marked by whoever comes next.
            if span is not None:
                span.abandon()
            state.tail = completion
            raise
        if state.dropped:
            state.note_covers(completion)
        release = markers.give_back
        stranded = state.stranded
        if stranded:
            # What earlier ops without a marker left: the stream is past them
            # once it is past this marker, which is given back after that.
            release = functools.partial(_give_back_holding, release, tuple(stranded))
            stranded.clear()
        if span is not None:
            span.follow(completion, handle)
        # Settled here if the device is past it (stream order may still fail
        # it: an earlier op failed), else queued for the waiter's thread.
        (state.waiter or state.started_waiter()).submit(marker, completion, release)


def _give_back_holding(
    give_back: Callable[[DriverEvent], None], held: tuple[Any, ...], marker: DriverEvent
) -> None:
    """Return ``marker`` to its pool; ``held`` (earlier ops' buffers) goes with the partial."""
    give_back(marker)


class AsyncCompletion(_Policy):
    """For drivers that run ops later: a marker where a wait needs one, a waiter per stream."""

    def __init__(self, state: BackendState, markers: Markers) -> None:
        super().__init__(state, markers)
        #: What records markers; a stream's state holds it (through ``state.mark``),
        #: so it holds nothing that leads back to the backend.
        self.marking = Marking(state.driver, markers)
        self._defer_markers = state.driver.errors_reach_next_marker
        # done_none's shared finished Completions, for an op passed at submit (_mark_now).
        self._done = {kind.public: done_none(kind.public) for kind in OpKind.ALL}

    def run(self, op: Op, stream: Stream) -> Completion:
        held = op.held
        if held is None:
            held = _without_entries(op.keepalive)
        return self.queue(
            stream, op.kind, op.call, op.args, held, op.views, op.nbytes, op.result, op.kernel
        )

    def queue(
        self,
        stream: Stream,
        kind: OpKind,
        call: Callable[..., None],
        args: tuple[Any, ...],
        held: tuple[Any, ...],
        views: tuple[memoryview, ...] = (),
        nbytes: int = 0,
        result: Any = None,
        kernel: Any = None,
    ) -> Completion:
        """Queue an op on ``stream`` (its lock held); it becomes the stream's unmarked tail.

        The op comes as its parts (``call(*args, handle)`` enqueues it;
        ``held`` are the host objects its Completion keeps while it runs):
        ``Stream.enqueue`` builds no :class:`Op` for a plain stream, and
        :meth:`run` unpacks one.

        The one completion path of a driver that runs ops later.  A marker
        costs an event record, a query and a wait: it is recorded only for
        an op somebody can still wait for.  The op queued last keeps no
        marker (``state.tail``) until either

        * the next op comes: if the tail's Completion is referenced outside
          the core (the caller kept it), it gets its marker now, before the
          next op, so its completion stays exact; if not, nobody can ever
          wait for it, and what it holds passes to a later marker
          (``stranded``), which stream order makes cover it; or
        * somebody starts to wait (``await``, ``done()``, ``wait()``, a
          subscription, an event record, a close): ``StreamState.mark_tail``
          or ``flush_tail`` records it then, still exact, since nothing was
          queued after it.

        An error of an op that got no marker surfaces at the next marker on
        the stream, as a GPU's sticky error does at the next synchronize.
        When call sites are recorded or the op is traced, each op is marked
        at once, as both need its Completion before the call.  Whatever fails
        after the driver took the op leaves its buffers to the stream's next
        op (``stranded``).
        """
        state = stream.state
        handle = stream.handle
        tail = state.tail
        if tail is not None:
            state.tail = None
            # Two references are this frame's and getrefcount's own argument.
            if _refcount(tail) > 2 or len(state.stranded) >= STRANDED_KEPT:
                self.marking.mark(state, handle, tail)
            else:
                if not state.dropped:
                    state.dropped_first = tail.op
                state.dropped += 1
                tail_held, tail_views = state.tail_held
                if tail_held:
                    state.stranded.extend(tail_held)
                if tail_views:
                    state.stranded.extend(tail_views)
            state.tail_held = NOTHING_HELD
            del tail
        if sites.recording or self._tracing.recorder is not None:
            op = Op(kind, call, args, held, views, nbytes, result, kernel, held=held)
            return self._run_marked(op, stream, state, handle)
        try:
            call(*args, handle)
        except DriverError as exc:
            # A staged copy may have queued some of its pieces before failing.
            return self._failed(kind, result, held, views, state, exc)
        if not state.defer_markers:
            return self._mark_now(kind, result, held, views, state, handle)
        completion = Completion(kind.public, state, result, held, views)
        state.tail = completion
        state.tail_held = (held, views)
        if state.waiter is None:  # a backend-wide wait finds the stream through its waiter
            state.started_waiter()
        return completion

    def _mark_now(
        self,
        kind: OpKind,
        result: Any,
        held: tuple[Any, ...],
        views: tuple[memoryview, ...],
        state: StreamState,
        handle: DriverStream,
    ) -> Completion:
        """The Completion of the op just queued, with its marker recorded right behind it.

        For a stream whose ops are not left unmarked (``defer_markers``
        false): a driver whose errors may miss a later marker, a stream
        another library shares.  An op the device is past already, with
        nothing before it failed or left to finish, gets a shared finished
        Completion, as on the mock (or a finished one holding its result).
        """
        markers = self._markers
        try:
            marker = self.marking.recorded(handle)
        except DriverError as exc:
            return self._failed(kind, result, held, views, state, exc)
        except BaseException:
            state.stranded.extend((*_with_stranded(held, state), *views))
            raise
        waiter = state.waiter or state.started_waiter()
        name = kind.public
        outcome = waiter.settle_if_passed(marker, markers.give_back, name)
        if outcome is None and not state.ordering:
            if state.stranded:
                state.stranded.clear()  # the device is past this op and all before it
            if views:
                release_views(views)
            return self._done[name] if result is None else born_done(name, result)
        completion = Completion(name, state, result, _with_stranded(held, state), views)
        if outcome is QUEUED:
            waiter.enqueue(marker, completion, markers.give_back)
        elif not waiter.abandoned:
            finish(completion, outcome)
        return completion

    def _run_marked(
        self, op: Op, stream: Stream, state: StreamState, handle: DriverStream
    ) -> Completion:
        """``op`` with its Completion made before the call and its marker right after it."""
        held = op.held
        if held is None:
            held = _without_entries(op.keepalive)
        keepalive = _with_stranded(held, state)
        completion = Completion(op.kind.public, state, op.result, keepalive, op.views)
        if sites.recording:
            sites.note(completion)
        span = None
        recorder = self._tracing.recorder
        if recorder is not None:
            span = recorder.span(op.kind.public, stream, op.nbytes, op.kernel)
        try:
            if span is None:
                op.call(*op.args, handle)
            else:
                span.enqueue(op.call, op.args, handle)  # drops the span if the op raises
        except DriverError as exc:
            state.stranded.extend(failed_queued(completion, exc))
            return completion
        self.marking.record(state, handle, completion, span)
        return completion

    def _compiled_hooks(self) -> _CompiledHooks:
        return self.run, self._failed, self.marking.mark, self._mark_now, None

    def bind_marks(self, state: StreamState, handle: DriverStream, *, shared: bool) -> None:
        """Let ``state`` mark its tail on ``handle`` (``StreamState.flush_tail``).

        On a stream other libraries share, every op is marked right after it.
        """
        state.mark = functools.partial(self.marking.mark, state, handle)
        state.probe = functools.partial(self.marking.probe, state, handle)
        state.ask_tail = self.marking.tail_probe(state, handle)
        state.defer_markers = self._defer_markers and not shared

    @staticmethod
    def _failed(
        kind: OpKind,
        result: Any,
        held: tuple[Any, ...],
        views: tuple[memoryview, ...],
        state: StreamState,
        exc: DriverError,
    ) -> Completion:
        """The Completion of an op whose enqueue or marker raised: it fails in stream order."""
        completion = Completion(kind.public, state, result, _with_stranded(held, state), views)
        state.stranded.extend(failed_queued(completion, exc))
        return completion

    def drained(self, kind: OpKind, stream: Stream) -> Completion:
        """A Completion that finishes when ``stream``'s queue so far has drained."""
        return stream.submit(Op(kind, _nothing, ()))

    def event_synchronize(self, name: str, event: Event) -> Completion:
        stream = event.last_stream
        if stream is None:
            return born_done(name)
        state = stream.state
        if stream.closed:
            # close() never blocks, so the stream may still be draining the
            # work before the event: finish once the last op queued on it has.
            last = state.last_pending()
            if last is None:
                return born_done(name)
            reached = Completion(name, None)
            if not last.subscribe(lambda: finish(reached)):
                finish(reached)
            return reached
        with state.lock:
            if state.refusing:  # closed since: it drains on its own
                return self.event_synchronize(name, event) if stream.closed else born_done(name)
            # Closed since the check: the waiter must never wait on a destroyed
            # handle.  Event.close waits this lock out before it destroys one.
            event.check_open(name)
            completion = Completion(name, state)
            state.flush_tail()  # it finishes after the ops queued before it
            state.started_waiter().submit(event.handle, completion, None)
        return completion


def _with_stranded(held: tuple[Any, ...], state: StreamState) -> tuple[Any, ...]:
    """What an op's Completion holds while it runs: its buffers, and what earlier ops stranded.

    Takes the stream's stranded buffers (call with the stream's lock held):
    they finish only once the stream is past this op.
    """
    if state.stranded:
        held = (*held, *state.stranded)
        state.stranded.clear()
    return held


def _without_entries(keepalive: tuple[Any, ...]) -> tuple[Any, ...]:
    """An op's keepalive less its ledger entries, for the Completion to hold while it runs.

    The entries matter to captures only (a graph pins them); a running op
    needs its host buffers.  An entry holds the user's pointer, which holds
    the backend: kept by a pending op, it would keep a dropped backend alive
    and its unclosed-backend warning from ever coming.
    """
    # The common shapes without a list: a memset's (entry,), a host copy's
    # (buffer, entry), a device copy's two entries.
    n = len(keepalive)
    if n == 1:
        return () if type(keepalive[0]) is Entry else keepalive
    if n == 2:
        first, second = keepalive
        if type(second) is Entry:
            return () if type(first) is Entry else (first,)
    return tuple([item for item in keepalive if type(item) is not Entry])


def make_policy(state: BackendState, markers: Markers) -> SyncCompletion | AsyncCompletion:
    """The completion policy for ``state``'s driver, chosen once."""
    cls = SyncCompletion if state.driver.synchronous else AsyncCompletion
    return cls(state, markers)


def with_unseen_errors(marker: Completion, stream: Stream, name: str) -> Completion:
    """A Completion that finishes with ``marker``, failing with the stream's unseen errors.

    It is on the stream: if this ``synchronize()`` fails and nobody sees it
    (its await was cancelled), the error goes back to the stream for the next
    ``synchronize()`` or ``close()`` instead of being lost.
    """
    state = stream.state
    result = Completion(name, state)

    def settle() -> None:
        failures = state.take_failures()
        error = marker.error
        if failures:
            error = failures[0].error
            for f in failures:
                _log.error("%s: error from an op nobody awaited: %s", name, f.error)
        finish(result, error)

    if not marker.subscribe(settle):
        settle()
    return result
