"""No public call blocks the event loop while the device is busy (issue 10, item 4).

A probe task ticks every millisecond and records the longest gap between two
ticks.  A kernel that holds the compute engine for 300 ms (tests/kernels/
sleep_kernel.c on the sims, a sleeping Python kernel on the threaded mock)
keeps a stream of its own busy throughout, two always queued.  Each call is
measured on its own: the longest gap from just before the call until it
returned, and for an async op until its await ended.  (A sleeping kernel
rather than ``ARUNTIME_SIM_OP_LATENCY_US``: that knob makes every op cost
300 ms, each staging chunk of a 96 MiB copy included, for minutes per run.)

A call that waits for the device on the loop thread shows as a gap of about
300 ms.  The target is 10 ms; the assertion allows 100 ms (the machine may be
shared), and a cell over it is measured twice more before it counts, since a
real stall comes back every time and a scheduling hiccup does not.

A gap also holds the time the loop thread waited for a CPU, which on a busy
machine is most of it.  So the probe also records the loop thread's own CPU
time within each gap (``time.thread_time``, less the garbage collector's):
the longest stretch of work the loop did between two ticks, which other
processes cannot lengthen.  That one is held to the 10 ms target itself,
under the same re-measure rule, so a call that computes on the loop for
tens of milliseconds fails here even where the 100 ms bound lets it
through.  The table (call x backend: longest gap / most loop CPU within
one gap, in ms) prints in the run's summary.

Cells that stall today, until their fixes land, are listed in KNOWN_STALLS:
the test then ends as xfail naming them, and any other cell over the bound
fails it.
"""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import numpy as np
import pytest

import aruntime as ar
from aruntime.testing import open_test_backend

from .helpers import build_host_kernel

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.timeout(300)]

BUSY_US = 300_000
BOUND_MS = 100.0
TARGET_MS = 10.0
#: The bound on the loop thread's own CPU time within one gap.
CPU_BOUND_MS = TARGET_MS
BIG = 96 << 20
SMALL = 1 << 20

#: backend -> cells that still stall the loop, with the change that fixes them.
KNOWN_STALLS: dict[str, dict[str, str]] = {
    "mock": {},
    "cuda-sim": {},
    "levelzero-sim": {},
}


@dataclass(frozen=True)
class Gap:
    """One measurement, in ms: the longest tick gap, and the most loop CPU within one gap."""

    wall: float
    cpu: float

    def over(self) -> bool:
        return not (self.wall < BOUND_MS and self.cpu < CPU_BOUND_MS)

    def __str__(self) -> str:
        return f"{self.wall:.1f}/{self.cpu:.1f}"


#: (backend, async library) -> cell -> what was measured; printed at the end.
RESULTS: dict[tuple[str, str], dict[str, Gap]] = {}


def _sleep_us(launch: Any, us: Any) -> None:
    time.sleep(int(us) / 1e6)


class Probe:
    """A 1 ms ticker on the event loop: the longest gap between its ticks, and
    the most CPU time the loop thread spent within one gap (garbage collection
    excluded)."""

    def __init__(self) -> None:
        self.worst = 0.0
        self.worst_cpu = 0.0
        self.ticks = 0
        self._thread = threading.get_ident()
        self._gc_cpu = 0.0
        self._gc_start = 0.0

    def _on_gc(self, phase: str, info: dict[str, int]) -> None:
        if threading.get_ident() != self._thread:
            return
        if phase == "start":
            self._gc_start = time.thread_time()
        else:
            self._gc_cpu += time.thread_time() - self._gc_start

    async def run(self) -> None:
        self._thread = threading.get_ident()
        gc.callbacks.append(self._on_gc)
        try:
            last, last_cpu = time.perf_counter(), time.thread_time() - self._gc_cpu
            while True:
                await anyio.sleep(0.001)
                now, cpu = time.perf_counter(), time.thread_time() - self._gc_cpu
                self.worst = max(self.worst, now - last)
                self.worst_cpu = max(self.worst_cpu, cpu - last_cpu)
                self.ticks += 1
                last, last_cpu = now, cpu
        finally:
            gc.callbacks.remove(self._on_gc)

    async def _next_tick(self) -> None:
        seen = self.ticks
        while self.ticks == seen:
            await anyio.sleep(0.0005)

    @asynccontextmanager
    async def measure(self, out: list[Gap]) -> AsyncIterator[None]:
        """Append what was measured while the body ran."""
        await self._next_tick()
        self.worst = self.worst_cpu = 0.0
        yield
        # The gap that spans the end of the body is recorded at the next tick.
        await self._next_tick()
        await self._next_tick()
        out.append(Gap(self.worst * 1000, self.worst_cpu * 1000))


