"""Shared measurements for the benchmarks on the software drivers (cuda-sim, levelzero-sim).

Each function opens its own backend, measures one thing and closes it again,
so that the scripts (bench_cuda_*.py, bench_backends.py) differ only in what
they run and how they print it.  Nothing here asserts anything about time.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import statistics
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass

import anyio
import numpy as np

#: The test-hook library of each software driver, and its timing hook.
_TIMING_HOOKS = {
    "cuda-sim": ("libcuda.so.1", "arsim_set_timing"),
    "levelzero-sim": ("libze_aruntime_sim.so", "arze_sim_set_timing"),
}


def sim_library(backend: str) -> ctypes.CDLL:
    """The software driver behind ``backend``: the same instance the backend uses."""
    from aruntime._native import native_library_path

    filename = _TIMING_HOOKS[backend][0]
    return ctypes.CDLL(str(native_library_path(filename).resolve()))


def set_timing(backend: str, copy_gbps: float, op_latency_us: float) -> None:
    """Set the sim's timing model (<= 0 turns a term off)."""
    hook = getattr(sim_library(backend), _TIMING_HOOKS[backend][1])
    hook(ctypes.c_double(copy_gbps), ctypes.c_double(op_latency_us))


@contextlib.contextmanager
def timing(backend: str, copy_gbps: float, op_latency_us: float) -> Iterator[None]:
    set_timing(backend, copy_gbps, op_latency_us)
    try:
        yield
    finally:
        set_timing(backend, 0.0, 0.0)


# ----------------------------------------------------------------- 1. wake latency
async def wake_latency(
    backend: str, runs: int, gap_s: float = 0.0, block: int = 10
) -> tuple[float, float]:
    """Median microseconds: (``await op``, ``await to_thread.run_sync(op.wait)``).

    A tiny memset on an idle stream, the two ways in alternating blocks of
    ``block`` ops, so that load from elsewhere on the machine hits both
    alike.  ``gap_s``: sleep that long before each timed op, so that every
    thread involved (the sim's queue thread, the waiter, the worker thread)
    has gone back to sleep.  With 0 the ops run back to back: each op of a
    block right after the one before it, the way a loop of awaits runs.  (One
    op of each kind in turn made every await follow a ``to_thread`` round
    trip, with the loop's thread just back from blocking in its selector:
    that first await after a sleep costs twice what the next ones do, on the
    mock as on the sims, and the 1 ms rows already measure it.)
    """
    import aruntime

    gpu = aruntime.open_backend(backend)
    stream = gpu.create_stream()
    dev = gpu.alloc(64)
    direct: list[float] = []
    threaded: list[float] = []
    for _ in range(10):  # warm-up: waiter thread, marker events, worker thread
        await gpu.memset_async(dev, 0, 64, stream=stream)
        await anyio.to_thread.run_sync(gpu.memset_async(dev, 0, 64, stream=stream).wait)
    while len(direct) < runs:
        count = min(block, runs - len(direct))
        for _ in range(count):
            if gap_s:
                await anyio.sleep(gap_s)
            start = time.perf_counter()
            await gpu.memset_async(dev, 1, 64, stream=stream)
            direct.append(time.perf_counter() - start)
        for _ in range(count):
            if gap_s:
                await anyio.sleep(gap_s)
            start = time.perf_counter()
            completion = gpu.memset_async(dev, 2, 64, stream=stream)
            await anyio.to_thread.run_sync(completion.wait)
            threaded.append(time.perf_counter() - start)
    gpu.free(dev)
    stream.close()
    gpu.close()
    return statistics.median(direct) * 1e6, statistics.median(threaded) * 1e6


def handoff_floor_us(backend: str, runs: int, gap_s: float = 0.0) -> float:
    """The physical floor of a wake-up: one round trip between two threads, median us.

    Measured by the sim itself (``arsim_handoff_ns``) over the primitive it
    wakes its engine threads and the host's waiters with (a mutex and a
    condition variable each way), the second thread at the engine threads'
    nice value; ``gap_s`` between rounds as in :func:`wake_latency`.

    The lowest median of three batches: a floor is the least the machine
    needs, and on a shared 2-core machine one batch of 20 rounds now and then
    lands beside a neighbour's burst and reads 70 us instead of 4, which
    would make any await look "within 2x" of it.
    """
    hook = sim_library(backend).arsim_handoff_ns
    hook.restype = ctypes.c_uint64
    hook.argtypes = [ctypes.c_int, ctypes.c_int]
    return min(float(hook(runs, int(gap_s * 1e6))) for _ in range(3)) / 1e3


