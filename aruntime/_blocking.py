"""Blocking calls made on an event loop's thread: a RuntimeWarning naming the async call.

``copy_h2d``, ``copy_d2h``, ``copy_d2d``, ``memset``, ``Completion.wait`` and
``DeviceArray.to_numpy`` block the calling thread until the device is done.
Called from a coroutine, they stall every task of its loop, and nothing else
says so.  So, by default, they warn (``RuntimeWarning``, at the user's line,
naming the async call to use) whenever the calling thread runs an asyncio
loop or is inside ``trio.run``.  Off the loop (sync code, a worker thread,
``anyio.to_thread.run_sync``) nothing warns.

Each call site warns once under the default warning filters: the warnings
go through a registry per file, as ``warnings.warn`` would.  A program that
blocks on purpose says so with the standard filters, e.g.
``warnings.filterwarnings("ignore", r".* blocks this thread", RuntimeWarning)``,
or moves the call off the loop.  The check costs a blocking call one look at
the running asyncio loop and, where trio is imported, one at trio's run.
"""

from __future__ import annotations

import asyncio
import threading
import warnings
from typing import Any

from ._callsite import user_frame
from ._loop import in_trio

__all__ = ["check", "force", "forced"]

_get_running_loop = asyncio._get_running_loop

#: Always True since blocking calls warn by default; :func:`force` is kept for
#: the callers that turned the check on before it was the default.
_on = True
_forcing = 0
_lock = threading.Lock()
# One registry per file, as ``warnings.warn`` keeps one per module: the
# "default" action then shows each call site once.
_registries: dict[str, dict[Any, Any]] = {}


def check(call: str, instead: str) -> None:
    """Warn if this blocking ``call`` runs on an event loop's thread; ``instead`` is the fix."""
    if _get_running_loop() is not None or in_trio():
        _warn(call, instead)


def _warn(call: str, instead: str) -> None:
    filename, line = user_frame()
    with _lock:
        registry = _registries.setdefault(filename, {})
    warnings.warn_explicit(
        f"{call} blocks this thread, which runs an event loop: every task on the loop "
        f"stalls until the device is done; use {instead}",
        RuntimeWarning,
        filename,
        line,
        registry=registry,
    )


class force:
    """Context manager: check blocking calls while it is entered (they are checked anyway now).

    Nests, and is safe to use from several threads at once.
    """

    def __enter__(self) -> force:
        global _forcing
        with _lock:
            _forcing += 1
        return self

    def __exit__(self, *exc: object) -> None:
        global _forcing
        with _lock:
            _forcing -= 1


def forced() -> bool:
    """Whether blocking calls are checked on every loop: always, since it is the default."""
    return _on
