"""The user's call site, found for a hook that runs on every kernel launch (EntryCaller)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

from aruntime._callsite import PACKAGE_DIR, EntryCaller

# Code that the walk takes for aruntime's own: compiled under a file name in the package.
_INSIDE = str(Path(PACKAGE_DIR, "_callsite_test_entry.py"))
_SOURCE = """
def launch(road):        # the public entry: Backend.launch
    return road()

def inner(hook):         # one frame of the core between the entry and the hook
    return hook()

def hook(find):          # the sim's hook, which asks for the site
    return find()
"""


def _inside_functions() -> dict[str, Any]:
    namespace: dict[str, Any] = {}
    exec(compile(_SOURCE, _INSIDE, "exec"), namespace)
    return namespace


def _here() -> int:
    return sys._getframe(1).f_lineno


def _where(frame: FrameType | None) -> tuple[str, int] | None:
    return None if frame is None else (frame.f_code.co_filename, frame.f_lineno)


def test_the_usual_road_jumps_to_the_entry_and_names_the_users_line() -> None:
    ns = _inside_functions()
    find = EntryCaller("_callsite_test_entry.py", "launch")

    def road() -> tuple[str, int] | None:
        return _where(ns["inner"](lambda: ns["hook"](find)))

    first = ns["launch"](road), _here()
    second = ns["launch"](road), _here()
    assert first[0] == (__file__, first[1])
    assert second[0] == (__file__, second[1])
    assert find.jumps == 1  # the first call walked and found the depth; the second jumped


def test_another_road_walks_and_still_names_the_users_line() -> None:
    """A road one frame longer or shorter than the one the depth was found on: the
    frame at that depth is not the entry's, so the call walks (it must never name
    a frame above the user's, as a blind jump on a shorter road would)."""
    ns = _inside_functions()
    find = EntryCaller("_callsite_test_entry.py", "launch")

    def usual() -> tuple[str, int] | None:
        return _where(ns["inner"](lambda: ns["hook"](find)))

    def longer() -> tuple[str, int] | None:
        return _where(ns["inner"](lambda: ns["inner"](lambda: ns["hook"](find))))

    def shorter() -> tuple[str, int] | None:
        return _where(ns["hook"](find))

    ns["launch"](usual)
    roads: list[Callable[[], tuple[str, int] | None]] = [longer, shorter, usual]
    for road in roads:
        site, line = ns["launch"](road), _here()
        assert site == (__file__, line), road.__name__
    assert find.jumps == 0  # each road found its own depth again
    site, line = ns["launch"](usual), _here()
    assert site == (__file__, line)
    assert find.jumps == 1  # the usual road, found again by the last walk


def test_no_entry_on_the_stack_names_the_first_frame_outside() -> None:
    ns = _inside_functions()
    find = EntryCaller("_callsite_test_entry.py", "launch")
    site, line = _where(ns["inner"](lambda: ns["hook"](find))), _here()
    assert site == (__file__, line)
    assert find.jumps == 0
