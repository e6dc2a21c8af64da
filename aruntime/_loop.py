"""The one place that knows about event loops: asyncio and trio.

Three things need a loop: a checkpoint, parking the current task until
another thread says "done", and deferring a call to the end of the current
loop step.  Everything else in the core is loop-agnostic and calls these.

Wake-ups from other threads go through each loop's own non-blocking,
thread-safe primitive (asyncio ``call_soon_threadsafe``, trio
``TrioToken.run_sync_soon``): a thread never blocks on a loop, and a loop
that has closed (or a trio run that has finished) is simply skipped.

trio is looked up in ``sys.modules`` instead of imported: a process that
never imported trio cannot be running it, and the lookup costs less than
anyio's backend detection on the hot path of every ``await``.  trio is in
``sys.modules`` from the moment another thread starts importing it, so the
lookup counts it only once ``trio.lowlevel`` has what we call: until then no
thread can be inside ``trio.run``.
"""

from __future__ import annotations

import asyncio
import functools
import sys
from collections.abc import Callable, Generator, Iterator
from typing import Any

__all__ = ["checkpoint", "checkpoint_returning", "defer_to_loop", "in_trio", "park", "stepper"]

#: Registers a wake-up to run (on any thread) when the awaited thing happens;
#: False when it has happened already and the wake-up will never run.
Register = Callable[[Callable[[], None]], bool]
Unregister = Callable[[Callable[[], None]], None]


def _trio_unbound() -> Any:  # pragma: no cover - only called once trio is bound
    raise RuntimeError("trio is not imported")


# trio's two functions on the per-await path, bound once trio has been imported.
_trio_in_run: Callable[[], bool] | None = None
_trio_checkpoint: Callable[[], Any] = _trio_unbound


def _bind_trio() -> Callable[[], bool] | None:
    """trio's ``in_trio_run``, looked up once trio is imported; None while it is not."""
    global _trio_in_run, _trio_checkpoint
    trio = sys.modules.get("trio")
    if trio is None:
        return None
    # Half-imported (by another thread, right now): nothing of it can run yet,
    # so this thread is not in trio; look again on the next call.
    lowlevel = getattr(trio, "lowlevel", None)
    in_run: Callable[[], bool] | None = getattr(lowlevel, "in_trio_run", None)
    trio_checkpoint = getattr(lowlevel, "checkpoint", None)
    if in_run is None or trio_checkpoint is None:
        return None
    _trio_checkpoint = trio_checkpoint
    _trio_in_run = in_run
    return in_run


def in_trio() -> bool:
    """Whether the calling thread is inside ``trio.run``."""
    in_run = _trio_in_run or _bind_trio()
    return in_run is not None and bool(in_run())


_ONE_YIELD = (None,)


def checkpoint() -> Iterator[Any]:
    """A checkpoint for ``__await__``: ``yield from checkpoint()``.

    Uses the loop's own primitive: anyio's checkpoint looks its backend up on
    every call, which would cost more than the rest of a mock op.  On asyncio
    a checkpoint is one bare ``yield`` (what ``asyncio.sleep(0)`` does), given
    here by an iterator over one None, which is cheaper to make than a
    generator.
    """
    in_run = _trio_in_run or _bind_trio()
    if in_run is not None and in_run():
        return _trio_checkpoint().__await__()  # type: ignore[no-any-return]
    return iter(_ONE_YIELD)


def _trio_step() -> Iterator[Any]:
    return _trio_checkpoint().__await__()  # type: ignore[no-any-return]


_asyncio_step: Callable[[], Iterator[Any]] = functools.partial(iter, _ONE_YIELD)


def stepper() -> Callable[[], Iterator[Any]]:
    """:func:`checkpoint` with the loop looked up once: ``yield from step()`` at each step.

    For an ``__await__`` that steps the loop again and again while it asks
    whether something is done (a poll): :func:`checkpoint` finds the loop
    at each call, which costs a few percent of a loop step.  The callable
    returned makes the same checkpoint for the loop running now, on this
    thread; use it only in the ``__await__`` that asked for it.
    """
    in_run = _trio_in_run or _bind_trio()
    if in_run is not None and in_run():
        return _trio_step
    return _asyncio_step


def checkpoint_returning(value: Any) -> Generator[Any, None, Any]:
    """What ``__await__`` of something already finished returns: a checkpoint, then ``value``.

    With ``value`` None (most ops), the checkpoint itself is returned: the
    iterator over one None on asyncio, trio's own awaitable on trio; either
    ends returning None.  A generator of our own is made only to return a
    value.
    """
    in_run = _trio_in_run
    if in_run is None:
        if "trio" not in sys.modules:
            if value is None:
                return iter(_ONE_YIELD)  # type: ignore[return-value]
            return _yield_returning(value)
        in_run = _bind_trio()
    if in_run is not None and in_run():
        if value is None:
            return _trio_checkpoint().__await__()  # type: ignore[no-any-return]
        return _trio_returning(value)
    if value is None:
        # An iterator over one None is not a generator, but ``await`` needs
        # no more: it yields None once, then ends, and the await returns None.
        return iter(_ONE_YIELD)  # type: ignore[return-value]
    return _yield_returning(value)


def _yield_returning(value: Any) -> Generator[None, None, Any]:
    yield  # exactly what asyncio.sleep(0) does
    return value


def _trio_returning(value: Any) -> Generator[Any, None, Any]:
    yield from _trio_checkpoint().__await__()
    return value


def park(register: Register, unregister: Unregister) -> Generator[Any, None, None]:
    """Suspend the current task until the registered wake-up runs (``yield from``).

    Cancellation abandons the wait: the wake-up is unregistered and nothing
    else changes.  When ``register`` reports that the thing already happened,
    this is a plain checkpoint.
    """
    if in_trio():
        yield from _park_trio(register, unregister).__await__()
    else:
        yield from _park_asyncio(register, unregister).__await__()


def _set_future(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


async def _park_asyncio(register: Register, unregister: Unregister) -> None:
    loop = asyncio.get_running_loop()
    fut: asyncio.Future[None] = loop.create_future()

    def wake() -> None:
        try:
            loop.call_soon_threadsafe(_set_future, fut)
        except RuntimeError:
            pass  # the loop closed while we waited; nobody is left to wake

    if not register(wake):
        await asyncio.sleep(0)
        return
    try:
        await fut
    finally:
        # A cancelled future is done too: unregister unconditionally, or every
        # abandoned wait would leave its wake-up (and its loop) behind.
        unregister(wake)


async def _park_trio(register: Register, unregister: Unregister) -> None:
    import trio

    token = trio.lowlevel.current_trio_token()
    task = trio.lowlevel.current_task()
    waiting = [True]  # touched only on the trio thread

    def reschedule() -> None:
        if waiting[0]:
            waiting[0] = False
            trio.lowlevel.reschedule(task)

    def wake() -> None:
        try:
            token.run_sync_soon(reschedule)
        except trio.RunFinishedError:
            pass

    if not register(wake):
        await trio.lowlevel.checkpoint()
        return

    def abort(_: object) -> Any:
        waiting[0] = False
        unregister(wake)
        return trio.lowlevel.Abort.SUCCEEDED

    await trio.lowlevel.wait_task_rescheduled(abort)


def defer_to_loop(fn: Callable[[], None]) -> bool:
    """Run ``fn`` at the end of this thread's loop step; False if no loop runs here."""
    if in_trio():
        import trio

        try:
            trio.lowlevel.current_trio_token().run_sync_soon(fn)
        except trio.RunFinishedError:
            return False
        return True
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return False
    if loop.is_closed():
        return False
    loop.call_soon(fn)
    return True
