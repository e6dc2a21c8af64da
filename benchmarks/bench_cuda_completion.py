"""Completion on cuda-sim: wake latency, event-loop CPU, and 10,000 concurrent awaits.

Printed side by side, on asyncio and on trio:

1. wake latency of ``await`` on a tiny op on an idle stream, against
   ``await anyio.to_thread.run_sync(completion.wait)`` (median of N runs);
   target at most 0.5x;
2. CPU time of the event-loop thread while it awaits a 200 ms op, as a share
   of one core; target at most 5%;
3. 10,000 tasks awaiting one op each over 64 streams: all complete, threads
   added (target at most 64 + 4), ops per second against the mock backend.

    PYTHONPATH=. python benchmarks/bench_cuda_completion.py [--runs 300]
"""

from __future__ import annotations

import argparse
import ctypes
import statistics
import threading
import time

import anyio


def _sim() -> ctypes.CDLL:
    from aruntime._native import native_library_path

    return ctypes.CDLL(str(native_library_path("libcuda.so.1")))


async def _wake_latency(runs: int) -> tuple[float, float]:
    import aruntime

    gpu = aruntime.open_backend("cuda-sim")
    stream = gpu.create_stream()
    dev = gpu.alloc(64)
    direct, threaded = [], []
    for _ in range(10):  # warm-up: waiter thread, marker events
        await gpu.memset_async(dev, 0, 64, stream=stream)
    for _ in range(runs):
        start = time.perf_counter()
        await gpu.memset_async(dev, 1, 64, stream=stream)
        direct.append(time.perf_counter() - start)
        start = time.perf_counter()
        completion = gpu.memset_async(dev, 2, 64, stream=stream)
        await anyio.to_thread.run_sync(completion.wait)
        threaded.append(time.perf_counter() - start)
    gpu.free(dev)
    stream.close()
    gpu.close()
    return statistics.median(direct) * 1e6, statistics.median(threaded) * 1e6


async def _loop_cpu(op_ms: float) -> float:
    import aruntime

    sim = _sim()
    gpu = aruntime.open_backend("cuda-sim")
    stream = gpu.create_stream()
    dev = gpu.alloc(64)
    await gpu.memset_async(dev, 0, 64, stream=stream)
    sim.arsim_set_timing(ctypes.c_double(0.0), ctypes.c_double(op_ms * 1000.0))
    try:
        wall0, cpu0 = time.perf_counter(), time.thread_time()
        await gpu.memset_async(dev, 1, 64, stream=stream)
        wall, cpu = time.perf_counter() - wall0, time.thread_time() - cpu0
    finally:
        sim.arsim_set_timing(ctypes.c_double(0.0), ctypes.c_double(0.0))
    gpu.free(dev)
    stream.close()
    gpu.close()
    return 100.0 * cpu / wall


async def _many(backend: str, tasks: int, streams: int) -> tuple[float, int, int]:
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
    assert done == tasks
    return tasks / elapsed, peak - threads_before, done


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--tasks", type=int, default=10_000)
    args = parser.parse_args(argv)
    for loop in ("asyncio", "trio"):
        direct, threaded = anyio.run(_wake_latency, args.runs, backend=loop)
        cpu = anyio.run(_loop_cpu, 200.0, backend=loop)
        sim_rate, added, done = anyio.run(_many, "cuda-sim", args.tasks, 64, backend=loop)
        mock_rate, _, _ = anyio.run(_many, "mock", args.tasks, 64, backend=loop)
        print(f"--- {loop} ---")
        print(
            f"1. wake latency, median us: await {direct:.1f}, to_thread(wait) {threaded:.1f}"
            f" -> {direct / threaded:.2f}x (target <= 0.5x)"
        )
        print(f"2. loop-thread CPU while awaiting a 200 ms op: {cpu:.2f}% of a core (target <= 5%)")
        print(
            f"3. {done} tasks over 64 streams: {sim_rate:,.0f} ops/s on cuda-sim vs "
            f"{mock_rate:,.0f} on mock ({sim_rate / mock_rate:.2f}x); threads added "
            f"{added} (target <= 68)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
