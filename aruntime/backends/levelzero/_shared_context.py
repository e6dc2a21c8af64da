"""One Level Zero context per ze driver, shared by every device opened on it.

Memory and events made in one context are usable by each device in it, and
that is what a peer copy (``zeCommandListAppendMemoryCopy`` between two
devices' allocations) and a wait on another device's event need.  So every
:class:`LevelZeroDriver` opened on one ze driver holds the same context;
the last one to close destroys it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from ._constants import _ST_CONTEXT_DESC
from ._ffi import ffi

__all__ = ["acquire_context", "release_context"]

_lock = threading.Lock()
#: (library, ze driver) -> [context, how many drivers hold it]
_contexts: dict[tuple[int, int], list[Any]] = {}


def acquire_context(
    lib: Any, driver: Any, check: Callable[[int, str], None]
) -> tuple[Any, tuple[int, int]]:
    """The context of ``driver`` (made on first use) and the key to release it with."""
    key = (id(lib), int(ffi.cast("uintptr_t", driver)))
    with _lock:
        held = _contexts.get(key)
        if held is None:
            desc = ffi.new("ze_context_desc_t*")
            desc.stype = _ST_CONTEXT_DESC
            context = ffi.new("ze_context_handle_t*")
            check(lib.zeContextCreate(driver, desc, context), "zeContextCreate")
            held = _contexts[key] = [context[0], 0]
        held[1] += 1
        return held[0], key


def release_context(lib: Any, key: tuple[int, int]) -> None:
    """Drop one hold; the last destroys the context (everything made in it is gone)."""
    with _lock:
        held = _contexts[key]
        held[1] -= 1
        if held[1]:
            return
        del _contexts[key]
    lib.zeContextDestroy(held[0])
