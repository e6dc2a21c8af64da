"""Blocking calls on an event loop's thread warn, naming the async call (issue 18, item 5)."""

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


async def test_asyncio_debug_mode_alone_turns_it_on(gpu: ar.Backend, anyio_backend: object) -> None:
    ptr = gpu.alloc(16)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        gpu.memset(ptr, 0, 16)
    on_asyncio = anyio_backend_name(anyio_backend) == "asyncio"
    assert len(_blocking_warnings(record)) == (1 if on_asyncio else 0), record
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


async def test_nothing_warns_when_off(gpu: ar.Backend, anyio_backend: object) -> None:
    if anyio_backend_name(anyio_backend) == "asyncio":
        pytest.skip("this suite runs asyncio in debug mode, which turns the check on")
    assert not _blocking.forced()
    ptr = gpu.alloc(16)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gpu.memset(ptr, 0, 16)
        gpu.memset_async(ptr, 0, 16).wait()
    gpu.free(ptr)


async def test_the_fixtures_turn_it_on(mock_backend: ar.Backend, anyio_backend: object) -> None:
    assert _blocking.forced()
    ptr = mock_backend.alloc(16)
    with pytest.warns(RuntimeWarning, match=r"memset blocks this thread.*memset_async"):
        mock_backend.memset(ptr, 0, 16)
    mock_backend.free(ptr)


_ENV_SCRIPT = """
import numpy as np, trio, aruntime as ar

async def main():
    with ar.open_backend("mock") as gpu:
        ptr = gpu.alloc(16)
        gpu.copy_h2d(np.ones(16, np.uint8), ptr)
        gpu.free(ptr)

trio.run(main)
"""


@pytest.mark.parametrize("debug", ["1", ""])
def test_aruntime_debug_turns_it_on_under_trio(debug: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ARUNTIME_DEBUG": debug}
    run = subprocess.run(
        [sys.executable, "-c", _ENV_SCRIPT], env=env, capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr
    warned = "<string>:7: RuntimeWarning: copy_h2d blocks this thread" in run.stderr
    assert warned == (debug == "1"), run.stderr
    assert "copy_h2d_async" in run.stderr or not warned
