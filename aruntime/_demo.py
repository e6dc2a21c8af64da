"""The pipeline behind ``aruntime demo``: overlapped copy, compute, copy.

The input is cut into chunks.  Chunk ``i`` goes to stream ``i % streams``,
which uploads it (H2D), scales it with the portable ``scale_f32`` kernel and
downloads it (D2H) into its own slot of the output, each stage bracketed by
timing events.  Each stream reuses one device buffer: a stream runs in order,
so chunk ``i + streams`` cannot overwrite the buffer before chunk ``i`` has
been downloaded, and no host wait is needed between chunks.  Every op is
enqueued at once; the host then only awaits the downloads, so while one
stream computes another can copy.

The same work runs twice: first on one stream, where nothing overlaps and the
timing events give each stage's own device time, then over all the streams.

The overlap figure of a pass comes from that pass's own timing events: for
each engine (H2D copy, compute, D2H copy: each has its own, as on GPUs with
two copy engines, and on the sims) the union of its ops' spans, the time it
had work.  The busiest engine's union over the pass's device time is a
fraction that cannot exceed 1: 1 means the pass took no longer than its
busiest engine needed, the most that overlap can achieve; on one stream it is
about a third when the three stages cost the same.
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
from ._memory import DevicePtr, HostBuffer
from ._modules import Kernel

__all__ = ["DemoConfig", "DemoResult", "RunTimes", "StageTotals", "run_demo"]

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
class RunTimes:
    """One pass over all the chunks."""

    streams: int
    wall_ms: float  # host time from the first enqueue to the last completion
    span_ms: float | None  # device time from the first upload to the last download
    correct: bool
    max_error: float
    #: Per engine ("copy H2D", "compute", "copy D2H"): the union of its ops' spans, in ms.
    busy_ms: dict[str, float] = field(default_factory=dict)

    @property
    def overlap(self) -> float | None:
        """The busiest engine's busy time over the pass's device time (0..1; None if untimed).

        Both come from this pass's own timing events, so the fraction never
        exceeds 1 (a union of spans inside the pass is no longer than the pass).
        """
        if not self.span_ms or not self.busy_ms:
            return None
        return min(1.0, max(self.busy_ms.values()) / self.span_ms)


@dataclass
class DemoResult:
    config: DemoConfig
    backend: str
    device: str
    serial: RunTimes
    pipelined: RunTimes
    stages: list[StageTotals] = field(default_factory=list)  # from the serial pass
    trace_path: str | None = None  # where the pipelined pass's trace was written
    #: Whether the backend's streams can run at the same time: False on the
    #: mock, which runs each op when it is enqueued.
    overlaps: bool = True

    @property
    def speedup(self) -> float | None:
        """The serial pass's device time over the pipelined pass's (None if untimed)."""
        one, many = self.serial.span_ms, self.pipelined.span_ms
        if not one or not many:
            return None
        return one / many

    @property
    def correct(self) -> bool:
        return self.serial.correct and self.pipelined.correct

    @property
    def bytes_moved(self) -> int:
        """Bytes the pipelined pass copied (H2D and D2H)."""
        return sum(s.nbytes for s in self.stages)

    @property
    def busiest_engine(self) -> str | None:
        """The engine the pipelined pass kept busiest: the one that bounds it."""
        busy = self.pipelined.busy_ms
        return max(busy, key=busy.__getitem__) if busy else None


# -- trace hook (issue 5) ---------------------------------------------------------
def can_trace(gpu: Backend) -> bool:
    """Whether this build has ``gpu.trace(path)`` (see :meth:`aruntime.Backend.trace`)."""
    return callable(getattr(gpu, "trace", None))


def trace_context(gpu: Backend, path: str | None) -> contextlib.AbstractContextManager[object]:
    """The context the pipelined pass runs in: ``gpu.trace(path)``, or nothing."""
    if path is None or not can_trace(gpu):
        return contextlib.nullcontext()
    tracer: contextlib.AbstractContextManager[object] = gpu.trace(path)  # type: ignore[attr-defined,unused-ignore]
    return tracer


@dataclass
class _Chunk:
    events: tuple[Event, Event, Event, Event] | None
    download: Completion


async def run_demo(
    gpu: Backend,
    config: DemoConfig,
    on_chunk_done: Callable[[str, int], None] = lambda phase, i: None,
    trace_path: str | None = None,
) -> DemoResult:
    """Run the serial pass, then the pipelined pass, on ``gpu``.

    ``on_chunk_done(phase, i)`` is called as chunk ``i`` of phase ``"serial"``
    or ``"pipelined"`` lands.  With ``trace_path`` (and a build that has
    ``gpu.trace``) the pipelined pass is traced into that file.  Cancelling
    it abandons the waits only; everything it allocated is released before it
    returns or raises (the device memory once the queued work has finished).
    """
    nbytes = config.chunk_bytes
    kernel = gpu.kernel(gpu.builtin_module("vector_ops"), "scale_f32")
    timing = bool(getattr(gpu.driver, "supports_timing", False))
    with contextlib.ExitStack() as stack:
        host_in = gpu.alloc_host_pinned(config.chunks * nbytes)
        stack.callback(gpu.free_host_pinned, host_in)
        host_out = gpu.alloc_host_pinned(config.chunks * nbytes)
        stack.callback(gpu.free_host_pinned, host_out)
        source = np.asarray(host_in).view(np.float32)
        source[:] = np.random.default_rng(7).standard_normal(source.size, dtype=np.float32)
        del source  # free_host_pinned refuses while a view of the buffer is alive
        buffers: list[DevicePtr] = []
        for _ in range(config.streams):
            buffers.append(gpu.alloc(nbytes))
            stack.callback(gpu.free, buffers[-1])

        stages = [
            StageTotals("H2D copy", "copy H2D", config.chunks, config.chunks * nbytes),
            StageTotals("kernel scale_f32", "compute", config.chunks, 0),
            StageTotals("D2H copy", "copy D2H", config.chunks, config.chunks * nbytes),
        ]
        io = _Io(gpu, kernel, host_in, host_out, buffers, nbytes, timing)
        serial = await io.run(1, config.chunks, stages, lambda i: on_chunk_done("serial", i))
        host_out[:] = 0
        with trace_context(gpu, trace_path):
            pipelined = await io.run(
                config.streams, config.chunks, None, lambda i: on_chunk_done("pipelined", i)
            )
    return DemoResult(
        config=config,
        backend=gpu.name,
        device=gpu.device.name,
        serial=serial,
        pipelined=pipelined,
        stages=stages,
        trace_path=trace_path if trace_path is not None and can_trace(gpu) else None,
        overlaps=not gpu.driver.synchronous,
    )


@dataclass
class _Io:
    """What both passes share: the backend, the kernel and the buffers."""

    gpu: Backend
    kernel: Kernel
    host_in: HostBuffer
    host_out: HostBuffer
    buffers: list[DevicePtr]
    nbytes: int
    timing: bool

    async def run(
        self,
        nstreams: int,
        count: int,
        stages: list[StageTotals] | None,
        on_chunk_done: Callable[[int], None],
    ) -> RunTimes:
        """One pass over ``count`` chunks on ``nstreams`` streams; fills ``stages`` if given."""
        gpu, nbytes = self.gpu, self.nbytes
        n = nbytes // 4
        grid = math.ceil(n / BLOCK)
        with contextlib.ExitStack() as stack:
            streams: list[Stream] = [
                stack.enter_context(gpu.create_stream()) for _ in range(nstreams)
            ]
            start = time.perf_counter()
            chunks = []
            for i in range(count):
                stream = streams[i % nstreams]
                dev = self.buffers[i % nstreams]
                part = slice(i * nbytes, (i + 1) * nbytes)
                events = None
                if self.timing:
                    e = [stack.enter_context(gpu.create_event(timing=True)) for _ in range(4)]
                    events = (e[0], e[1], e[2], e[3])
                    gpu.record_event(events[0], stream)
                gpu.copy_h2d_async(self.host_in[part], dev, stream=stream)
                if events:
                    gpu.record_event(events[1], stream)
                gpu.launch(self.kernel, grid, BLOCK, [np.uint32(n), SCALE, dev], stream=stream)
                if events:
                    gpu.record_event(events[2], stream)
                download = gpu.copy_d2h_async(dev, self.host_out[part], stream=stream)
                if events:
                    gpu.record_event(events[3], stream)
                chunks.append(_Chunk(events, download))
            for i, chunk in enumerate(chunks):
                await chunk.download
                on_chunk_done(i)
            for stream in streams:
                await stream  # the last timing events too
            wall_ms = (time.perf_counter() - start) * 1e3

            expected = np.asarray(self.host_in).view(np.float32) * SCALE
            got = np.asarray(self.host_out).view(np.float32)
            max_error = float(np.max(np.abs(got - expected))) if got.size else 0.0
            correct = bool(np.allclose(got, expected, rtol=1e-6, atol=0.0))
            timed = _time_stages(gpu, chunks, stages) if self.timing else None
        span, busy = timed if timed is not None else (None, {})
        return RunTimes(nstreams, wall_ms, span, correct, max_error, busy)


#: The engine of each stage, in the order a chunk's events bracket them.
ENGINES = ("copy H2D", "compute", "copy D2H")


def _time_stages(
    gpu: Backend, chunks: list[_Chunk], stages: list[StageTotals] | None
) -> tuple[float, dict[str, float]] | None:
    """A pass's device span and each engine's busy time; fills ``stages`` if given.

    Returns None (and leaves the stages untimed) where the backend cannot time.
    """
    first = chunks[0].events
    assert first is not None
    spans: dict[str, list[tuple[float, float]]] = {e: [] for e in ENGINES}
    try:
        for chunk in chunks:
            ev = chunk.events
            assert ev is not None
            t = [gpu.elapsed_ms(first[0], e) if e is not first[0] else 0.0 for e in ev]
            for k, engine in enumerate(ENGINES):
                spans[engine].append((t[k], t[k + 1]))
    except NotSupportedError:
        return None
    if stages is not None:
        for stage, engine in zip(stages, ENGINES, strict=True):
            stage.ms = sum(end - start for start, end in spans[engine])
    span = max(end for start, end in spans[ENGINES[-1]])
    return span, {engine: union_ms(s) for engine, s in spans.items()}


def union_ms(spans: list[tuple[float, float]]) -> float:
    """The length of the union of ``(start, end)`` intervals: time covered at least once."""
    total = 0.0
    reach = float("-inf")
    for start, end in sorted(spans):
        if end <= reach:
            continue
        total += end - max(start, reach)
        reach = end
    return total
