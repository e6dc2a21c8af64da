"""The event loop's longest stall during a 64 MiB pageable ``copy_h2d_async`` on cuda-sim.

A ticker task records the longest gap between its wake-ups while the copy is
enqueued and awaited.  Compared side by side:

* aruntime's policy (large pageable copies staged through pinned memory by
  a native host function, so the enqueue returns at once);
* the naive binding: ``cuMemcpyHtoDAsync_v2`` straight from pageable memory,
  which the driver (NVIDIA's, and the sim, which copies its behaviour) stages
  on the calling thread, blocking the loop for about the copy's length.

The sim's copy engine is set to ``--gbps`` so that the copy takes real time.

    PYTHONPATH=. python benchmarks/bench_cuda_pageable.py [--gbps 4] [--mib 64]
"""

from __future__ import annotations

import argparse
import asyncio
import ctypes
import time
from collections.abc import Awaitable, Callable

import numpy as np


async def _longest_stall(work: Callable[[], Awaitable[object]]) -> tuple[float, float]:
    """(longest gap between ticks, total time) in milliseconds, while ``work`` runs."""
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gbps", type=float, default=4.0)
    parser.add_argument("--mib", type=int, default=64)
    args = parser.parse_args(argv)

    import aruntime
    from aruntime._native import native_library_path

    gpu = aruntime.open_backend("cuda-sim")
    sim = ctypes.CDLL(str(native_library_path("libcuda.so.1")))
    sim.arsim_set_timing(ctypes.c_double(args.gbps), ctypes.c_double(0.0))
    n = args.mib << 20
    host = np.ones(n, dtype=np.uint8)
    dev = gpu.alloc(n)
    stream = gpu.create_stream()
    driver = gpu._driver  # the naive path calls the C function directly
    lib = driver._lib
    ffi = driver._ffi

    async def aruntime_copy() -> object:
        return await gpu.copy_h2d_async(host, dev, stream=stream)

    async def naive_copy() -> object:
        code = lib.cuMemcpyHtoDAsync_v2(int(dev), ffi.from_buffer(host), n, stream.handle.handle)
        assert code == 0, code
        return await gpu.synchronize(stream)

    async def run() -> list[tuple[str, float, float]]:
        rows = []
        for label, work in (("aruntime (staged)", aruntime_copy), ("naive binding", naive_copy)):
            await work()  # warm-up: staging buffers, waiter thread
            stall, total = await _longest_stall(work)
            rows.append((label, stall, total))
        return rows

    rows = asyncio.run(run())
    print(f"{args.mib} MiB pageable copy_h2d_async on cuda-sim at {args.gbps} GB/s (asyncio)")
    print(f"{'path':20} {'longest stall ms':>17} {'copy ms':>9}")
    for label, stall, total in rows:
        print(f"{label:20} {stall:17.2f} {total:9.2f}")
    print(f"stall ratio aruntime/naive: {rows[0][1] / rows[1][1]:.3f}x")
    gpu.free(dev)
    stream.close()
    gpu.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