def set_inline_bytes(backend: str, nbytes: int) -> None:
    """The largest copy or memset the sim runs on the submitting thread (< 0: its default)."""
    hook = sim_library(backend).arsim_set_inline_bytes
    hook.argtypes = [ctypes.c_int64]
    hook(nbytes)


# ------------------------------------------------------------------ 2. loop CPU
@dataclass
class CpuShare:
    """CPU time while awaiting one long op, as % of one core over its wall time."""

    loop: float  # the event-loop thread
    waiter: float | None  # the stream's waiter thread (None where /proc is missing)
    process: float  # every thread of the process, the sim's queue threads included
    wall_ms: float


def _thread_cpu_s(native_id: int) -> float | None:
    try:
        with open(f"/proc/self/task/{native_id}/schedstat") as f:
            return int(f.read().split()[0]) * 1e-9
    except (OSError, ValueError, IndexError):
        return None


def _waiter_ids() -> list[int]:
    return [
        t.native_id
        for t in threading.enumerate()
        if t.name.startswith("aruntime-waiter-") and t.native_id is not None
    ]


async def loop_cpu(backend: str, op_ms: float) -> CpuShare:
    import aruntime

    gpu = aruntime.open_backend(backend)
    stream = gpu.create_stream()
    dev = gpu.alloc(64)
    with timing(backend, 0.0, 1000.0):  # pending when awaited: starts the waiter thread
        await gpu.memset_async(dev, 0, 64, stream=stream)
    waiters = _waiter_ids()
    with timing(backend, 0.0, op_ms * 1000.0):
        before = [_thread_cpu_s(t) for t in waiters]
        wall0, cpu0, proc0 = time.perf_counter(), time.thread_time(), time.process_time()
        await gpu.memset_async(dev, 1, 64, stream=stream)
        wall = time.perf_counter() - wall0
        cpu, proc = time.thread_time() - cpu0, time.process_time() - proc0
        after = [_thread_cpu_s(t) for t in waiters]
    waiter: float | None = None
    if waiters and None not in before and None not in after:
        waiter = sum(
            a - b for a, b in zip(after, before, strict=True) if a is not None and b is not None
        )
    gpu.free(dev)
    stream.close()
    gpu.close()
    share = 100.0 / wall
    return CpuShare(
        loop=cpu * share,
        waiter=None if waiter is None else waiter * share,
        process=proc * share,
        wall_ms=wall * 1e3,
    )


# --------------------------------------------------------- 3. many concurrent awaits
@dataclass
class Many:
    ops_per_s: float
    threads_added: int
    done: int


async def many(backend: str, tasks: int, streams: int) -> Many:
    """``tasks`` tasks awaiting one op each, spread over ``streams`` streams."""
    import aruntime

    gpu = aruntime.open_backend(backend)
    ss = [gpu.create_stream() for _ in range(streams)]
    dev = gpu.alloc(64 * streams)
    threads_before = threading.active_count()
    peak = threads_before
    done = 0

    async def one(i: int) -> None:
        nonlocal done, peak
        await gpu.memset_async(dev.offset(64 * (i % streams)), i & 0xFF, 64, stream=ss[i % streams])
        done += 1
        if i % 97 == 0:
            peak = max(peak, threading.active_count())

    start = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for i in range(tasks):
            tg.start_soon(one, i)
    elapsed = time.perf_counter() - start
    peak = max(peak, threading.active_count())
    gpu.free(dev)
    for s in ss:
        s.close()
    gpu.close()
    return Many(tasks / elapsed, peak - threads_before, done)


