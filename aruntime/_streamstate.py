"""What a stream owns besides its driver handle: its lock, waiter, capture and errors.

A :class:`StreamState` is the part of a :class:`aruntime.Stream` that the
core's submission, graph and shutdown code works with.  It is also the
:class:`aruntime._protocols.CompletionHooks` of every Completion queued on
the stream, so a Completion reaches its stream's waiter and error list
without knowing what a stream is.
"""

from __future__ import annotations

import functools
import threading
import weakref
from collections.abc import Callable
from typing import Any, NamedTuple

from . import _sites as sites
from ._completion import Completion, born_captured, next_seq
from ._driver import Driver, DriverStream
from ._enqueue import stream_lock
from ._exceptions import DriverError
from ._ledger import pin
from ._op import Op, Range
from ._waiter import StreamWaiter

__all__ = ["CaptureRecord", "FailureList", "StreamState", "first_failure_of", "release_stream"]

#: How long finishing an op waits for the host to learn the outcome of the op
#: behind an event it waited on (the device is past that op already, so only
#: the other stream's waiter thread is left to run).
_UPSTREAM_WAIT_S = 5.0


def _inherited_from(error: BaseException | None) -> Completion | None:
    """The first failure an error reports as inherited (``first_failure``), if it is one."""
    first = getattr(error, "first_failure", None)
    return first if isinstance(first, Completion) else None


def first_failure_of(completion: Completion) -> Completion:
    """The op whose failure ``completion``'s error reports: itself, or the first one upstream."""
    return _inherited_from(completion.error) or completion


def _ordered_failure(first: Completion, completion: Completion, how: str) -> DriverError:
    """The error of an op that follows the failed op ``first`` (see StreamState.ordered_error)."""
    root = first.error
    site = sites.site_of(first)
    where = f" (queued at {site})" if site else ""
    message = f"{completion.op}: not done: {how} {first.op}{where} failed before it: {root}"
    if isinstance(root, DriverError):
        kind: type[DriverError] = type(root)
        try:
            error = kind(
                message,
                backend=root.backend,
                code=root.code,
                name=root.name,
                function=completion.op,
            )
        except TypeError:  # pragma: no cover - a subclass with its own constructor
            error = DriverError(message, backend=root.backend, code=root.code, name=root.name)
    else:
        error = DriverError(message, function=completion.op)
    error.first_failure = first  # type: ignore[attr-defined]
    error.__cause__ = root
    return error


def _covered_failure(
    completion: Completion, covered: tuple[str, int], root: BaseException
) -> BaseException:
    """The error of an op whose marker failed and also covered ops nobody kept.

    Those ops had no marker, so which of them (or this op) failed is not
    known; the message says so, and names the first of them.
    """
    if not isinstance(root, DriverError):
        return root
    first, count = covered
    ops = "the op" if count == 1 else f"one of the {count} ops"
    message = (
        f"{completion.op}: not done: it, or {ops} queued before it whose Completion "
        f"nobody kept (the first a {first}), failed: {root}"
    )
    kind: type[DriverError] = type(root)
    try:
        error = kind(
            message, backend=root.backend, code=root.code, name=root.name, function=completion.op
        )
    except TypeError:  # pragma: no cover - a subclass with its own constructor
        error = DriverError(message, backend=root.backend, code=root.code, name=root.name)
    error.__cause__ = root
    return error


class CaptureRecord(NamedTuple):
    """What a capture recorded: what its graph keeps alive, its ops, their byte ranges."""

    keepalive: list[Any]
    op_count: int
    reads: tuple[Range, ...]
    writes: tuple[Range, ...]


