"""A pytest plugin that stands in for the conftest numba-cuda's wheel leaves out.

numba-cuda's test classes ask for an ``initialize_from_pytest_config`` fixture
that its source tree's conftest defines; the wheel ships the tests without it.
This plugin supplies that fixture and writes every test's outcome to the JSON
file named by ``--numba-sim-outcomes`` so the runner (``run.py``) can count them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--dump-failed-filechecks",
        action="store_true",
        help="numba-cuda's own option: write reproducers of failed FileCheck tests",
    )
    parser.addoption("--numba-sim-outcomes", default="", help="JSON file for each test's outcome")
    parser.addoption(
        "--numba-sim-leave-out",
        default="",
        help="JSON file of test ids (module::Class::test) not to run",
    )


@pytest.fixture(scope="class")
def initialize_from_pytest_config(request: pytest.FixtureRequest) -> None:
    request.cls._dump_failed_filechecks = request.config.getoption("dump_failed_filechecks")


def _test_id(item: pytest.Item) -> str:
    """module.dotted.name::Class::test: pytest's own node ids of --pyargs tests
    are relative to the folder the run starts in, which says nothing here."""
    module = getattr(item, "module", None)
    name = module.__name__ if module is not None else item.path.stem
    return f"{name}::{item.nodeid.split('::', 1)[-1]}"


class _Outcomes:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.outcomes: dict[str, dict[str, Any]] = {}

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[Any]) -> Any:
        report = (yield).get_result()
        entry = self.outcomes.setdefault(
            _test_id(item), {"outcome": "passed", "message": "", "seconds": 0.0}
        )
        entry["seconds"] = round(entry["seconds"] + report.duration, 3)
        # The first phase that does not pass decides: a failed setup is an
        # error, a failed call a failure, a failed teardown after a pass an error.
        if entry["outcome"] != "passed" or report.outcome == "passed":
            return
        if report.skipped:
            entry["outcome"] = "skipped"
            if isinstance(report.longrepr, tuple):
                entry["message"] = str(report.longrepr[2])[:400]
            return
        entry["outcome"] = "failed" if report.when == "call" else "error"
        crash = getattr(report.longrepr, "reprcrash", None)
        entry["message"] = (crash.message if crash else str(report.longrepr))[:400]

    def pytest_runtest_logfinish(self) -> None:
        # Written as the run goes, so a run cut short still tells what it saw.
        if len(self.outcomes) % 20 == 0:
            self._write()

    def pytest_sessionfinish(self) -> None:
        self._write()

    def _write(self) -> None:
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.outcomes, indent=1, sort_keys=True))
        tmp.replace(self.path)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    path = config.getoption("numba_sim_leave_out")
    if not path:
        return
    leave_out = set(json.loads(Path(path).read_text()))
    kept = [item for item in items if _test_id(item) not in leave_out]
    config.hook.pytest_deselected(items=[item for item in items if item not in kept])
    items[:] = kept


def pytest_configure(config: pytest.Config) -> None:
    path = config.getoption("numba_sim_outcomes")
    if path:
        config.pluginmanager.register(_Outcomes(Path(path)), "numba-sim-outcomes")
