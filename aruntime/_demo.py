"""The pipeline behind ``aruntime demo``: overlapped copy, compute, copy.

The input is cut into chunks.  Chunk ``i`` goes to stream ``i % streams``,
which uploads it (H2D), scales it with the portable ``scale_f32`` kernel and
downloads it (D2H) into its own slot of the output, each stage bracketed by
timing events.  Each stream reuses one device buffer: a stream runs in order,
so chunk ``i + streams`` cannot overwrite the buffer before chunk ``i`` has
been downloaded, and no host wait is needed between chunks.  Every op is
enqueued at once; the host then only awaits the downloads, so while one
stream computes another can copy.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ._backend import Backend
from ._completion import Completion
from ._exceptions import NotSupportedError
from ._handles import Event, Stream
from ._memory import DevicePtr

__all__ = ["DemoConfig", "DemoResult", "StageTotals", "run_pipeline"]

SCALE = np.float32(2.5)
BLOCK = 256


@dataclass(frozen=True)
class DemoConfig:
    chunks: int = 16
    chunk_bytes: int = 4 << 20
    streams: int = 3


@dataclass
class StageTotals:
    """One stage over every chunk: device milliseconds (None if not timed) and bytes."""

    name: str
    engine: str
    ops: int = 0
    nbytes: int = 0
    ms: float | None = None


@dataclass
class DemoResult:
    config: DemoConfig
    backend: str
    device: str
    wall_ms: float
    correct: bool
    max_error: float
    stages: list[StageTotals] = field(default_factory=list)
    device_span_ms: float | None = None  # first upload start to last download end
    trace_path: str | None = None  # set once the trace hook below writes one

    @property
    def bytes_moved(self) -> int:
        return sum(s.nbytes for s in self.stages)

    @property
    def serial_ms(self) -> float | None:
        times = [s.ms for s in self.stages]
        if any(t is None for t in times):
            return None
        return sum(t for t in times if t is not None)

    @property
    def ideal_ms(self) -> float | None:
        """The overlap bound: the busiest engine's total (copy engine vs compute engine)."""
        per_engine: dict[str, float] = {}
        for s in self.stages:
            if s.ms is None:
                return None
            per_engine[s.engine] = per_engine.get(s.engine, 0.0) + s.ms
        return max(per_engine.values()) if per_engine else None


# -- trace hook (issue 5) ---------------------------------------------------------
# TRACE HOOK: ``gpu.trace(path)`` (DESIGN.md section 9) is not part of the core
# yet.  When it lands, return ``gpu.trace(path)`` here, set
# ``DemoResult.trace_path`` in run_pipeline, and the CLI's summary shows it.
def trace_context(gpu: Backend) -> contextlib.AbstractContextManager[object]:
    """The context the pipeline runs in, so that a trace can record it (none yet)."""
    del gpu
    return contextlib.nullcontext()


@dataclass
class _Chunk:
    stream: Stream
    events: tuple[Event, Event, Event, Event] | None
    download: Completion


async def run_pipeline(
    gpu: Backend,
    config: DemoConfig,
    on_chunk_done: Callable[[int], None] = lambda i: None,
) -> DemoResult:
    """Run the pipeline on ``gpu``; ``on_chunk_done(i)`` is called as each chunk lands.

    Cancelling it abandons the waits only; everything it allocated is
    released before it returns or raises.
    """
    count = config.chunks
    nbytes = config.chunk_bytes
    n = nbytes // 4
    timing = bool(getattr(gpu.driver, "supports_timing", False))
    kernel = gpu.kernel(gpu.builtin_module("vector_ops"), "scale_f32")
    grid = math.ceil(n / BLOCK)

    with contextlib.ExitStack() as stack:
        host_in = gpu.alloc_host_pinned(count * nbytes)
        stack.callback(gpu.free_host_pinned, host_in)
        host_out = gpu.alloc_host_pinned(count * nbytes)
        stack.callback(gpu.free_host_pinned, host_out)
        source = np.asarray(host_in).view(np.float32)
        source[:] = np.random.default_rng(7).standard_normal(source.size, dtype=np.float32)
        streams = [stack.enter_context(gpu.create_stream()) for _ in range(config.streams)]
        buffers: list[DevicePtr] = []
        for _ in streams:
            buffers.append(gpu.alloc(nbytes))
            stack.callback(gpu.free, buffers[-1])
        stack.enter_context(trace_context(gpu))

        start = time.perf_counter()
        chunks = []
        for i in range(count):
            stream = streams[i % len(streams)]
            dev = buffers[i % len(streams)]
            part = slice(i * nbytes, (i + 1) * nbytes)
            events = None
            if timing:
                e = tuple(stack.enter_context(gpu.create_event(timing=True)) for _ in range(4))
                events = (e[0], e[1], e[2], e[3])
                gpu.record_event(events[0], stream)
            gpu.copy_h2d_async(host_in[part], dev, stream=stream)
            if events:
                gpu.record_event(events[1], stream)
            gpu.launch(kernel, grid, BLOCK, [np.uint32(n), SCALE, dev], stream=stream)
            if events:
                gpu.record_event(events[2], stream)
            download = gpu.copy_d2h_async(dev, host_out[part], stream=stream)
            if events:
                gpu.record_event(events[3], stream)
            chunks.append(_Chunk(stream, events, download))

        for i, chunk in enumerate(chunks):
            await chunk.download
            on_chunk_done(i)
        for stream in streams:
            await stream  # the last timing events too
        wall_ms = (time.perf_counter() - start) * 1e3

        expected = source * SCALE
        got = np.asarray(host_out).view(np.float32)
        max_error = float(np.max(np.abs(got - expected))) if got.size else 0.0
        correct = bool(np.allclose(got, expected, rtol=1e-6, atol=0.0))

        stages = [
            StageTotals("H2D copy", "copy", count, count * nbytes),
            StageTotals("kernel scale_f32", "compute", count, 0),
            StageTotals("D2H copy", "copy", count, count * nbytes),
        ]
        span = _time_stages(gpu, chunks, stages) if timing else None
    return DemoResult(
        config=config,
        backend=gpu.name,
        device=gpu.device.name,
        wall_ms=wall_ms,
        correct=correct,
        max_error=max_error,
        stages=stages,
        device_span_ms=span,
    )


def _time_stages(gpu: Backend, chunks: list[_Chunk], stages: list[StageTotals]) -> float | None:
    """Fill each stage's device time from the events; return the device span.

    Leaves the stages untimed (and returns None) where the backend cannot time.
    """
    totals = [0.0] * len(stages)
    first = chunks[0].events
    assert first is not None
    span = 0.0
    try:
        for chunk in chunks:
            ev = chunk.events
            assert ev is not None
            for k in range(len(stages)):
                totals[k] += gpu.elapsed_ms(ev[k], ev[k + 1])
            span = max(span, gpu.elapsed_ms(first[0], ev[3]))
    except NotSupportedError:
        return None
    for stage, ms in zip(stages, totals, strict=True):
        stage.ms = ms
    return span
