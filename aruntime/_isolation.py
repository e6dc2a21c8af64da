"""``@pytest.mark.aruntime_isolated``: run one test in a pytest of its own, in a child process.

For tests that fault a device on purpose.  A sticky fault can leave the
device, or a process-wide driver, unusable for every later test; a crash
would end the whole session.  In a child process the fault goes with the
child, and the session goes on.

The parent runs none of the test's fixtures: it starts ``python -m pytest
NODEID`` in the session's root directory, and the child writes each of its
reports (setup, call, teardown: outcome and text) to a file, which the
parent replays as the test's own.  A child that dies before reporting (a
crash, ``os._exit``, a timeout) fails the test with its exit status and the
end of its output.  Options given to the parent (``-m``, ``-k``, ``-p``) are
not passed on; the child reads the same configuration files, and runs the
test itself even where they say ``-n`` (pytest-xdist).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

__all__ = ["MARKER", "pytest_configure", "pytest_runtest_logreport", "pytest_runtest_protocol"]

MARKER = "aruntime_isolated"
#: Set in the child: where it writes its reports.
_REPORTS_ENV = "ARUNTIME_ISOLATED_REPORTS"
_DEFAULT_TIMEOUT_S = 300.0
_TAIL = 4000


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(timeout=300): run the test in a pytest of its own, in a child process, so "
        "a device it faults (or a crash) ends with it (aruntime.testing)",
    )


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> bool | None:
    marker = item.get_closest_marker(MARKER)
    if marker is None or os.environ.get(_REPORTS_ENV):
        return None  # not isolated, or this is the child: run it here
    timeout = float(marker.kwargs.get("timeout", _DEFAULT_TIMEOUT_S))
    item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    for report in _run_in_child(item, timeout):
        item.ihook.pytest_runtest_logreport(report=report)
    item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    return True


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    path = os.environ.get(_REPORTS_ENV)
    if not path:
        return
    longrepr: Any = report.longrepr
    if not isinstance(longrepr, tuple):  # a skip's (path, line, reason) stays as it is
        longrepr = None if longrepr is None else str(report.longreprtext)
    line = {
        "nodeid": report.nodeid,
        "when": report.when,
        "outcome": report.outcome,
        "longrepr": longrepr,
        "sections": list(report.sections),
        "duration": report.duration,
    }
    with open(path, "a", encoding="utf-8") as out:
        out.write(json.dumps(line) + "\n")


def _run_in_child(item: pytest.Item, timeout: float) -> list[pytest.TestReport]:
    root = Path(str(item.config.rootpath))
    fd, reports_path = tempfile.mkstemp(prefix="aruntime-isolated-", suffix=".jsonl")
    os.close(fd)
    env = {**os.environ, _REPORTS_ENV: reports_path}
    # Every test of the child is this one: no -m or -k of the parent's may deselect it.
    cmd = [sys.executable, "-m", "pytest", item.nodeid, "-q", "-p", "no:cacheprovider", "-m", ""]
    if item.config.pluginmanager.hasplugin("xdist"):
        # A -n of the configuration's would make the child an xdist controller:
        # the test would run in a worker of its, and both would write reports.
        cmd += ["-n", "0"]
    try:
        try:
            run = subprocess.run(
                cmd, cwd=root, env=env, capture_output=True, text=True, timeout=timeout
            )
            status, output = f"exit status {run.returncode}", run.stdout + run.stderr
        except subprocess.TimeoutExpired as exc:
            status = f"no result after {timeout:g} s (killed)"
            output = _text(exc.stdout) + _text(exc.stderr)
        lines = Path(reports_path).read_text(encoding="utf-8").splitlines()
    finally:
        os.unlink(reports_path)
    reports = [_report(item, json.loads(line)) for line in lines]
    ours = [r for r in reports if r.nodeid == item.nodeid]
    if not any(r.when == "teardown" for r in ours):
        # It died before it could say how it ended.
        text = f"the isolated child process ended with {status} before the test finished:\n"
        ours.append(_made(item, "call", "failed", text + output[-_TAIL:], []))
    return ours


def _report(item: pytest.Item, data: dict[str, Any]) -> pytest.TestReport:
    longrepr = data["longrepr"]
    if isinstance(longrepr, list):
        longrepr = tuple(longrepr)
    sections = [tuple(s) for s in data["sections"]]
    report = _made(item, data["when"], data["outcome"], longrepr, sections)
    report.nodeid = data["nodeid"]
    report.duration = data["duration"]
    return report


def _made(
    item: pytest.Item, when: str, outcome: str, longrepr: Any, sections: list[Any]
) -> pytest.TestReport:
    return pytest.TestReport(
        nodeid=item.nodeid,
        location=item.location,
        keywords=dict.fromkeys(item.keywords, 1),
        outcome=outcome,  # type: ignore[arg-type]
        longrepr=longrepr,
        when=when,  # type: ignore[arg-type]
        sections=sections,
    )


def _text(data: bytes | str | None) -> str:
    if data is None:
        return ""
    return data if isinstance(data, str) else data.decode(errors="replace")
