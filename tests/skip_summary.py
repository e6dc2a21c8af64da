"""A pytest plugin: ``-ra`` lists each skip reason once, with its count and where.

pytest folds skips by (file, line, reason), so one reason raised from a
fixture or helper used by a hundred tests fills a hundred lines (two each when
the reason lists what was tried).  Here a reason shared by several places is
folded to one line, "SKIPPED [n] <files with counts>: <reason on one line>".
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest


def one_line(reason: str) -> str:
    """A multi-line reason on one line; a listed item (``- ...``) follows its heading."""
    text = ""
    for line in (raw.strip() for raw in reason.splitlines()):
        if line.startswith("- "):
            text += (" " if text.endswith(":") else "; ") + line[2:].strip()
        elif line:
            text = f"{text} {line}" if text else line
    return text


def _where(paths: Counter[str]) -> str:
    if len(paths) == 1:
        return next(iter(paths))
    return ", ".join(f"{path} ({n})" if n > 1 else path for path, n in sorted(paths.items()))


@pytest.hookimpl(tryfirst=True)
def pytest_terminal_summary(terminalreporter: Any) -> None:
    # Runs before the terminal reporter's short summary, which reads these reports.
    skipped = terminalreporter.stats.get("skipped", [])
    start = Path(terminalreporter.startpath)
    groups: dict[str, list[Any]] = {}
    for report in skipped:
        if isinstance(report.longrepr, tuple) and len(report.longrepr) == 3:
            groups.setdefault(one_line(str(report.longrepr[2])), []).append(report)
    for reason, reports in groups.items():
        places: Counter[str] = Counter()
        for report in reports:
            path = Path(report.longrepr[0])
            places[str(path.relative_to(start)) if path.is_relative_to(start) else str(path)] += 1
        sites = {(r.longrepr[0], r.longrepr[1]) for r in reports}
        for report in reports:
            if len(sites) > 1:
                report.longrepr = (_where(places), None, reason)
            else:
                report.longrepr = (*report.longrepr[:2], reason)