@dataclass
class Env:
    gpu: ar.Backend
    probe: Probe
    busy_stream: ar.Stream
    stream: ar.Stream
    busy_kernel: ar.Kernel
    busy_ptr: ar.DevicePtr
    image: Any
    busy: list[ar.Completion] = field(default_factory=list)
    modules: int = 0

    def keep_busy(self) -> None:
        """At least two 300 ms kernels queued on the busy stream: the device never idles."""
        self.busy = [c for c in self.busy if not c.done()]
        while len(self.busy) < 2:
            args = [np.uint64(BUSY_US)]
            self.busy.append(self.gpu.launch(self.busy_kernel, 1, 1, args, stream=self.busy_stream))


Cell = Callable[[Env, list[Gap]], Awaitable[None]]


async def _alloc(env: Env, out: list[Gap]) -> None:
    async with env.probe.measure(out):
        ptr = env.gpu.alloc(SMALL)
    env.gpu.free(ptr)


async def _free(env: Env, out: list[Gap]) -> None:
    ptr = env.gpu.alloc(SMALL)
    env.gpu.memset_async(ptr, 1, SMALL, stream=env.stream)  # queued work that uses it
    async with env.probe.measure(out):
        env.gpu.free(ptr)


async def _alloc_host_pinned(env: Env, out: list[Gap]) -> None:
    async with env.probe.measure(out):
        buf = env.gpu.alloc_host_pinned(SMALL)
    env.gpu.free_host_pinned(buf)


async def _free_host_pinned(env: Env, out: list[Gap]) -> None:
    buf = env.gpu.alloc_host_pinned(SMALL)
    async with env.probe.measure(out):
        env.gpu.free_host_pinned(buf)


async def _alloc_async(env: Env, out: list[Gap]) -> None:
    async with env.probe.measure(out):
        ptr = env.gpu.alloc_async(SMALL, stream=env.stream)
    env.gpu.free_async(ptr, stream=env.stream)


async def _free_async(env: Env, out: list[Gap]) -> None:
    ptr = env.gpu.alloc_async(SMALL, stream=env.stream)
    env.gpu.memset_async(ptr, 1, SMALL, stream=env.stream)
    async with env.probe.measure(out):
        env.gpu.free_async(ptr, stream=env.stream)


async def _create_stream(env: Env, out: list[Gap]) -> None:
    async with env.probe.measure(out):
        stream = env.gpu.create_stream()
    stream.close()


async def _close_stream(env: Env, out: list[Gap]) -> None:
    stream = env.gpu.create_stream()
    env.gpu.memset_async(env.busy_ptr, 0, 4, stream=stream)  # still queued at close
    async with env.probe.measure(out):
        stream.close()


async def _create_event(env: Env, out: list[Gap]) -> None:
    async with env.probe.measure(out):
        event = env.gpu.create_event()
    env.gpu.destroy_event(event)


async def _close_event(env: Env, out: list[Gap]) -> None:
    event = env.gpu.create_event()
    env.gpu.record_event(event, env.busy_stream)  # recorded behind the busy kernels
    async with env.probe.measure(out):
        env.gpu.destroy_event(event)


async def _load_module(env: Env, out: list[Gap]) -> None:
    env.modules += 1
    async with env.probe.measure(out):
        env.gpu.load_module(f"stall_probe_{env.modules}", env.image)


async def _graph(env: Env, out: list[Gap], measured: str) -> None:
    ptr = env.gpu.alloc(SMALL)
    gaps: dict[str, list[Gap]] = {"capture": [], "launch_graph": [], "destroy_graph": []}
    async with env.probe.measure(gaps["capture"]):
        with env.gpu.capture(env.stream) as graph:
            env.gpu.memset_async(ptr, 2, SMALL, stream=env.stream)
    async with env.probe.measure(gaps["launch_graph"]):
        await env.gpu.launch_graph(graph, env.stream)
    env.gpu.launch_graph(graph, env.stream)  # a replay still queued at destroy
    async with env.probe.measure(gaps["destroy_graph"]):
        env.gpu.destroy_graph(graph)
    env.gpu.free(ptr)
    out.extend(gaps[measured])


async def _copy_h2d(env: Env, out: list[Gap]) -> None:
    host = np.full(BIG, 3, dtype=np.uint8)
    dptr = env.gpu.alloc(BIG)
    async with env.probe.measure(out):
        await env.gpu.copy_h2d_async(host, dptr, stream=env.stream)
    env.gpu.free(dptr)