class FailureList:
    """Thread-safe list of failed Completions nobody has looked at yet."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: list[Completion] = []
        self._closed = False

    def note(self, completion: Completion) -> bool:
        """Keep ``completion``; False (and not kept) once the list is closed."""
        with self._lock:
            if self._closed:
                return False
            self._items.append(completion)
        return True

    def close(self) -> list[Completion]:
        """Refuse further notes; returns what was kept."""
        with self._lock:
            self._closed = True
            items, self._items = self._items, []
        return items

    def forget(self, completion: Completion) -> bool:
        """Drop ``completion``; False if it was not here."""
        with self._lock:
            try:
                self._items.remove(completion)
            except ValueError:
                return False
        return True

    def take(self) -> list[Completion]:
        with self._lock:
            items, self._items = self._items, []
        return items


class StreamState:
    """One stream's lock, lazily started waiter, capture state and unseen errors.

    ``lock`` orders everything enqueued on the stream: whoever holds it may
    enqueue, record the marker and hand it to the waiter, so the waiter's
    queue order is the stream's order.

    Slots, not a dict: the compiled enqueue (ffi/core/enqueue.c) reads and
    writes the tail's bookkeeping in place, at the slots' offsets.
    """

    __slots__ = (
        "__weakref__",
        "_capture_keepalive",
        "_capture_ops",
        "_capture_reads",
        "_capture_writes",
        "_covers",
        "_driver",
        "_failures",
        "_label",
        "_on_new_waiter",
        "_order_lock",
        "_orphans",
        "_poison_seen_at",
        "_upstream",
        "acquire",
        "ask_tail",
        "capturing",
        "defer_markers",
        "dropped",
        "dropped_first",
        "lock",
        "mark",
        "ordering",
        "poison",
        "probe",
        "refusing",
        "release",
        "stranded",
        "tail",
        "tail_held",
        "waiter",
    )

    def __init__(
        self,
        driver: Driver,
        label: str,
        orphans: FailureList,
        on_new_waiter: Callable[[StreamWaiter], None],
    ) -> None:
        self.lock = stream_lock()
        # The hot path takes the lock through these (a ``with`` costs more).
        self.acquire = self.lock.acquire
        self.release = self.lock.release
        self.waiter: StreamWaiter | None = None
        self.capturing = False
        #: Set (under ``lock``) once the stream or its backend closes: ops are refused.
        self.refusing = False
        self._driver = driver
        self._label = label
        self._on_new_waiter = on_new_waiter
        self._capture_keepalive: list[Any] = []
        self._capture_ops = 0
        self._capture_reads: list[Range] = []
        self._capture_writes: list[Range] = []
        self._failures = FailureList()
        self._orphans = orphans  # where errors go once the stream is closed
        # Stream-ordered errors (ordered_error): the first failed op whose
        # failure later ops inherit, the number after which ops were queued
        # once the user had seen it, and what this stream waited for through
        # events: (the wait's number, the last op before the event's record).
        self.ordering = False
        self.poison: Completion | None = None
        self._poison_seen_at = 0
        self._upstream: list[tuple[int, Completion]] = []
        self._order_lock = threading.Lock()
        # Buffers of ops that reached the driver without a marker behind them
        # (the marker failed): they stay alive until a later op's Completion
        # finishes, which the stream reaches only after them.  Guarded by lock.
        self.stranded: list[Any] = []
        #: The last op queued, while it has no marker behind it (the policy's
        #: ``run``, in _submit.py); guarded by ``lock``.
        self.tail: Completion | None = None
        #: What the tail's op holds (its keepalive, its views): a later marker's,
        #: if nobody can wait for the tail.
        self.tail_held: tuple[tuple[Any, ...], tuple[memoryview, ...]] = ((), ())
        #: Ops dropped unmarked since the stream's last marker, and the first's
        #: name: the next marker covers them (``covers``), and its error says so.
        self.dropped = 0
        self.dropped_first = ""
        self._covers: weakref.WeakKeyDictionary[Completion, tuple[str, int]] = (
            weakref.WeakKeyDictionary()
        )
        #: Records the tail's marker and hands it to the waiter: the policy's
        #: ``mark``, bound to this stream by the Stream (None: no driver markers).
        self.mark: Callable[[Completion], None] | None = None
        #: ``mark``'s probe (``Markers.probe``): False where the stream is still running the op.
        self.probe: Callable[[Completion], bool] | None = None
        #: Whether the stream's last op may wait for its marker (bound with ``mark``).
        self.defer_markers = False
        #: ``probe_tail`` with its common cases in C where the driver allows
        #: (the compiled enqueue's ``tail_probe``, bound with ``mark``): the
        #: same answer, and ``probe_tail`` itself for what the C cannot tell.
        self.ask_tail: Callable[[Completion], bool] | None = None

    # -- waiter --------------------------------------------------------------------
    def started_waiter(self) -> StreamWaiter:
        """The stream's waiter, started on first use (call with ``lock`` held)."""
        waiter = self.waiter
        if waiter is None:
            waiter = self.waiter = StreamWaiter(self._driver, self._label, self)
            self._on_new_waiter(waiter)
        return waiter

    # -- the tail: the last op, while it has no marker --------------------------------------
    def flush_tail(self) -> None:
        """Give the last op its marker now, if it has none (call with ``lock`` held).

        Before anything that must see every op queued so far as pending:
        an event record, a cross-stream wait, a capture, a close, a
        backend-wide wait.  Nothing is queued after the tail yet, so its
        marker is exact.
        """
        tail = self.tail
        if tail is not None:
            self.tail = None
            self.tail_held = ((), ())  # the Completion holds them till its marker passes
            mark = self.mark
            assert mark is not None
            mark(tail)

    def share(self) -> None:
        """Other libraries may queue work on this stream from now on: each op gets a marker.

        Called where the native stream is handed out (``__cuda_stream__``,
        an array's interchange protocols).  A marker recorded later would
        cover their work too, and a whole-stream settle
        (``Driver.stream_finished``) could block on it, so the stream marks
        every op from now on, as an adopted one does.
        """
        if self.defer_markers:
            self.acquire()
            try:
                self.flush_tail()
                self.defer_markers = False
            finally:
                self.release()

    def note_covers(self, completion: Completion) -> None:
        """``completion``'s marker, being recorded, also covers the ops dropped before it."""
        self._covers[completion] = (self.dropped_first, self.dropped)
        self.dropped = 0

    def probe_tail(self, completion: Completion) -> bool:
        """An awaited ``completion``: finish it if the stream is past it, as a poller would.

        True once it is not the stream's unmarked tail (finished here, given
        its marker now because the stream cannot be asked, or marked
        already by an op queued after it); False while the stream is still
        running it with nothing else to wait for: it stays the tail, with
        no marker, and the awaiting task asks again at its next loop step
        (``Completion.__await__``).  A later op, a synchronize or an event
        record marks it as they mark any kept tail.
        """
        if self.tail is not completion:
            return True
        self.acquire()
        try:
            if self.tail is not completion:
                return True
            probe = self.probe
            if probe is None:  # a policy that binds no probe: mark it, as mark_tail does
                self.flush_tail()
                return True
            held = self.tail_held
            self.tail = None
            self.tail_held = ((), ())
            try:
                asked = probe(completion)
            except BaseException:
                self.tail, self.tail_held = completion, held  # nothing was done: as before
                raise
            if not asked:
                self.tail, self.tail_held = completion, held
            return asked
        finally:
            self.release()

    def mark_tail(self, completion: Completion) -> None:
        """``completion`` is about to be waited for: its marker now, if it is still the tail."""
        if self.tail is not completion:
            return  # marked already (a later op saw it referenced), or never a tail
        self.acquire()  # not ``with``: an await of a fresh op comes here, and it costs twice
        try:
            if self.tail is completion:  # flush_tail, inline
                self.tail = None
                self.tail_held = ((), ())
                mark = self.mark
                assert mark is not None
                mark(completion)
        finally:
            self.release()

    def pending(self) -> int:
        waiter = self.waiter
        return 0 if waiter is None else waiter.pending()

    def last_pending(self) -> Completion | None:
        waiter = self.waiter
        return None if waiter is None else waiter.last_pending()  # flushes the tail

    # -- capture (call with ``lock`` held) ---------------------------------------------
    def begin_capture(self) -> None:
        self.capturing = True
        self._capture_keepalive = []
        self._capture_ops = 0
        self._capture_reads = []
        self._capture_writes = []

    def capture(self, op: Op, handle: DriverStream) -> Completion:
        """Record ``op`` into the graph being captured; its Completion never runs.

        What it uses must live as long as the graph: its ledger entries (the
        device memory) are pinned from now on, so a free() during the capture
        or under the graph is deferred.
        """
        op.call(*op.args, handle)
        keepalive = (*op.views, *op.keepalive)
        pin(keepalive)
        self._capture_keepalive.extend(keepalive)
        self._capture_reads.extend(op.reads)
        self._capture_writes.extend(op.writes)
        self._capture_ops += 1
        return born_captured(op.kind.public)

    def end_capture(self) -> CaptureRecord:
        """Stop capturing: what the graph must keep alive, its op count and byte ranges."""
        self.capturing = False
        record = CaptureRecord(
            self._capture_keepalive,
            self._capture_ops,
            tuple(self._capture_reads),
            tuple(self._capture_writes),
        )
        self._capture_keepalive, self._capture_reads, self._capture_writes = [], [], []
        return record

    # -- errors nobody awaited (any thread) ----------------------------------------------
    def mark_closed(self) -> None:
        """From now on errors go to the backend's list, the ones held so far too."""
        for failure in self._failures.close():
            self._orphans.note(failure)

    def take_failures(self) -> list[Completion]:
        return self._failures.take()

    # -- stream order ----------------------------------------------------------------
    def ordered_error(
        self, completion: Completion, error: BaseException | None
    ) -> BaseException | None:
        """The error ``completion`` finishes with: stream order first, then its own.

        An op queued after a failed op on this stream, or after a wait on an
        event recorded behind a failed op, fails too, with an error naming
        that first failure; this is what a GPU's stream synchronize reports.
        An op queued after the user saw the first failure starts clean (a
        sticky driver error fails it again by itself).  Ops on a stream
        finish in queue order, so the poison set here covers what follows.
        """
        seq = completion.order
        if error is not None and self._covers:
            covered = self._covers.pop(completion, None)
            if covered is not None and _inherited_from(error) is None:
                error = _covered_failure(completion, covered, error)
        if self._upstream:
            self._settle_upstream(seq)
        with self._order_lock:
            first = self.poison
            if first is not None and first is not completion and seq > first.order:
                seen_at = self._poison_seen_at
                if not seen_at or seq < seen_at:
                    if error is not None and error is first.error:
                        return error  # synchronize() reporting the first failure itself
                    return _ordered_failure(first, completion, "the earlier op")
                self.poison = None
                self._poison_seen_at = 0
            upstream = self._upstream_failure(seq)
            if upstream is not None:
                self._poison_with(upstream)
                return _ordered_failure(
                    upstream, completion, "through an event it waited for, the op"
                )
            if error is not None and self.poison is None:
                self._poison_with(_inherited_from(error) or completion)
            self.ordering = self.poison is not None or bool(self._upstream)
        return error

    def _poison_with(self, first: Completion) -> None:
        self.poison = first
        self._poison_seen_at = 0
        self.ordering = True

    def _settle_upstream(self, seq: int) -> None:
        """Let the host learn the outcome of each op that op ``seq`` waited for through an event.

        The device is past those ops (this one waited for them), so only
        their own stream's waiter is left to finish them: this asks it to
        now, and waits for it, bounded, outside any lock.
        """
        for wait_seq, before in list(self._upstream):
            if seq < wait_seq or before.finished:
                continue
            flag = threading.Event()
            if before.subscribe(flag.set):  # subscribing wakes its waiter, if one was deferred
                flag.wait(_UPSTREAM_WAIT_S)

    def _upstream_failure(self, seq: int) -> Completion | None:
        """The first failure behind an event waited on before op ``seq``; prunes settled waits."""
        kept = []
        found = None
        for wait_seq, before in self._upstream:
            if seq < wait_seq or not before.finished:
                kept.append((wait_seq, before))
            elif found is None and before.error is not None:
                found = first_failure_of(before)
        self._upstream = kept
        return found

    def waits_for(self, before: Completion) -> None:
        """Later ops on this stream wait (through an event) for the op ``before`` (lock held)."""
        with self._order_lock:
            self._upstream.append((next_seq(), before))
            self.ordering = True

    def order_point(self) -> Completion | None:
        """What an event recorded now stands behind, for stream order (the stream's lock held).

        The first failure, while later ops inherit it, else the last op not
        yet finished; None when everything queued so far has succeeded.
        """
        # The last pending op first, then the poison: the waiter thread sets the
        # poison before the failed op stops being pending, so read in this
        # order one of the two names it.  The other order could read no poison
        # yet and then nothing pending (the failure lost, so a stream waiting
        # on the event ran on clean).
        last = self.last_pending()
        first = self.poison
        if first is not None and not self._poison_seen_at:
            return first
        return last

    def after_pending(self, fn: Callable[[], None]) -> bool:
        last = self.last_pending()
        return last is not None and last.subscribe(fn)

    # -- CompletionHooks ---------------------------------------------------------------
    def kick(self) -> None:
        waiter = self.waiter
        if waiter is not None:
            waiter.kick()

    def poll_begin(self) -> None:
        waiter = self.waiter
        if waiter is not None:
            waiter.poll_begin()

    def poll_end(self) -> None:
        waiter = self.waiter
        if waiter is not None:
            waiter.poll_end()

    def finish_ready(self, completion: Completion) -> None:
        waiter = self.waiter
        if waiter is not None:
            waiter.finish_ready(completion)

    def note_failure(self, completion: Completion) -> None:
        if first_failure_of(completion) is not completion:
            return  # inherited: the first failure is the one kept (and reported) once
        if self._failures.note(completion):
            return
        # A closed stream has no next synchronize(): its backend's close() reports it.
        self._orphans.note(completion)

    def forget_failure(self, completion: Completion) -> None:
        """Someone saw ``completion``'s error, which may be a first failure's, inherited."""
        first = first_failure_of(completion)
        with self._order_lock:
            poison = self.poison
            if first is completion and poison is not None and completion.error is poison.error:
                first = poison  # synchronize() raised the first failure's own error
            if first is poison and not self._poison_seen_at:
                self._poison_seen_at = next_seq()
        hooks = first.hooks
        if hooks is not None and hooks is not self:  # seen through an event, on another stream
            hooks.forget_failure(first)
            return
        for c in {completion, first}:
            if not self._failures.forget(c):
                self._orphans.forget(c)


def release_stream(driver: Driver, handle: DriverStream, state: StreamState) -> None:
    """Destroy a driver stream once its waiter has drained (or right away if it has none)."""
    waiter = state.waiter
    if waiter is None:
        driver.stream_destroy(handle)
    else:
        waiter.close(on_exit=functools.partial(driver.stream_destroy, handle))
