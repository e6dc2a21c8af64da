"""The server pattern under CPU contention: a burst of requests, each doing
alloc -> upload -> kernel -> download -> free.

Shared by ``bench_contention.py`` and its short version in the tests
(``tests/test_contention_soak.py``).  A request allocates device memory,
uploads a float32 array, runs the builtin ``scale_f32`` on it, downloads
the result and frees the memory, awaiting each step, as a request handler
does.  A round starts a bounded number of requests at once (the backlog a
burst of traffic leaves) over a few shared streams, at most ``inflight`` of
them holding device memory at a time, and waits for all of them; every
answer is checked.

What is reported about memory is taken once the backlog has drained and
the garbage collector has run: the process's resident set, the Python
objects the collector tracks, and what the backend still holds.

Busy neighbours are separate processes spinning ``while True: pass``;
:func:`busy_neighbours` starts them and always ends them, even if the
process that started them dies first (they get SIGKILL when it does).
Nothing here asserts anything about time.
"""

from __future__ import annotations

import contextlib
import gc
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass

import anyio
import numpy as np

import aruntime as ar

__all__ = ["Round", "busy_neighbours", "objects", "rss_mb", "soak"]

#: float32 values a request uploads (4 KiB).
VALUES = 1024
BLOCK = 256


def rss_mb() -> float:
    """This process's resident set, MiB."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def objects() -> int:
    """The Python objects the garbage collector tracks, after a full collection."""
    gc.collect()
    return len(gc.get_objects())


@dataclass(frozen=True)
class Round:
    """One round of the soak: how fast it served, and what it left behind."""

    requests: int
    seconds: float
    live_allocations: int  # the backend's, after the drain
    pending_ops: int

    @property
    def per_s(self) -> float:
        return self.requests / self.seconds


async def soak(gpu: ar.Backend, requests: int, inflight: int = 64, streams: int = 8) -> Round:
    """Serve ``requests`` requests started at once, ``inflight`` at a time, on ``gpu``."""
    if requests < 1 or inflight < 1 or streams < 1:
        raise ValueError(
            f"soak: requests, inflight and streams must be >= 1, got "
            f"{requests}, {inflight}, {streams}"
        )
    kernel = gpu.kernel(gpu.builtin_module("vector_ops"), "scale_f32")
    lanes = [gpu.create_stream() for _ in range(streams)]
    limit = anyio.Semaphore(inflight)
    values = np.arange(VALUES, dtype=np.float32)
    expected = values * 2.0
    grid = (VALUES + BLOCK - 1) // BLOCK
    args_head = (np.uint32(VALUES), np.float32(2.0))
    wrong = 0

    async def request(i: int) -> None:
        nonlocal wrong
        stream = lanes[i % streams]
        async with limit:
            ptr = gpu.alloc(values.nbytes)
            try:
                await gpu.copy_h2d_async(values, ptr, stream=stream)
                await gpu.launch(kernel, grid, BLOCK, [*args_head, ptr], stream=stream)
                out = np.empty_like(values)
                await gpu.copy_d2h_async(ptr, out, stream=stream)
            finally:
                gpu.free(ptr)
        if not np.array_equal(out, expected):
            wrong += 1

    try:
        start = time.perf_counter()
        async with anyio.create_task_group() as tg:
            for i in range(requests):
                tg.start_soon(request, i)
        seconds = time.perf_counter() - start
    finally:
        for lane in lanes:
            lane.close()
    if wrong:
        raise AssertionError(f"soak: {wrong} of {requests} answers were wrong")
    stats = gpu.statistics()
    return Round(requests, seconds, stats.live_allocations, stats.pending_ops)


#: A busy neighbour: it asks for SIGKILL when its parent ends (and ends at
#: once if that has happened already), then spins.
_SPIN = (
    "import ctypes, os, signal, sys\n"
    "ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG\n"
    "if os.getppid() != {parent}: sys.exit()\n"
    "while True: pass\n"
)


@contextlib.contextmanager
def busy_neighbours(count: int) -> Iterator[list[int]]:
    """``count`` processes spinning ``while True: pass`` for the block; their pids."""
    procs: list[subprocess.Popen[bytes]] = []
    try:
        for _ in range(count):
            procs.append(
                subprocess.Popen(
                    [sys.executable, "-c", _SPIN.format(parent=os.getpid())],
                    stdin=subprocess.DEVNULL,
                )
            )
        time.sleep(0.1)  # let them take their cores
        yield [p.pid for p in procs]
    finally:
        for p in procs:
            p.kill()
        for p in procs:
            p.wait()
