"""Counts the threads a backend adds under load; run as a script by test_thread_census.py.

``python -m tests.thread_census BACKEND STREAMS LOOP`` opens BACKEND (a
conformance variant), makes STREAMS streams, and runs 4,000 tasks at once
over them: each awaits a memset, a small copy each way and, every fourth
task, a wait on another stream's event (a device-side wait that parks on
the sims).  Every stream also makes one pageable copy big enough to be
staged.  A probe task samples ``/proc/self/task`` every millisecond.  It
prints one JSON line: the thread count before the backend opened, the
peak, the count once everything was awaited, and the sim's engine threads.

A fresh process per measurement: the sims' engine threads live as long as
the process, so only a fresh one shows what opening a backend costs.
"""

from __future__ import annotations

import ctypes
import json
import os
import sys
from typing import Any

import anyio
import numpy as np

import aruntime as ar
from aruntime.testing import open_test_backend

TASKS = 4000
SMALL = 256
STAGED = 192 * 1024  # over the direct pageable limit: goes through staging buffers


def _threads() -> int:
    return len(os.listdir("/proc/self/task"))


def _engine_threads(backend: str) -> int | None:
    """The sim's own count of its engine threads (None for other backends)."""
    from aruntime._native import native_library_path

    if backend == "cuda-sim":
        return int(ctypes.CDLL(str(native_library_path("libcuda.so.1"))).arsim_engine_threads())
    if backend == "levelzero-sim":
        lib = ctypes.CDLL(str(native_library_path("libze_aruntime_sim.so")))
        return int(lib.arze_sim_engine_threads())
    return None


async def census(backend: str, nstreams: int) -> dict[str, Any]:
    baseline = _threads()
    peak = baseline
    done = False

    async def probe() -> None:
        nonlocal peak
        while not done:
            peak = max(peak, _threads())
            await anyio.sleep(0.001)

    async with anyio.create_task_group() as probes:
        probes.start_soon(probe)
        async with open_test_backend(backend) as gpu:
            streams = [gpu.create_stream() for _ in range(nstreams)]
            events = [gpu.create_event() for _ in range(nstreams)]
            buffers = [gpu.alloc(SMALL) for _ in range(TASKS)]
            # One staged buffer per stream: the streams are not ordered
            # against each other, so a shared one would be a stream race.
            staged = [gpu.alloc(STAGED) for _ in range(nstreams)]
            big = np.arange(STAGED, dtype=np.uint8)
            big_out = np.zeros(STAGED, np.uint8)

            async def task(index: int) -> None:
                stream = streams[index % nstreams]
                ptr = buffers[index]
                value = index % 251
                if index % 4 == 0:
                    other = (index + 1) % nstreams
                    gpu.record_event(events[other], stream=streams[other])
                    gpu.stream_wait_event(stream, events[other])
                await gpu.memset_async(ptr, value, SMALL, stream=stream)
                host = np.full(SMALL, value, np.uint8)
                await gpu.copy_h2d_async(host, ptr, stream=stream)
                out = np.zeros(SMALL, np.uint8)
                await gpu.copy_d2h_async(ptr, out, stream=stream)
                assert (out == value).all(), f"task {index}: wrong bytes"

            async def staged_copy(stream: ar.Stream, target: ar.DevicePtr) -> None:
                await gpu.copy_h2d_async(big, target, stream=stream)

            async with anyio.create_task_group() as tasks:
                for index in range(TASKS):
                    tasks.start_soon(task, index)
                for stream, target in zip(streams, staged, strict=True):
                    tasks.start_soon(staged_copy, stream, target)
            for target in (staged[0], staged[-1]):
                big_out[:] = 0
                await gpu.copy_d2h_async(target, big_out, stream=streams[0])
                assert (big_out == big).all()
            settled = _threads()
            peak = max(peak, settled)
            engines = _engine_threads(backend)
            for ptr in buffers:
                gpu.free(ptr)
            for target in staged:
                gpu.free(target)
            for event in events:
                event.close()
            for stream in streams:
                stream.close()
        done = True
    return {
        "backend": backend,
        "streams": nstreams,
        "baseline": baseline,
        "peak": peak,
        "settled": settled,
        "added": peak - baseline,
        "engine_threads": engines,
    }


def main(argv: list[str]) -> int:
    backend, nstreams, loop = argv[0], int(argv[1]), argv[2]
    result = anyio.run(census, backend, nstreams, backend=loop)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
