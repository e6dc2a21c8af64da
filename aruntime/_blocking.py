"""Blocking calls made on an event loop's thread: a RuntimeWarning naming the async call.

``copy_h2d``, ``copy_d2h``, ``copy_d2d``, ``memset`` and ``Completion.wait``
block the calling thread until the device is done.  Called from a coroutine,
they stall every task of its loop, and nothing else says so.  They warn
(``RuntimeWarning``, at the user's line, naming the async call to use) when
the calling thread runs an event loop and checking is on:

* under asyncio's debug mode (``asyncio.run(..., debug=True)``,
  ``PYTHONASYNCIODEBUG=1``), which is asyncio's own switch for this kind of
  report (it logs slow callbacks the same way);
* under ``ARUNTIME_DEBUG=1``, on asyncio and trio alike (trio has no debug
  mode);
* while :func:`force` has turned it on (the ``aruntime.testing`` fixtures).

Each call site warns once under the default warning filters: the warnings
go through a registry per file, as ``warnings.warn`` would.  Off, a blocking
call pays one flag test and, on asyncio, one look at the running loop.
"""

from __future__ import annotations

import asyncio
import os
import threading
import warnings
from typing import Any

from ._callsite import user_frame
from ._loop import in_trio

__all__ = ["check", "force", "forced"]

_get_running_loop = asyncio._get_running_loop

#: True under ARUNTIME_DEBUG=1, or while anyone has forced checking on.
_on = os.environ.get("ARUNTIME_DEBUG", "").strip() == "1"
_env_on = _on
_forcing = 0
_lock = threading.Lock()
# One registry per file, as ``warnings.warn`` keeps one per module: the
# "default" action then shows each call site once.
_registries: dict[str, dict[Any, Any]] = {}


def check(call: str, instead: str) -> None:
    """Warn if this blocking ``call`` runs on an event loop's thread; ``instead`` is the fix."""
    if _on:
        if _get_running_loop() is not None or in_trio():
            _warn(call, instead)
        return
    loop = _get_running_loop()
    if loop is not None and loop.get_debug():
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
    """Context manager: check blocking calls while it is entered, whatever the switches say.

    Nests, and is safe to use from several threads at once.
    """

    def __enter__(self) -> force:
        global _on, _forcing
        with _lock:
            _forcing += 1
            _on = True
        return self

    def __exit__(self, *exc: object) -> None:
        global _on, _forcing
        with _lock:
            _forcing -= 1
            _on = _env_on or _forcing > 0


def forced() -> bool:
    """Whether blocking calls are checked on every loop, not only in asyncio's debug mode."""
    return _on
