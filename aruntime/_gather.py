"""gather: await several Completions and coroutines together.

A Completion is an awaitable, not a coroutine, so a task group's
``start_soon`` cannot run one; and awaiting several ops one after another
stops at the first failure, leaving the later ones unobserved while their
buffers are still in use.  :func:`gather` waits for every one of them.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Coroutine
from typing import Any

import anyio
import anyio.lowlevel

from ._completion import Completion

__all__ = ["gather"]


async def gather(*awaitables: Awaitable[Any]) -> list[Any]:
    """Await every argument and return their results, in argument order.

    Each argument is a :class:`Completion` (``gpu.copy_d2h_async(...)``) or
    a coroutine (``fetch(...)``, not ``fetch``); coroutines run concurrently
    in tasks of their own.  Works under asyncio and trio, and is always a
    checkpoint, even with no arguments.

    When some fail, gather still waits for all the others to finish (so no
    host buffer is handed back while the device may use it) and then raises
    the error that happened first; on Python 3.11+ a note on it counts the
    others.  The other failed Completions count as observed: ``synchronize()``
    will not raise them again.

    Cancellation: cancelling the task that awaits gather abandons every wait
    still open.  The device ops go on, and their host buffers stay referenced
    until the device is done with them (as for any cancelled ``await`` of a
    Completion); the coroutines are cancelled at their next checkpoint, and
    gather returns only after they have ended.  No result is returned.
    """
    _check_awaitables(awaitables)
    results: list[Any] = [None] * len(awaitables)
    failures: dict[int, BaseException] = {}
    coroutines = [(i, a) for i, a in enumerate(awaitables) if not isinstance(a, Completion)]
    if not coroutines:
        # Completions are already running: awaiting them in turn takes as long as
        # the slowest, and saves a task per op.  Each await is a checkpoint.
        if not awaitables:
            await anyio.lowlevel.checkpoint()
        for i, completion in enumerate(awaitables):
            await _collect(completion, i, results, failures)
    else:
        async with anyio.create_task_group() as tg:
            for i, coro in coroutines:
                tg.start_soon(_collect, coro, i, results, failures)
            for i, completion in enumerate(awaitables):
                if isinstance(completion, Completion):
                    await _collect(completion, i, results, failures)
    if failures:
        first = failures[min(failures)]
        if len(failures) > 1 and hasattr(first, "add_note"):
            first.add_note(f"aruntime.gather: {len(failures) - 1} other awaitable(s) also failed")
        raise first
    return results


async def _collect(
    awaitable: Awaitable[Any], index: int, results: list[Any], failures: dict[int, BaseException]
) -> None:
    # Only errors are collected: a cancellation (BaseException) must reach the
    # task group so that everything else is cancelled too.
    try:
        results[index] = await awaitable
    except Exception as exc:
        failures[index] = exc


def _check_awaitables(awaitables: tuple[Any, ...]) -> None:
    for i, item in enumerate(awaitables):
        if isinstance(item, (Completion, Coroutine)) or inspect.isawaitable(item):
            continue
        if callable(item):
            name = getattr(item, "__qualname__", type(item).__name__)
            hint = f"; call it: gather({name}(...))"
        else:
            hint = ""
        # A Backend's compiled op is a bound method to its user (it has __func__).
        what = "method" if hasattr(item, "__func__") else type(item).__name__
        _close_coroutines(awaitables)
        raise TypeError(f"gather: argument {i} is a {what}, not a Completion or a coroutine{hint}")


def _close_coroutines(awaitables: tuple[Any, ...]) -> None:
    """Close the coroutines gather will not run, so Python does not warn they were never awaited."""
    for item in awaitables:
        if isinstance(item, Coroutine):
            item.close()