# ------------------------------------------------------------------- 5. pipeline
async def pipeline_ms(backend: str, chunks: int, stage_ms: float, streams_used: int) -> float:
    """Milliseconds for ``chunks`` H2D -> scale kernel -> D2H chunks over ``streams_used`` streams.

    The timing model gives every op a fixed ``stage_ms`` latency (copy
    bandwidth unlimited), so each stage of a chunk takes about that long.
    The output is checked.
    """
    import aruntime

    gpu = aruntime.open_backend(backend)
    n = 1 << 14  # floats per chunk
    streams = [gpu.create_stream() for _ in range(streams_used)]
    scale = gpu.kernel(gpu.builtin_module(), "scale_f32")
    host_in = [gpu.alloc_host_pinned(4 * n) for _ in range(chunks)]
    host_out = [gpu.alloc_host_pinned(4 * n) for _ in range(chunks)]
    for i, buf in enumerate(host_in):
        buf.view(np.float32)[:] = i
    dev = [gpu.alloc(4 * n) for _ in range(streams_used)]

    async def run() -> float:
        start = time.perf_counter()
        last = []
        for i in range(chunks):
            k = i % streams_used
            s, d = streams[k], dev[k]
            gpu.copy_h2d_async(host_in[i], d, stream=s)
            gpu.launch(
                scale,
                ((n + 255) // 256, 1, 1),
                (256, 1, 1),
                [np.uint32(n), np.float32(2.0), d],
                stream=s,
            )
            last.append(gpu.copy_d2h_async(d, host_out[i], stream=s))
        for completion in last:
            await completion
        return time.perf_counter() - start

    await run()  # warm-up, untimed: waiter threads, marker events, kernel lookup
    for buf in host_out:
        buf[:] = 0  # so the timed run's output is checked afresh
    with timing(backend, 0.0, stage_ms * 1000.0):
        elapsed = await run()
    for i, buf in enumerate(host_out):
        assert (buf.view(np.float32) == 2.0 * i).all()
    for d in dev:
        gpu.free(d)
    for buf in (*host_in, *host_out):
        gpu.free_host_pinned(buf)
    for s in streams:
        s.close()
    gpu.close()
    return elapsed * 1e3


def ideal_overlap_ms(chunks: int, stage_ms: float) -> float:
    """Three stages on three engines (H2D copy, compute, D2H copy): (chunks + 2) stages."""
    return (chunks + 2) * stage_ms


# ------------------------------------------------------------ 6. longest loop stall
async def longest_stall(work: Callable[[], Awaitable[object]]) -> tuple[float, float]:
    """(longest gap between a ticker task's wake-ups, total time) in ms while ``work`` runs."""
    done = False
    longest = 0.0

    async def ticker() -> None:
        nonlocal longest
        last = time.perf_counter()
        while not done:
            await asyncio.sleep(0)
            now = time.perf_counter()
            longest = max(longest, now - last)
            last = now

    task = asyncio.ensure_future(ticker())
    await asyncio.sleep(0)
    start = time.perf_counter()
    await work()
    total = time.perf_counter() - start
    done = True
    await task
    return longest * 1e3, total * 1e3


async def pageable_stall(mib: int, gbps: float, *, naive: bool = False) -> tuple[float, float]:
    """(longest loop stall, copy time) in ms for a ``mib`` MiB pageable copy_h2d_async on cuda-sim.

    ``naive``: call ``cuMemcpyHtoDAsync_v2`` straight from pageable memory
    instead, which the driver stages on the calling thread.  Asyncio only.
    """
    import aruntime

    gpu = aruntime.open_backend("cuda-sim")
    n = mib << 20
    host = np.ones(n, dtype=np.uint8)
    dev = gpu.alloc(n)
    stream = gpu.create_stream()
    driver = gpu._driver  # type: ignore[attr-defined]
    lib, ffi = driver._lib, driver._ffi

    async def aruntime_copy() -> object:
        return await gpu.copy_h2d_async(host, dev, stream=stream)

    async def naive_copy() -> object:
        code = lib.cuMemcpyHtoDAsync_v2(int(dev), ffi.from_buffer(host), n, stream.handle.handle)
        assert code == 0, code
        return await gpu.synchronize(stream)

    work = naive_copy if naive else aruntime_copy
    try:
        with timing("cuda-sim", gbps, 0.0):
            await work()  # warm-up: staging buffers, waiter thread
            return await longest_stall(work)
    finally:
        gpu.free(dev)
        stream.close()
        gpu.close()