async def _copy_d2h(env: Env, out: list[Gap]) -> None:
    host = np.zeros(BIG, dtype=np.uint8)
    dptr = env.gpu.alloc(BIG)
    env.gpu.memset_async(dptr, 4, BIG, stream=env.stream)
    async with env.probe.measure(out):
        await env.gpu.copy_d2h_async(dptr, host, stream=env.stream)
    assert host[0] == 4 and host[-1] == 4
    env.gpu.free(dptr)


CELLS: dict[str, Cell] = {
    "alloc": _alloc,
    "free": _free,
    "alloc_host_pinned": _alloc_host_pinned,
    "free_host_pinned": _free_host_pinned,
    "alloc_async": _alloc_async,
    "free_async": _free_async,
    "create_stream": _create_stream,
    "Stream.close": _close_stream,
    "create_event": _create_event,
    "destroy_event": _close_event,
    "load_module": _load_module,
    "capture": lambda env, out: _graph(env, out, "capture"),
    "launch_graph": lambda env, out: _graph(env, out, "launch_graph"),
    "destroy_graph": lambda env, out: _graph(env, out, "destroy_graph"),
    "copy_h2d_async 96 MiB": _copy_h2d,
    "copy_d2h_async 96 MiB": _copy_d2h,
}


@pytest.fixture(scope="module")
def sleep_kernel(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    return build_host_kernel("sleep_kernel", tmp_path_factory.mktemp("sleepkernel"))


def _open(name: str) -> ar.Backend:
    try:
        return open_test_backend("mock-async" if name == "mock" else name)
    except ar.BackendUnavailableError as exc:
        pytest.skip(f"{name} unavailable: {exc}")


async def _measure_all(gpu: ar.Backend, image: Any, known: dict[str, str]) -> dict[str, Gap]:
    probe = Probe()
    kernel = gpu.kernel(gpu.load_module("sleep", image), "sleep_us")
    busy_ptr = gpu.alloc(64)
    env = Env(
        gpu,
        probe,
        gpu.create_stream(),
        gpu.create_stream(),
        kernel,
        busy_ptr,
        gpu.driver.builtin_module_image("vector_ops"),
    )
    gaps: dict[str, Gap] = {}
    async with anyio.create_task_group() as tg:
        tg.start_soon(probe.run)
        for name, cell in CELLS.items():
            attempts = 1 if name in known else 3
            seen: list[Gap] = []
            for _ in range(attempts):
                env.keep_busy()
                await cell(env, seen)
                if not seen[-1].over():
                    break
            gaps[name] = Gap(min(g.wall for g in seen), min(g.cpu for g in seen))
        tg.cancel_scope.cancel()
    await ar.gather(*env.busy)
    await gpu.synchronize(env.stream)
    env.stream.close()
    env.busy_stream.close()
    gpu.free(busy_ptr)
    return gaps


def write_table(reporter: Any) -> None:
    """Print the gaps measured in this run, call x backend (from conftest's summary hook)."""
    if not RESULTS:
        return
    columns = sorted(RESULTS)
    width = max(len(c) for c in CELLS)
    reporter.write_sep(
        "-",
        "loop stalls beside a 300 ms kernel: longest tick gap / most loop CPU in one gap "
        f"(ms); target {TARGET_MS:g}",
    )
    reporter.write_line(" ".join([" " * width, *(f"{f'{b} {lib}':>20}" for b, lib in columns)]))
    for cell in CELLS:
        row = []
        for column in columns:
            gap = RESULTS[column].get(cell)
            text = "-" if gap is None else str(gap)
            if cell in KNOWN_STALLS.get(column[0], {}):
                text += " (xfail)"
            row.append(f"{text:>20}")
        reporter.write_line(" ".join([f"{cell:<{width}}", *row]))


@pytest.mark.parametrize("name", ["mock", "cuda-sim", "levelzero-sim"])
async def test_no_call_blocks_the_loop(
    name: str, anyio_backend_name: str, sleep_kernel: bytes
) -> None:
    known = KNOWN_STALLS[name]
    gpu = _open(name)
    try:
        image = {"sleep_us": _sleep_us} if name == "mock" else sleep_kernel
        gaps = await _measure_all(gpu, image, known)
    finally:
        gpu.close()
    RESULTS[(name, anyio_backend_name)] = gaps
    stalls = {cell: str(gap) for cell, gap in gaps.items() if gap.over() and cell not in known}
    assert not stalls, (
        f"{name}: these calls blocked the event loop (longest tick gap / most loop CPU in "
        f"one gap, ms; bounds {BOUND_MS:g} / {CPU_BOUND_MS:g}): {stalls}"
    )
    still = sorted(cell for cell in known if gaps[cell].over())
    if still:
        pytest.xfail(
            f"{name}: known stalls until their fixes land: "
            + "; ".join(f"{cell} ({gaps[cell]} ms: {known[cell]})" for cell in still)
        )
