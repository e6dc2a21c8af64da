"""The interpreter-exit hook shared by every open CUDA driver (see the driver's docstring)."""

from __future__ import annotations

import atexit
import os
import threading
import time
import weakref
from typing import Protocol

_EXIT_TIMEOUT_ENV = "ARUNTIME_CUDA_EXIT_TIMEOUT_S"


class _Exiting(Protocol):
    def shutdown_at_exit(self, deadline: float) -> None: ...


_live_drivers: weakref.WeakSet[_Exiting] = weakref.WeakSet()
_exit_hook_lock = threading.Lock()
_exit_hook_registered = False


def _register_exit_hook() -> None:
    global _exit_hook_registered
    with _exit_hook_lock:
        if not _exit_hook_registered:
            atexit.register(_at_exit)
            _exit_hook_registered = True


def _at_exit() -> None:
    try:
        timeout = float(os.environ.get(_EXIT_TIMEOUT_ENV, "10"))
    except ValueError:
        timeout = 10.0
    deadline = time.monotonic() + timeout
    for driver in list(_live_drivers):
        driver.shutdown_at_exit(deadline)
