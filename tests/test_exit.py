"""Interpreter exit with work in flight: exit code 0, no hang, no traceback.

Each scenario is a small program run in a subprocess.  They all start at once
(module fixture) so the suite pays for about one interpreter start-up, not ten.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# On one xdist worker: split over two, each would start every scenario (the
# module fixture runs once a worker), paying twice for ten interpreters.
pytestmark = pytest.mark.xdist_group("test_exit")

PRELUDE = """
import asyncio, sys, threading, time
import numpy as np
import aruntime as ar

def hold_forever(gpu):
    # A kernel that never finishes: the device is hung.
    never = threading.Event()
    k = gpu.kernel(gpu.load_module("hang", {"hang": lambda launch: never.wait()}), "hang")
    return gpu.launch(k, 1, 1, [])
"""

SCENARIOS: dict[str, str] = {
    # Many ops queued on several streams, nothing awaited, nothing closed.
    "ops_in_flight": """
        gpu = ar.open_backend("mock", latency=0.05)
        streams = [gpu.create_stream() for _ in range(3)]
        ptr = gpu.alloc(1 << 16)
        for i in range(20):
            gpu.memset_async(ptr, i, 1 << 16, stream=streams[i % 3])
            gpu.copy_d2h_async(ptr, np.empty(1 << 16, np.uint8), stream=streams[i % 3])
    """,
    # The device never finishes: exit must not wait for it.
    "hung_device": """
        gpu = ar.open_backend("mock", latency=0.0)
        hold_forever(gpu)
        gpu.memset_async(gpu.alloc(8), 0, 8)
        time.sleep(0.05)
    """,
    # sys.exit inside asyncio.run while another task awaits a pending op.
    "asyncio_sys_exit": """
        gpu = ar.open_backend("mock", latency=0.0)
        hold_forever(gpu)
        async def waiter():
            await gpu.synchronize()
        async def main():
            asyncio.ensure_future(waiter())
            await asyncio.sleep(0.05)
            sys.exit(0)
        asyncio.run(main())
    """,
    # A trio run cancelled while a task awaits a pending op, then sys.exit.
    "trio_cancelled_then_exit": """
        import trio
        gpu = ar.open_backend("mock", latency=0.0)
        hold_forever(gpu)
        async def waiter():
            await gpu.synchronize()
        async def main():
            async with trio.open_nursery() as n:
                n.start_soon(waiter)
                await trio.sleep(0.05)
                n.cancel_scope.cancel()
        trio.run(main)
        sys.exit(0)
    """,
    # The main thread ends while an asyncio loop in a daemon thread awaits.
    "asyncio_thread_awaiting": """
        gpu = ar.open_backend("mock", latency=0.0)
        hold_forever(gpu)
        started = threading.Event()
        async def main():
            started.set()
            await gpu.synchronize()
        threading.Thread(target=asyncio.run, args=(main(),), daemon=True).start()
        started.wait(10)
        time.sleep(0.05)
    """,
    # The same with trio, whose run keeps a token the waiter would wake.
    "trio_thread_awaiting": """
        import trio
        gpu = ar.open_backend("mock", latency=0.01)
        s = gpu.create_stream()
        ptr = gpu.alloc(8)
        for _ in range(50):
            gpu.memset_async(ptr, 1, 8, stream=s)
        async def main():
            while True:
                await gpu.memset_async(ptr, 2, 8, stream=s)
        threading.Thread(target=trio.run, args=(main,), daemon=True).start()
        time.sleep(0.1)
    """,
    # An op failed and nobody awaited it; the backend was never closed.
    "unawaited_failure": """
        gpu = ar.open_backend("mock", latency=0.01)
        ptr = gpu.alloc(8)
        gpu.driver.inject_fault("memset", ar.DriverError)
        gpu.memset_async(ptr, 0, 8)
        gpu.memset_async(ptr, 1, 8)
    """,
    # An asyncio loop closed with a task still parked on an op.
    "closed_loop": """
        gpu = ar.open_backend("mock", latency=0.2)
        c = gpu.memset_async(gpu.alloc(8), 0, 8)
        async def wait():
            await c
        loop = asyncio.new_event_loop()
        task = loop.create_task(wait())
        loop.run_until_complete(asyncio.sleep(0.01))
        loop.close()
    """,
    # Streams closed mid-flight, handles dropped, backend left open.
    "closed_streams_dropped_handles": """
        gpu = ar.open_backend("mock", latency=0.02)
        ptr = gpu.alloc(64)
        for _ in range(5):
            s = gpu.create_stream()
            gpu.memset_async(ptr, 1, 64, stream=s)
            s.close()
        e = gpu.create_event()
        e.record()
        with gpu.capture(gpu.create_stream()) as g:
            pass
    """,
    # A clean close with work queued, then exit: close waits, exit is quiet.
    "clean_close": """
        with ar.open_backend("mock", latency=0.005) as gpu:
            ptr = gpu.alloc(64)
            for _ in range(10):
                gpu.memset_async(ptr, 1, 64)
        assert gpu.closed and threading.active_count() == 1, threading.enumerate()
    """,
}


@pytest.fixture(scope="module")
def results() -> Iterator[dict[str, subprocess.CompletedProcess[str]]]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONDEVMODE": "1"}
    procs = {}
    for name, body in SCENARIOS.items():
        code = PRELUDE + textwrap.dedent(body)
        procs[name] = subprocess.Popen(
            [sys.executable, "-c", code],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    out: dict[str, subprocess.CompletedProcess[str]] = {}
    try:
        for name, proc in procs.items():
            try:
                stdout, stderr = proc.communicate(timeout=90)
            except subprocess.TimeoutExpired:
                proc.kill()
                stdout, stderr = proc.communicate()
                stderr += "\n<<HUNG: killed after 90 s>>"
            out[name] = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
        yield out
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_exit_is_clean(scenario: str, results: dict[str, subprocess.CompletedProcess[str]]) -> None:
    run = results[scenario]
    assert "HUNG" not in run.stderr, run.stderr
    assert run.returncode == 0, run.stderr
    assert "Traceback" not in run.stderr, run.stderr
    assert "Exception ignored" not in run.stderr, run.stderr
    assert "Fatal Python error" not in run.stderr, run.stderr
