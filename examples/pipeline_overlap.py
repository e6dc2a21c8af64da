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
buffer.  The program measures each stage alone (device timing events) and
prints the ideal time each layout could reach from those.  Each run also
brackets every op with timing events, and its overlap comes from that run
alone: for each engine (H2D copy, compute, D2H copy) the union of its ops'
spans, the time it had work; the busiest engine's union over the run's device
time is a fraction that cannot exceed 1.  1 means the run was as short as its
busiest engine allows; the serial layout, with three equal stages, gets about
a third.  On a shared or loaded machine the figures vary from run to run.

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
from dataclasses import dataclass, field
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
ENGINES = ("H2D", "kernel", "D2H")


@dataclass
class RunTimes:
    """One run of a layout: host wall time, and its ops' device spans per engine (ms)."""

    wall_ms: float
    spans: dict[str, list[tuple[float, float]]] = field(default_factory=dict)

    @property
    def device_ms(self) -> float:
        """From the first op's start to the last op's end, on the device."""
        every = [s for spans in self.spans.values() for s in spans]
        return max(e for _, e in every) - min(s for s, _ in every)

    def busy_ms(self, engine: str) -> float:
        """The union of ``engine``'s op spans: the time it had work."""
        total, reach = 0.0, float("-inf")
        for start, end in sorted(self.spans[engine]):
            if end > reach:
                total += end - max(start, reach)
                reach = end
        return total

    @property
    def overlap(self) -> float:
        """The busiest engine's busy time over the device time: at most 1."""
        return min(1.0, max(self.busy_ms(e) for e in ENGINES) / self.device_ms)


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
) -> RunTimes:
    """Push every chunk through H2D, kernel, D2H; return the wall time and the op spans."""
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
        # Timing events around each op (start, end), by engine and chunk.
        marks = {
            e: [
                (
                    stack.enter_context(gpu.create_event(timing=True)),
                    stack.enter_context(gpu.create_event(timing=True)),
                )
                for _ in range(n)
            ]
            for e in ENGINES
        }

        def ev(i: int) -> int:
            return i % layout.slots if reuse_events else i

        def upload(i: int) -> None:
            slot = i % layout.slots
            if i >= layout.slots:  # the download of chunk i - slots must be done
                gpu.stream_wait_event(up, drained[ev(i - layout.slots)])
            marks["H2D"][i][0].record(up)
            gpu.copy_h2d_async(src[i * chunk : (i + 1) * chunk], buffers[slot], stream=up)
            marks["H2D"][i][1].record(up)
            loaded[ev(i)].record(up)
            gpu.stream_wait_event(compute, loaded[ev(i)])
            args = [np.uint32(chunk), FACTOR, buffers[slot]]
            marks["kernel"][i][0].record(compute)
            gpu.launch(kernel, grid, BLOCK, args, stream=compute)
            marks["kernel"][i][1].record(compute)
            computed[ev(i)].record(compute)

        def download(i: int) -> None:
            slot = i % layout.slots
            gpu.stream_wait_event(down, computed[ev(i)])
            marks["D2H"][i][0].record(down)
            gpu.copy_d2h_async(buffers[slot], dst[i * chunk : (i + 1) * chunk], stream=down)
            marks["D2H"][i][1].record(down)
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
        wall_ms = (time.perf_counter() - t0) * 1e3
        origin = marks["H2D"][0][0]
        spans = {
            e: [(gpu.elapsed_ms(origin, a), gpu.elapsed_ms(origin, b)) for a, b in marks[e]]
            for e in ENGINES
        }
        return RunTimes(wall_ms, spans)


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
        h = await time_stage(gpu, s, lambda: gpu.copy_h2d_async(host_in[: chunk * 4], b, stream=s))
        k = await time_stage(
            gpu, s, lambda: gpu.launch(kernel, grid, BLOCK, [np.uint32(chunk), FACTOR, b], stream=s)
        )
        d = await time_stage(gpu, s, lambda: gpu.copy_d2h_async(b, host_out[: chunk * 4], stream=s))
        print(f"{gpu.name} ({gpu.device.name}): {chunks} chunks of {chunk * 4 >> 20} MiB")
        print(f"single stage (device time): H2D {h:.2f} ms, kernel {k:.2f} ms, D2H {d:.2f} ms")

        path = trace_path or os.path.join(tempfile.gettempdir(), f"pipeline_{gpu.name}.json")
        print(
            f"{'layout':<8} {'wall':>10} {'device':>10} {'ideal':>10} {'busiest':>8} {'overlap':>8}"
        )
        async with gpu.trace(path):  # the pipelined runs, as a Chrome trace
            for layout in LAYOUTS:
                dst[:] = 0
                run = await run_layout(gpu, layout, src, dst, chunk, buffers, streams, reuse_events)
                assert np.array_equal(dst, src * FACTOR), f"{layout.name}: wrong result"
                ideal = ideal_ms(layout, chunks, h, k, d)
                busiest = max(ENGINES, key=run.busy_ms)
                print(
                    f"{layout.name:<8} {run.wall_ms:>8.1f}ms {run.device_ms:>8.1f}ms "
                    f"{ideal:>8.1f}ms {busiest:>8} {run.overlap:>8.2f}"
                )
        print(
            "overlap = the busiest engine's busy time / the run's device time, both from the "
            "run's own timing events (at most 1; 1 = as short as that engine allows); ideal = "
            "from the single-stage times.  Figures vary from run to run on a shared machine."
        )
        print(f"trace written to {path} (open it in https://ui.perfetto.dev)")
        # free_host_pinned (the stack's callbacks) refuses while a view of the
        # pinned buffers is alive: a view read after the free would read freed memory.
        del src, dst


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
