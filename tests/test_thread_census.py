"""Threads stay O(streams) + O(1) under load, on every backend (issue 10, item 7).

Each measurement runs ``tests/thread_census.py`` in a fresh process (the
sims' engine threads live as long as the process): 4,000 tasks at once over
32 or 256 streams, with device-side waits between streams and a staged
pageable copy on every stream.  The threads the backend added, at their
peak, must be at most 2 per stream (the stream's waiter, and on Level Zero
its staging worker or on the threaded mock its executor) plus 4 (the sim's
engines: compute, two copy engines, host functions).  A thread per sim
queue, as before the engines were modelled, would be 3 per stream on
levelzero-sim and fail.  The counts print in the run's summary.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from aruntime import BackendUnavailableError
from aruntime.testing import open_test_backend

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

ROOT = Path(__file__).resolve().parents[1]
BACKENDS = ["mock-async", "cuda-sim", "levelzero-sim"]

#: (backend, streams, loop) -> the census's JSON; printed at the end.
RESULTS: dict[tuple[str, int, str], dict[str, Any]] = {}


def _available(backend: str) -> None:
    required = {n.strip() for n in os.environ.get("ARUNTIME_REQUIRE_BACKENDS", "").split(",")}
    try:
        open_test_backend(backend).close()
    except BackendUnavailableError as exc:
        if backend in required:
            raise
        pytest.skip(f"{backend} cannot be opened here: {exc}")


def census(backend: str, streams: int, loop: str) -> dict[str, Any]:
    path = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    env = dict(os.environ, PYTHONPATH=path)
    run = subprocess.run(
        [sys.executable, "-m", "tests.thread_census", backend, str(streams), loop],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-4000:]
    result: dict[str, Any] = json.loads(run.stdout.strip().splitlines()[-1])
    RESULTS[(backend, streams, loop)] = result
    return result


# The event loop does not change what threads a backend makes; both loops run
# the 32-stream case, asyncio alone the 256-stream one to keep CI short.
@pytest.mark.parametrize(
    ("streams", "loop"), [(32, "asyncio"), (32, "trio"), (256, "asyncio")], ids=str
)
@pytest.mark.parametrize("backend", BACKENDS)
def test_threads_stay_o_streams(backend: str, streams: int, loop: str) -> None:
    _available(backend)
    result = census(backend, streams, loop)
    assert result["added"] <= 2 * streams + 4, result
    if result["engine_threads"] is not None:
        # The sim's engines: at most compute, two copy engines and host functions.
        assert 1 <= result["engine_threads"] <= 4, result


def write_table(reporter: Any) -> None:
    """Threads added per backend and stream count (from conftest's summary hook)."""
    if not RESULTS:
        return
    reporter.write_sep("-", "threads added by 4,000 concurrent tasks (peak); bound 2 x streams + 4")
    for (backend, streams, loop), r in sorted(RESULTS.items()):
        engines = "-" if r["engine_threads"] is None else r["engine_threads"]
        reporter.write_line(
            f"{backend:>14} {streams:>4} streams {loop:>8}: {r['added']:>4} added "
            f"(bound {2 * streams + 4}), sim engine threads {engines}"
        )
