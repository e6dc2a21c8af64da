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


@pytest.fixture(scope="class")
def initialize_from_pytest_config(request: pytest.FixtureRequest) -> None:
    request.cls._dump_failed_filechecks = request.config.getoption("dump_failed_filechecks")


class _Outcomes:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.outcomes: dict[str, dict[str, str]] = {}

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[Any]) -> Any:
        report = (yield).get_result()
        if report.when == "call" or report.outcome != "passed":
            previous = self.outcomes.get(report.nodeid)
            # A failed teardown after a passed call still counts the test as failed.
            if previous is None or previous["outcome"] == "passed":
                outcome = "error" if report.failed and report.when != "call" else report.outcome
                message = ""
                if report.failed:
                    message = report.longrepr.reprcrash.message if hasattr(
                        report.longrepr, "reprcrash"
                    ) else str(report.longrepr)
                elif report.skipped and isinstance(report.longrepr, tuple):
                    message = str(report.longrepr[2])
                self.outcomes[report.nodeid] = {"outcome": outcome, "message": message[:400]}

    def pytest_sessionfinish(self) -> None:
        self.path.write_text(json.dumps(self.outcomes, indent=1, sort_keys=True))


def pytest_configure(config: pytest.Config) -> None:
    path = config.getoption("numba_sim_outcomes")
    if path:
        config.pluginmanager.register(_Outcomes(Path(path)), "numba-sim-outcomes")
