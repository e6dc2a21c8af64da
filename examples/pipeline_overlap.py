"""Pipeline overlap: double and triple buffering with streams and events.

An array is processed in N chunks; each chunk is uploaded (H2D), scaled by a
kernel and downloaded (D2H).  Run one after the other, the three stages never
overlap.  With a ring of device buffers and one stream per engine, chunk i+1
uploads while chunk i computes and chunk i-1 downloads:

- serial: one stream, one buffer;
- double buffering: two buffers, two streams (one copy stream, one compute);
- triple buffering: three buffers, three streams (upload, compute, download).

Events carry the dependencies between streams on the device (the host never
waits between chunks): "chunk loaded" lets the compute stream start, "chunk
computed" lets the download start, and "slot drained" lets the upload reuse a
buffer.  The program measures each stage alone (device timing events), computes
the ideal time each layout could reach, and prints the achieved time and the
overlap fraction: 0 means no better than serial, 1 means the ideal bound (a
few percent over 1 is the noise in the single-stage timings).

    python examples/pipeline_overlap.py [--backend NAME] [--trio] [--chunks N] [--reuse-events]

``--backend`` (or ``ARUNTIME_BACKEND``) picks the backend; the default is the
best one here.  The mock runs each op on a stream thread for 2 ms; the
software drivers (cuda-sim, levelzero-sim) get a timing model unless
``ARUNTIME_SIM_OP_LATENCY_US`` / ``ARUNTIME_SIM_COPY_GBPS`` are set, so that
their ops occupy an engine the way a device's would.  The three runs are
written as a Chrome trace (``--trace PATH``, by default in the temporary
folder), one track per stream, which https://ui.perfetto.dev opens.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anyio
import numpy as np

import aruntime as ar

BLOCK = 256
FACTOR = np.float32(2.0)
MOCK_LATENCY_S = 0.002
SIM_TIMING = {"ARUNTIME_SIM_OP_LATENCY_US": "2000", "ARUNTIME_SIM_COPY_GBPS": "8"}


@dataclass(frozen=True)
class Layout:
    name: str
    slots: int  # device buffers in the ring
    streams: int  # 1: all on one; 2: copy + compute; 3: upload, compute, download


LAYOUTS = (Layout("serial", 1, 1), Layout("double", 2, 2), Layout("triple", 3, 3))


def open_gpu(name: str) -> ar.Backend:
    """Open ``name``, making device work take time where it otherwise would not."""
    if name.endswith("-sim"):
        for key, value in SIM_TIMING.items():
            os.environ.setdefault(key, value)  # read when the software driver loads
    if name == "mock":
        return ar.open_backend("mock", latency=MOCK_LATENCY_S)
    gpu = ar.open_backend(name)
    if gpu.name == "mock":  # "auto" found no device: use the mock whose ops take time
        gpu.close()
        return ar.open_backend("mock", latency=MOCK_LATENCY_S)
    return gpu


def ideal_ms(layout: Layout, n: int, h: float, k: float, d: float) -> float:
    """The shortest time ``layout`` allows, from single-stage times h, k, d (ms)."""
    if layout.streams == 1:
        return n * (h + k + d)
    if layout.streams == 2:  # the copy stream carries both copies
        return max(n * (h + d), h + n * k + d)
    return h + k + d + (n - 1) * max(h, k, d)


async def time_stage(
    gpu: ar.Backend, stream: ar.Stream, enqueue: Callable[[], Any], repeat: int = 5
) -> float:
    """Device time (ms) of one op run alone on ``stream``: the best of ``repeat``.

    The best, not the median: host noise only ever adds time.
    """
    samples = []
    with gpu.create_event(timing=True) as start, gpu.create_event(timing=True) as end:
        for _ in range(repeat):
            start.record(stream)
            enqueue()
            end.record(stream)
            await end
            samples.append(gpu.elapsed_ms(start, end))
    return min(samples)


async def run_layout(
    gpu: ar.Backend,
    layout: Layout,
    src: np.ndarray,
    dst: np.ndarray,
    chunk: int,
    buffers: list[ar.DevicePtr],
    streams: list[ar.Stream],
    reuse_events: bool = False,
) -> float:
    """Push every chunk through H2D, kernel, D2H; return the wall time in ms."""
    n = src.size // chunk
    up = streams[0]
    compute = streams[0] if layout.streams == 1 else streams[1]
    down = streams[{1: 0, 2: 0, 3: 2}[layout.streams]]
    kernel = gpu.kernel(gpu.builtin_module("vector_ops"), "scale_f32")
    grid = (chunk + BLOCK - 1) // BLOCK
    async with contextlib.AsyncExitStack() as stack:
        # Events between the stages: by default one per chunk and stage, so
        # each wait is tied to exactly one record.  With reuse_events, one per
        # buffer and stage, re-recorded for every chunk that uses the buffer
        # (a wait is for the record current when the wait is queued).
        count = layout.slots if reuse_events else n
        loaded, computed, drained = (
            [stack.enter_context(gpu.create_event()) for _ in range(count)] for _ in range(3)
        )

        def ev(i: int) -> int:
            return i % layout.slots if reuse_events else i

        def upload(i: int) -> None:
            slot = i % layout.slots
            if i >= layout.slots:  # the download of chunk i - slots must be done
                gpu.stream_wait_event(up, drained[ev(i - layout.slots)])
            gpu.copy_h2d_async(src[i * chunk : (i + 1) * chunk], buffers[slot], stream=up)
            loaded[ev(i)].record(up)
            gpu.stream_wait_event(compute, loaded[ev(i)])
            args = [np.uint32(chunk), FACTOR, buffers[slot]]
            gpu.launch(kernel, grid, BLOCK, args, stream=compute)
            computed[ev(i)].record(compute)

        def download(i: int) -> None:
            slot = i % layout.slots
            gpu.stream_wait_event(down, computed[ev(i)])
            gpu.copy_d2h_async(buffers[slot], dst[i * chunk : (i + 1) * chunk], stream=down)
            drained[ev(i)].record(down)

        t0 = time.perf_counter()
        # Issue order matters when one stream carries both copies: upload chunk
        # i before downloading chunk i-1, so the copy stream is never stuck
        # behind a kernel while it could be uploading.  (A wait on an event
        # waits for its latest record, so each "drained" record must be issued
        # before the upload that waits on it: with one buffer, no skew.)
        lag = min(1, layout.slots - 1)
        for i in range(n + lag):
            if i < n:
                upload(i)
            if i >= lag:
                download(i - lag)
        for st in {id(s): s for s in (up, compute, down)}.values():
            await st
        return (time.perf_counter() - t0) * 1e3


async def main(
    backend: str = "auto",
    chunks: int = 12,
    trace_path: str | None = None,
    reuse_events: bool = False,
) -> None:
    chunk = 256 * 1024  # float32 elements: 1 MiB per chunk
    async with open_gpu(backend) as gpu, contextlib.AsyncExitStack() as stack:
        # Pinned host memory: a real device copies it asynchronously.
        host_in = gpu.alloc_host_pinned(chunks * chunk * 4)
        stack.callback(gpu.free_host_pinned, host_in)
        host_out = gpu.alloc_host_pinned(chunks * chunk * 4)
        stack.callback(gpu.free_host_pinned, host_out)
        src, dst = host_in.view(np.float32), host_out.view(np.float32)
        src[:] = np.random.default_rng(0).standard_normal(src.size, dtype=np.float32)
        buffers = [gpu.alloc(chunk * 4) for _ in range(3)]
        for ptr in buffers:
            stack.callback(gpu.free, ptr)
        streams = [stack.enter_context(gpu.create_stream()) for _ in range(3)]

        kernel = gpu.kernel(gpu.builtin_module("vector_ops"), "scale_f32")
        grid = (chunk + BLOCK - 1) // BLOCK
        s, b = streams[0], buffers[0]
        h = await time_stage(gpu, s, lambda: gpu.copy_h2d_async(src[:chunk], b, stream=s))
        k = await time_stage(
            gpu, s, lambda: gpu.launch(kernel, grid, BLOCK, [np.uint32(chunk), FACTOR, b], stream=s)
        )
        d = await time_stage(gpu, s, lambda: gpu.copy_d2h_async(b, dst[:chunk], stream=s))
        print(f"{gpu.name} ({gpu.device.name}): {chunks} chunks of {chunk * 4 >> 20} MiB")
        print(f"single stage (device time): H2D {h:.2f} ms, kernel {k:.2f} ms, D2H {d:.2f} ms")

        path = trace_path or os.path.join(tempfile.gettempdir(), f"pipeline_{gpu.name}.json")
        serial_ms = ideal_ms(LAYOUTS[0], chunks, h, k, d)
        print(f"{'layout':<8} {'achieved':>10} {'ideal':>10} {'serial':>10} {'overlap':>8}")
        async with gpu.trace(path):  # the pipelined runs, as a Chrome trace
            for layout in LAYOUTS:
                dst[:] = 0
                achieved = await run_layout(
                    gpu, layout, src, dst, chunk, buffers, streams, reuse_events
                )
                assert np.array_equal(dst, src * FACTOR), f"{layout.name}: wrong result"
                ideal = ideal_ms(layout, chunks, h, k, d)
                saving = serial_ms - ideal
                overlap = f"{(serial_ms - achieved) / saving:.0%}" if saving > 0 else "-"
                print(
                    f"{layout.name:<8} {achieved:>8.1f}ms {ideal:>8.1f}ms "
                    f"{serial_ms:>8.1f}ms {overlap:>8}"
                )
        print("overlap = (serial - achieved) / (serial - ideal); ideal from the stage times")
        print(f"trace written to {path} (open it in https://ui.perfetto.dev)")


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default=os.environ.get("ARUNTIME_BACKEND", "auto"))
    parser.add_argument("--trio", action="store_true", help="run under trio, not asyncio")
    parser.add_argument("--chunks", type=int, default=12)
    parser.add_argument("--trace", default=None, help="where to write the Chrome trace")
    parser.add_argument(
        "--reuse-events", action="store_true", help="one event per buffer, re-recorded"
    )
    return parser.parse_args(argv)


if __name__ == "__main__":
    args = parse_args(sys.argv[1:])
    anyio.run(
        main,
        args.backend,
        args.chunks,
        args.trace,
        args.reuse_events,
        backend="trio" if args.trio else "asyncio",
    )
