"""Hundreds of awaits cancelled mid-copy on cuda-sim, their buffers dropped at once.

Copies large enough to be staged through native host functions, and small
direct ones, are awaited under deadlines that expire at random points.  The
host arrays are dropped and collected right after.  Then: every copy that
completed carries the right bytes, the device sees no corruption, and
nothing leaked (allocations, streams, sim queue threads, Python threads).
"""

from __future__ import annotations

import ctypes
import gc
import random
import threading
from pathlib import Path

import anyio
import numpy as np
import pytest

import aruntime as ar
from aruntime.testing import assert_no_leaks

ROOT = Path(__file__).resolve().parents[3]
pytestmark = pytest.mark.anyio


async def test_cancellation_storm() -> None:
    if not (ROOT / "ffi" / "cuda" / "sim").is_dir():
        pytest.skip("the software CUDA driver is not in this checkout yet")
    from aruntime._native import native_library_path

    sim = ctypes.CDLL(str(native_library_path("libcuda.so.1")))
    gpu = ar.open_backend("cuda-sim")
    # The context's own (legacy) stream has a queue thread for the process's life.
    sim_threads_before = sim.arsim_live_queues()
    sim.arsim_set_timing(ctypes.c_double(8.0), ctypes.c_double(50.0))
    rng = random.Random(1234)
    streams = [gpu.create_stream() for _ in range(4)]
    completed: list[int] = []
    try:

        async def one(index: int) -> None:
            n = rng.choice([4096, 200_000, 1_100_000])  # direct, staged, staged in chunks
            dev = gpu.alloc(n)
            stream = streams[index % len(streams)]
            try:
                src = np.full(n, index % 251, np.uint8)
                out = np.zeros(n, np.uint8)
                deadline = rng.choice([float("inf"), rng.random() * 0.02])
                with anyio.move_on_after(deadline):
                    await gpu.copy_h2d_async(src, dev, stream=stream)
                    await gpu.copy_d2h_async(dev, out, stream=stream)
                    assert (out == index % 251).all(), f"task {index}: corrupted copy"
                    completed.append(index)
                del src, out  # dropped while the device may still use them
            finally:
                gpu.free(dev)  # deferred by the core until the queued work is done

        async with anyio.create_task_group() as tg:
            for index in range(300):
                tg.start_soon(one, index)
        gc.collect()
        await gpu.synchronize()
        for stream in streams:
            await gpu.synchronize(stream)
        gc.collect()
        # The device still works and copies exactly.
        probe = np.arange(1 << 20, dtype=np.uint32).view(np.uint8)
        dev = gpu.alloc(probe.nbytes)
        await gpu.copy_h2d_async(probe, dev, stream=streams[0])
        back = await gpu.copy_d2h_async(dev, np.empty_like(probe), stream=streams[0])
        np.testing.assert_array_equal(back, probe)
        gpu.free(dev)
        for stream in streams:
            stream.close()
        await gpu.synchronize()
        assert_no_leaks(gpu)
    finally:
        sim.arsim_set_timing(ctypes.c_double(0.0), ctypes.c_double(0.0))
        gpu.close()
    assert 0 < len(completed) < 300, "the deadlines should cancel some awaits, not all"
    for _ in range(300):  # waiter and sim queue threads end after close, asynchronously
        if not _our_threads() and sim.arsim_live_queues() <= sim_threads_before:
            break
        await anyio.sleep(0.01)
    assert not _our_threads()
    assert sim.arsim_live_queues() <= sim_threads_before


def _our_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("aruntime")]
