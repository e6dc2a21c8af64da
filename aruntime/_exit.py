"""The one interpreter-exit hook, with two stages run in order.

At exit with work in flight, the open backends are abandoned first (no more
wake-ups, no waiting on the device: :data:`BACKENDS`), then the drivers
under them stop their own threads (:data:`DRIVERS`, the CUDA driver's
helpers).  The first registration installs the ``atexit`` hook; each part
adds its own callback once.
"""

from __future__ import annotations

import atexit
import logging
import threading
from collections.abc import Callable

__all__ = ["BACKENDS", "DRIVERS", "at_exit"]

BACKENDS = 0
DRIVERS = 1

_stages: tuple[list[Callable[[], None]], ...] = ([], [])
_lock = threading.Lock()
_installed = False


def at_exit(stage: int, hook: Callable[[], None]) -> None:
    """Run ``hook`` at interpreter exit in ``stage`` (adding the same hook again does nothing)."""
    global _installed
    with _lock:
        hooks = _stages[stage]
        if hook not in hooks:
            hooks.append(hook)
        if not _installed:
            atexit.register(_run)
            _installed = True


def _run() -> None:
    for hooks in _stages:
        for hook in list(hooks):
            try:
                hook()
            except Exception:  # exit goes on: the next stage must still run
                logging.getLogger("aruntime").exception("exit hook %r failed", hook)
