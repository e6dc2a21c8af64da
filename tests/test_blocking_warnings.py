"""Blocking calls on an event loop's thread warn, naming the async call (issue 18, item 5).

They warn by default, on asyncio and trio, once per call site (issue 32, item 5).
"""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

import aruntime as ar
from aruntime import _blocking

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parent.parent

#: Each blocking call, and the async call its warning must name.
CALLS: dict[str, tuple[Callable[[ar.Backend, ar.DevicePtr], object], str]] = {
    "copy_h2d": (lambda g, p: g.copy_h2d(np.ones(16, np.uint8), p), "copy_h2d_async"),
    "copy_d2h": (lambda g, p: g.copy_d2h(p, np.empty(16, np.uint8)), "copy_d2h_async"),
    "copy_d2d": (lambda g, p: g.copy_d2d(p[:8], p[8:], 8), "copy_d2d_async"),
    "memset": (lambda g, p: g.memset(p, 1, 16), "memset_async"),
    "wait": (lambda g, p: g.memset_async(p, 1, 16).wait(), "'await' on the Completion"),
    "synchronize().wait": (lambda g, p: g.synchronize().wait(), "'await' on the Completion"),
}


@pytest.fixture
def gpu() -> Iterator[ar.Backend]:
    # Not the aruntime.testing fixtures: they turn the check on themselves.
    with ar.open_backend("mock", latency=0.0) as backend:
        yield backend


def _blocking_warnings(record: list[warnings.WarningMessage]) -> list[warnings.WarningMessage]:
    return [w for w in record if "blocks this thread" in str(w.message)]


@pytest.mark.parametrize("call", sorted(CALLS))
async def test_each_blocking_call_warns_at_the_callers_line(
    gpu: ar.Backend, call: str, anyio_backend: object
) -> None:
    block, instead = CALLS[call]
    ptr = gpu.alloc(16)
    # The asyncio runs are in debug mode (tests/conftest.py); trio has no debug
    # mode, so ARUNTIME_DEBUG=1 (or the fixtures) is its switch: force() is both.
    try:
        with _blocking.force(), warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            block(gpu, ptr)
    finally:
        gpu.free(ptr)
    ours = _blocking_warnings(record)
    assert len(ours) == 1, [str(w.message) for w in record]  # one per call, not one per layer
    assert ours[0].category is RuntimeWarning
    assert instead in str(ours[0].message)
    # The user's line: here, the lambda in CALLS that made the call.
    assert (ours[0].filename, ours[0].lineno) == (__file__, block.__code__.co_firstlineno)


async def test_it_warns_by_default_on_both_loops(gpu: ar.Backend, anyio_backend: object) -> None:
    ptr = gpu.alloc(16)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        gpu.memset(ptr, 0, 16)
        gpu.memset_async(ptr, 0, 16).wait()
    assert len(_blocking_warnings(record)) == 2, [str(w.message) for w in record]
    gpu.free(ptr)


def anyio_backend_name(anyio_backend: object) -> str:
    return anyio_backend[0] if isinstance(anyio_backend, tuple) else str(anyio_backend)


async def test_once_per_call_site_under_the_default_filters(
    gpu: ar.Backend, anyio_backend: object
) -> None:
    ptr = gpu.alloc(16)
    with _blocking.force(), warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("default")
        for _ in range(3):
            gpu.memset(ptr, 0, 16)  # one site, three calls
        gpu.memset(ptr, 0, 16)  # another site
    assert len(_blocking_warnings(record)) == 2, [str(w.message) for w in record]
    gpu.free(ptr)


def test_off_the_loop_nothing_warns(gpu: ar.Backend) -> None:
    ptr = gpu.alloc(16)
    with _blocking.force(), warnings.catch_warnings():
        warnings.simplefilter("error")
        for block, _ in CALLS.values():
            block(gpu, ptr)
    gpu.free(ptr)


async def test_a_program_that_blocks_on_purpose_filters_the_warning(
    gpu: ar.Backend, anyio_backend: object
) -> None:
    """What docs/testing.md tells a program that blocks on purpose to do."""
    ptr = gpu.alloc(16)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.filterwarnings("ignore", r".* blocks this thread", RuntimeWarning)
        gpu.memset(ptr, 0, 16)
        gpu.memset_async(ptr, 0, 16).wait()
    gpu.free(ptr)


async def test_off_the_loop_in_a_worker_thread_nothing_warns(
    gpu: ar.Backend, anyio_backend: object
) -> None:
    import anyio.to_thread

    ptr = gpu.alloc(16)
    completion = gpu.memset_async(ptr, 0, 16)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        await anyio.to_thread.run_sync(completion.wait)
        await anyio.to_thread.run_sync(gpu.memset, ptr, 0, 16)
    gpu.free(ptr)


async def test_the_fixtures_turn_it_on(mock_backend: ar.Backend, anyio_backend: object) -> None:
    assert _blocking.forced()
    ptr = mock_backend.alloc(16)
    with pytest.warns(RuntimeWarning, match=r"memset blocks this thread.*memset_async"):
        mock_backend.memset(ptr, 0, 16)
    mock_backend.free(ptr)


_ENV_SCRIPT = """
import asyncio, numpy as np, trio, aruntime as ar

async def main():
    with ar.open_backend("mock") as gpu:
        ptr = gpu.alloc(16)
        for _ in range(3): gpu.copy_h2d(np.ones(16, np.uint8), ptr)
        gpu.free(ptr)

RUN
"""


@pytest.mark.parametrize("debug", ["1", ""])
@pytest.mark.parametrize("entry", ["trio.run(main)", "asyncio.run(main())"])
def test_it_warns_by_default_once_per_call_site(debug: str, entry: str) -> None:
    """No debug mode, no ARUNTIME_DEBUG: a plain program hears of it, once per line."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ARUNTIME_DEBUG": debug}
    env.pop("PYTHONASYNCIODEBUG", None)
    env.pop("PYTHONWARNINGS", None)
    script = _ENV_SCRIPT.replace("RUN", entry)
    run = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr
    assert "<string>:7: RuntimeWarning: copy_h2d blocks this thread" in run.stderr, run.stderr
    assert "copy_h2d_async" in run.stderr
    assert run.stderr.count("blocks this thread") == 1, run.stderr
