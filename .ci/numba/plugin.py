"""A pytest plugin that stands in for the conftest numba-cuda's wheel leaves out.

numba-cuda's test classes ask for an ``initialize_from_pytest_config`` fixture
that its source tree's conftest defines; the wheel ships the tests without it.
This plugin supplies that fixture and writes every test's outcome to the JSON
file named by ``--numba-sim-outcomes`` so the runner (``run.py``) can count them:
under pytest-xdist the controller writes it, from every worker's reports.
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
    """module.dotted.name::Class::test, as expected.json names tests: from the
    module itself, since pytest's own node ids of --pyargs tests say the module
    only under a --rootdir that holds the package (as run.py gives)."""
    module = getattr(item, "module", None)
    name = module.__name__ if module is not None else item.path.stem
    return f"{name}::{item.nodeid.split('::', 1)[-1]}"


def _test_id_from_nodeid(nodeid: str) -> str:
    """The test id of a node id that no report of the test's own process named
    (an xdist worker's crash, a test it never ran): the path under --rootdir,
    dotted."""
    path, _, rest = nodeid.partition("::")
    return f"{path.removesuffix('.py').replace('/', '.')}::{rest}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]) -> Any:
    # In the process that runs the test (on an xdist worker, the only one that
    # has the item): the report carries the test id to whichever process
    # records it, since pytest sends a report's every attribute to the
    # controller.
    report = (yield).get_result()
    report.numba_sim_id = _test_id(item)


class _Outcomes:
    """Each test's outcome, from the reports: in the one process of a serial
    run, or in an xdist run's controller (which gets every worker's reports,
    and writes the file alone)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.outcomes: dict[str, dict[str, Any]] = {}
        self.ids: dict[str, str] = {}  # node id -> test id, of every test reported
        self.collected: set[str] = set()  # node ids the xdist workers collected

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        # A crashed worker's report, which the controller makes, has no test
        # id: the test's earlier reports (its setup's) gave it, or else the node id.
        test_id = (
            getattr(report, "numba_sim_id", None)
            or self.ids.get(report.nodeid)
            or _test_id_from_nodeid(report.nodeid)
        )
        self.ids[report.nodeid] = test_id
        entry = self.outcomes.setdefault(
            test_id, {"outcome": "passed", "message": "", "seconds": 0.0}
        )
        entry["seconds"] = round(entry["seconds"] + report.duration, 3)
        # The first phase that does not pass decides: a failed setup is an
        # error, a failed call a failure, a failed teardown after a pass an
        # error, and a crash (xdist's report, of phase "???") a failure.
        if entry["outcome"] != "passed" or report.outcome == "passed":
            return
        if report.skipped:
            entry["outcome"] = "skipped"
            if isinstance(report.longrepr, (tuple, list)):
                entry["message"] = str(report.longrepr[2])[:400]
            return
        entry["outcome"] = "error" if report.when in ("setup", "teardown") else "failed"
        crash = getattr(report.longrepr, "reprcrash", None)
        entry["message"] = (crash.message if crash else str(report.longrepr))[:400]

    @pytest.hookimpl(optionalhook=True)  # pytest-xdist's; a serial run has no workers
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        self.collected.update(ids)

    def pytest_runtest_logfinish(self) -> None:
        # Written as the run goes, so a run cut short still tells what it saw.
        if len(self.outcomes) % 20 == 0:
            self._write()

    def pytest_sessionfinish(self) -> None:
        # A test a worker collected but no worker reported failed.  Under
        # --dist loadfile a crash puts the crashed test back with the rest of
        # its module, so each replacement worker crashes on it again, until
        # xdist stops replacing them (--max-worker-restart) and leaves the
        # tests still queued unrun; a run cut short leaves some too.
        for nodeid in sorted(self.collected - self.ids.keys()):
            self.outcomes[_test_id_from_nodeid(nodeid)] = {
                "outcome": "failed",
                "message": "never ran: no xdist worker reported it (a crash, or the run stopped)",
                "seconds": 0.0,
            }
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
    # Not on an xdist worker: the controller records every worker's reports.
    if path and not hasattr(config, "workerinput"):
        config.pluginmanager.register(_Outcomes(Path(path)), "numba-sim-outcomes")
