"""Where the user enqueued each op, for reports of failures that nobody saw.

An op that fails on a waiter thread, long after the call that enqueued it,
can only be traced back to the user's line if that line was taken at the
call.  Taking it walks the stack, so it is done only while recording is on
(the ``aruntime.testing`` fixtures turn it on), except for an op that fails
at its enqueue, whose line costs nothing until it fails.

The sites live in a weak table beside the Completions, so a Completion
carries nothing extra, and a site goes with its Completion.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

from ._callsite import caller_site

__all__ = ["note", "record", "recording", "site_of"]

_sites: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()
_lock = threading.Lock()
_depth = 0
#: Whether every op's site is taken at enqueue (one flag test per op when off).
recording = False


def note(completion: Any) -> None:
    """Remember the user's line that is enqueuing ``completion``'s op (call it from that call)."""
    site = caller_site()
    with _lock:
        _sites[completion] = site


def site_of(completion: Any) -> str | None:
    """The ``"file:line"`` that enqueued ``completion``'s op, if it was taken."""
    with _lock:
        return _sites.get(completion)


class record:
    """Context manager: take every op's site while entered (nests; any thread)."""

    def __enter__(self) -> record:
        global recording, _depth
        with _lock:
            _depth += 1
            recording = True
        return self

    def __exit__(self, *exc: object) -> None:
        global recording, _depth
        with _lock:
            _depth -= 1
            recording = _depth > 0
