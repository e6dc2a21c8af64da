"""Where the user's code called into aruntime: for messages and ResourceWarnings."""

from __future__ import annotations

import contextlib
import sys
import warnings
from pathlib import Path

__all__ = ["caller_site", "user_frame", "warn_at"]

_PACKAGE_DIR = str(Path(__file__).resolve().parent)
# ``with gpu.capture(s) as graph:`` makes its graph from contextlib's __exit__.
_CONTEXTLIB = contextlib.__file__


def user_frame() -> tuple[str, int]:
    """``(filename, line)`` of the innermost frame outside aruntime (and contextlib)."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not filename.startswith(_PACKAGE_DIR) and filename != _CONTEXTLIB:
            return filename, frame.f_lineno
        frame = frame.f_back  # type: ignore[assignment]
    return "<unknown>", 0


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
