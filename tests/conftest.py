"""Every async test runs on asyncio (in debug mode) and on trio."""

from __future__ import annotations

import sys

import pytest

pytest_plugins = ["aruntime.testing", "tests.skip_summary", "pytester"]


@pytest.fixture(
    params=[
        pytest.param(("asyncio", {"debug": True}), id="asyncio"),
        pytest.param(("trio", {}), id="trio"),
    ]
)
def anyio_backend(request: pytest.FixtureRequest) -> tuple[str, dict[str, object]]:
    return request.param  # type: ignore[no-any-return]


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    # Tables that tests measured (the loop-stall probe's call x backend gaps).
    stall = sys.modules.get("tests.test_loop_stall")
    if stall is not None:
        stall.write_table(terminalreporter)
    census = sys.modules.get("tests.test_thread_census")
    if census is not None:
        census.write_table(terminalreporter)
