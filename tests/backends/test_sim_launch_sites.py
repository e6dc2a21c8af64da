"""The launch site a sim is handed: ``"file:line"`` bytes kept for good, looked up by call."""

from __future__ import annotations

import sys

from aruntime.backends._sim_faults import _site_bytes


def test_a_site_is_its_file_and_line_and_the_same_call_gets_the_same_bytes() -> None:
    seen = []
    for _ in range(3):
        seen.append((_site_bytes(sys._getframe()), sys._getframe().f_lineno))
    first, line = seen[0]
    assert first == f"{__file__}:{line}".encode()
    assert all(data is first for data, _ in seen)  # the instruction's bytes, not new ones
    other = _site_bytes(sys._getframe())
    assert other == f"{__file__}:{sys._getframe().f_lineno - 1}".encode()
    assert other is not first


def test_code_made_at_run_time_gets_its_own_site() -> None:
    """Two code objects made by exec, at the same offset of the same statement: each is
    its own key (the cache holds each code object, so no id is reused under it)."""
    sites = set()
    for line in (3, 7):
        namespace: dict[str, object] = {}
        source = "\n" * (line - 1) + "import sys\nframe = sys._getframe()\n"
        exec(compile(source, f"<made {line}>", "exec"), namespace)
        sites.add(_site_bytes(namespace["frame"]))  # type: ignore[arg-type]
    assert sites == {b"<made 3>:4", b"<made 7>:8"}


def test_no_frame_is_an_unknown_site() -> None:
    assert _site_bytes(None) == b"<unknown>:0"
