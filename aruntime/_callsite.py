"""Where the user's code called into aruntime: for messages and ResourceWarnings."""

from __future__ import annotations

import contextlib
import sys
import warnings
from pathlib import Path
from types import CodeType

__all__ = ["PACKAGE_DIR", "caller_site", "line_at", "user_frame", "warn_at"]

#: Where aruntime's own modules are: a frame whose file is under it is the core's.
PACKAGE_DIR = _PACKAGE_DIR = str(Path(__file__).resolve().parent)
# ``with gpu.capture(s) as graph:`` makes its graph from contextlib's __exit__.
_CONTEXTLIB = contextlib.__file__


# Code objects already classified (inside aruntime or not): stream-race
# checking asks for the user's frame on every op, so the test must be cheap.
_inside: dict[CodeType, bool] = {}


def _is_inside(code: CodeType) -> bool:
    filename = code.co_filename
    inside = filename.startswith(_PACKAGE_DIR) or filename == _CONTEXTLIB
    if len(_inside) < 4096:  # code made at run time (exec) must not grow it forever
        _inside[code] = inside
    return inside


def user_frame() -> tuple[str, int]:
    """``(filename, line)`` of the innermost frame outside aruntime (and contextlib)."""
    frame = sys._getframe(1)
    inside = _inside.get
    while frame is not None:
        code = frame.f_code
        known = inside(code)
        if not (_is_inside(code) if known is None else known):
            return code.co_filename, frame.f_lineno
        frame = frame.f_back  # type: ignore[assignment]
    return "<unknown>", 0


def line_at(code: CodeType, offset: int) -> int:
    """The source line of the instruction at byte ``offset`` of ``code`` (a frame's ``f_lasti``).

    What ``f_lineno`` computes when it is read; a place kept for a message
    that may never be written keeps ``(code, f_lasti)`` and asks this later.
    """
    for start, end, line in code.co_lines():
        if start <= offset < end and line is not None:
            return line
    return code.co_firstlineno


def caller_site() -> str:
    """``"file:line"`` of the innermost frame outside the aruntime package."""
    filename, line = user_frame()
    return f"{filename}:{line}"


def warn_at(site: tuple[str, int], message: str) -> None:
    """A ResourceWarning attributed to ``site`` (where the dropped object was made).

    From a finalizer, ``warnings.warn`` would point at ``weakref.py``; the
    line that created the object is the one the user can fix.
    """
    filename, line = site
    warnings.warn_explicit(message, ResourceWarning, filename, line)
