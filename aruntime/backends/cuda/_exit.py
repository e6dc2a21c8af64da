"""The CUDA drivers' part of the interpreter-exit hook (see the driver's docstring)."""

from __future__ import annotations

import os
import time
import weakref
from typing import Protocol

from ..._exit import DRIVERS, at_exit

_EXIT_TIMEOUT_ENV = "ARUNTIME_CUDA_EXIT_TIMEOUT_S"


class _Exiting(Protocol):
    def shutdown_at_exit(self, deadline: float) -> None: ...


_live_drivers: weakref.WeakSet[_Exiting] = weakref.WeakSet()


def _register_exit_hook() -> None:
    at_exit(DRIVERS, _at_exit)


def _at_exit() -> None:
    try:
        timeout = float(os.environ.get(_EXIT_TIMEOUT_ENV, "10"))
    except ValueError:
        timeout = 10.0
    deadline = time.monotonic() + timeout
    for driver in list(_live_drivers):
        driver.shutdown_at_exit(deadline)
