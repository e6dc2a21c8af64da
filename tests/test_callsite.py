"""The user's call site, found for a hook that runs on every kernel launch (EntryCaller)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

from aruntime import _callsite
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
    """A road one frame longer or shorter than the ones whose depths were found: the
    frame at those depths is not the entry's, so the call walks (it must never name
    a frame above the user's, as a blind jump on a shorter road would), and the
    road is remembered: its next call jumps."""
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
    assert find.jumps == 1  # longer and shorter walked; the usual road, known, jumped
    for road in roads:
        site, line = ns["launch"](road), _here()
        assert site == (__file__, line), road.__name__
    assert find.jumps == 4  # every road is known now


def test_it_remembers_a_few_roads_the_latest_first() -> None:
    """Past the limit the oldest road is forgotten: it walks again, and is remembered."""
    ns = _inside_functions()
    find = EntryCaller("_callsite_test_entry.py", "launch")

    def road(extra: int) -> Callable[[], tuple[str, int] | None]:
        def call() -> tuple[str, int] | None:
            inner: Callable[[], FrameType | None] = lambda: ns["hook"](find)  # noqa: E731
            for _ in range(extra):
                inner = (lambda f: lambda: ns["inner"](f))(inner)
            return _where(inner())

        return call

    roads = [road(n) for n in range(5)]  # one more than it remembers
    for r in roads:
        ns["launch"](r)
    assert find.jumps == 0
    for r in roads[1:]:
        site, line = ns["launch"](r), _here()
        assert site == (__file__, line)
    assert find.jumps == 4
    site, line = ns["launch"](roads[0]), _here()  # forgotten: it walks, and names the line
    assert site == (__file__, line)
    assert find.jumps == 4


def test_no_entry_on_the_stack_names_the_first_frame_outside() -> None:
    ns = _inside_functions()
    find = EntryCaller("_callsite_test_entry.py", "launch")
    site, line = _where(ns["inner"](lambda: ns["hook"](find))), _here()
    assert site == (__file__, line)
    assert find.jumps == 0


def test_known_user_frame_classifies_what_it_passes_within_its_depth() -> None:
    """The hook behind the sims' compiled note: a core file not seen before is
    classified on the way (the note stops at one), and the user's frame is found
    past it, unless it lies deeper than asked."""
    namespace: dict[str, Any] = {}
    fresh = str(Path(PACKAGE_DIR, "_callsite_test_unclassified.py"))
    exec(compile("def inner(look):\n    return look()\n", fresh, "exec"), namespace)
    _callsite._inside.pop(fresh, None)

    def here() -> FrameType | None:
        return namespace["inner"](lambda: _callsite.known_user_frame(sys._getframe(1), 2))

    found = here()
    assert found is not None and found.f_code.co_name == "here"
    assert _callsite._inside[fresh] is True
    too_deep = namespace["inner"](lambda: _callsite.known_user_frame(sys._getframe(1), 1))
    assert too_deep is None
