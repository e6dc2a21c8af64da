"""Every async test runs on asyncio (in debug mode) and on trio."""

from __future__ import annotations

import sys
from collections.abc import Iterator

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


@pytest.fixture(autouse=True)
def _sim_devices_recovered() -> Iterator[None]:
    """After each test, a sim device it lost is cleared, as a fresh process would be.

    A sticky fault outlives every backend (cuda.h: the process must be
    relaunched; Level Zero: the device must be reset), so without this one
    faulting test would fail every later test of the session on that sim.
    """
    yield
    from aruntime.backends._sim_faults import recover_lost_sim

    for backend in ("cuda-sim", "levelzero-sim"):
        recover_lost_sim(backend)


#: addopts' own -m (pyproject.toml): the one selection that -n auto spreads over workers.
DEFAULT_MARKEXPR = "not slow"


def auto_workers(markexpr: str) -> int | None:
    """How many workers ``-n auto`` starts for ``-m markexpr``: None, xdist's own count.

    The slow tests measure what another worker's load would change (the loop
    stall probe's 10 ms target, thread censuses, CPU-bound close races, the
    sanitizer builds' own threads), and print tables from
    pytest_terminal_summary below, which an xdist controller never collects
    the modules for.  So any selection but the default one, which leaves them
    out (``-m slow``, ``-m ray``, ``-m ""``), runs in this process: 0 workers.
    """
    return None if markexpr.strip() == DEFAULT_MARKEXPR else 0


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist's; the suite runs without it
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    return auto_workers(config.option.markexpr)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    # Tables that tests measured (the loop-stall probe's call x backend gaps).
    # Serial runs only: under xdist the test modules are imported by the workers.
    stall = sys.modules.get("tests.test_loop_stall")
    if stall is not None:
        stall.write_table(terminalreporter)
    census = sys.modules.get("tests.test_thread_census")
    if census is not None:
        census.write_table(terminalreporter)
