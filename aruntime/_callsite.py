"""Where the user's code called into aruntime: for messages and ResourceWarnings."""

from __future__ import annotations

import contextlib
import warnings
from pathlib import Path
from sys import _getframe  # bound once: the walk runs on every sim launch
from types import CodeType, FrameType

__all__ = [
    "KNOWN_FILES",
    "PACKAGE_DIR",
    "EntryCaller",
    "caller_site",
    "known_user_frame",
    "line_at",
    "user_frame",
    "warn_at",
]

#: Where aruntime's own modules are: a frame whose file is under it is the core's.
PACKAGE_DIR = _PACKAGE_DIR = str(Path(__file__).resolve().parent)
# ``with gpu.capture(s) as graph:`` makes its graph from contextlib's __exit__.
_CONTEXTLIB = contextlib.__file__


#: How many roads (depths below the entry) an EntryCaller remembers.
_ROADS = 4

# Files already classified (inside aruntime or not): stream-race checking and
# the sims' launch sites ask for the user's frame on every op, so the test
# must be cheap.  Keyed by file name, whose hash a str caches: a code object
# hashes its bytecode and constants again at every lookup (0.1-0.5 us each,
# five or six frames a launch).
_inside: dict[str, bool] = {}


#: The same cache, read by the sims' compiled launch-site note (ffi/core/site.c).
KNOWN_FILES = _inside


def _is_inside(filename: str) -> bool:
    inside = filename.startswith(_PACKAGE_DIR) or filename == _CONTEXTLIB
    if len(_inside) < 4096:  # files made up at run time (exec) must not grow it forever
        _inside[filename] = inside
    return inside


def user_frame() -> tuple[str, int]:
    """``(filename, line)`` of the innermost frame outside aruntime (and contextlib)."""
    frame = _outside_from(_getframe(1))
    if frame is None:
        return "<unknown>", 0
    return frame.f_code.co_filename, frame.f_lineno


def _outside_from(frame: FrameType | None, depth: int = -1) -> FrameType | None:
    """``frame`` or the first frame above it outside aruntime (None: none is, or none
    within ``depth`` frames when ``depth`` is not negative), classifying files as it goes."""
    inside = _inside.get
    while frame is not None and depth != 0:
        filename = frame.f_code.co_filename
        known = inside(filename)
        if not (_is_inside(filename) if known is None else known):
            return frame
        frame = frame.f_back
        depth -= 1
    return None


def known_user_frame(frame: FrameType | None, depth: int) -> FrameType | None:
    """:func:`_outside_from`, bounded: the first frame from ``frame`` up whose file is
    outside aruntime, within ``depth`` frames past files inside; None when too deep.

    What the sims' compiled launch-site note does in C (``ffi/core/site.c``),
    for the hook that stands in for it on a line the note has not cached.
    The note stops at a file not classified yet; this classifies it, so that
    the note finds the frame next time.
    """
    return _outside_from(frame, depth)


class EntryCaller:
    """The user's frame, for a hook called on every op at a fixed depth below a public method.

    Walking up with ``f_back`` makes a frame object for every level (five
    or six per kernel launch, most of the cost of a sim's launch site).
    Calls on the usual road reach the hook at the same depth below the
    public method ``function`` of ``filename`` (``Backend.launch``), so the
    first call finds that depth, and later calls jump there with one
    ``sys._getframe`` and check, by identity, that the frame is that
    method's.  A few roads are remembered, the latest found first (a
    launch's first run of a signature lays it out in Python, a frame deeper
    than the compiled launch that follows); a road not seen before (a traced
    op, an internal caller) walks as :func:`user_frame` does and is
    remembered in turn.  Call it directly
    from the hook: the depth counts from the hook's caller.  It returns the
    frame, not its line: ``f_lineno`` scans the code's line table, so a
    caller that sees the same call sites again keys them by ``f_lasti``.
    """

    def __init__(self, filename: str, function: str) -> None:
        self._filename = str(Path(_PACKAGE_DIR, filename))
        self._function = function
        self._entry: CodeType | None = None
        self._depths: list[int] = []  # the roads' depths, the latest found first
        self.jumps = 0  # calls that took the one-step road (tests hold the road to it)

    def __call__(self) -> FrameType | None:
        for depth in self._depths:
            try:
                frame = _getframe(depth)
            except ValueError:  # a shallower stack than this road's
                continue
            if frame.f_code is self._entry:
                self.jumps += 1
                return _outside_from(frame.f_back)
        return self._walk()

    def _walk(self) -> FrameType | None:
        # Counted as __call__ counts: its caller (the hook) is depth 1, ours is 2.
        frame: FrameType | None = _getframe(2)
        depth = 1
        while frame is not None:
            code = frame.f_code
            if code.co_name == self._function and code.co_filename == self._filename:
                if code is not self._entry:  # the entry itself changed (a reload)
                    self._entry, self._depths = code, []
                self._depths.insert(0, depth)
                del self._depths[_ROADS:]
                return _outside_from(frame.f_back)
            frame = frame.f_back
            depth += 1
        return _outside_from(_getframe(2))


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
