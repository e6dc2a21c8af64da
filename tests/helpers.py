"""Shared test helpers: a gate kernel that holds a threaded-mock stream on demand,
the tests' own host kernels (tests/kernels) built for the software drivers, and
the loop-stall probe."""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

import aruntime as ar


class Gate:
    """A mock kernel that blocks its stream's worker until :meth:`open` is called.

    On the threaded mock this makes "the op is still running" deterministic,
    without relying on how long a sleep lasts.
    """

    _count = 0

    def __init__(self, backend: ar.Backend) -> None:
        Gate._count += 1
        self._event = threading.Event()
        self.entered = threading.Event()
        name = f"gate{Gate._count}"

        def hold(launch: Any) -> None:
            self.entered.set()
            self._event.wait(60)

        self.kernel = backend.kernel(backend.load_module(name, {"hold": hold}), "hold")
        self._backend = backend

    def launch(self, stream: ar.Stream | None = None) -> ar.Completion:
        return self._backend.launch(self.kernel, 1, 1, [], stream=stream)

    def open(self) -> None:
        self._event.set()


def thread_count() -> int:
    """Live threads, not counting trio's own worker cache (which comes and goes)."""
    return sum(1 for t in threading.enumerate() if not t.name.startswith("Trio thread"))


KERNELS_DIR = Path(__file__).resolve().parent / "kernels"
_ABI_DIR = KERNELS_DIR.parent.parent / "ffi" / "kernels"


def build_host_kernel(name: str, out_dir: Path) -> bytes:
    """``tests/kernels/<name>.c`` built as a host shared object: a module image for the sims."""
    cc = os.environ.get("CC", "cc")
    if shutil.which(cc) is None:
        pytest.fail(f"no C compiler ({cc}) to build the test kernel {name}")
    out = out_dir / f"{name}.so"
    source = KERNELS_DIR / f"{name}.c"
    subprocess.run(
        [cc, "-shared", "-fPIC", "-O2", f"-I{_ABI_DIR}", str(source), "-o", str(out)], check=True
    )
    return out.read_bytes()


async def longest_loop_gap_ms(op: Callable[[], Awaitable[object]]) -> float:
    """The loop-stall probe: the longest gap between 1 ms ticks while ``op`` is awaited."""
    gaps: list[float] = []
    done = anyio.Event()

    async def ticker() -> None:
        last = time.perf_counter()
        while not done.is_set():
            await anyio.sleep(0.001)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    async with anyio.create_task_group() as tg:
        tg.start_soon(ticker)
        await anyio.sleep(0.01)
        gaps.clear()
        await op()
        await anyio.sleep(0.003)  # a tick after the op, so its last stall is counted
        done.set()
    return max(gaps) * 1000.0
