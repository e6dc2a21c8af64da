"""Overlapped pipeline: double or triple buffering across copy and compute streams.

Chunks flow through three stages, each on its own stream so the copy and
compute engines can work at once: upload (H2D), a kernel, download (D2H).
Events hand each buffer from stage to stage (``stream_wait_event``), and a
buffer is reused only after its previous chunk has been downloaded, all on
the device: the host enqueues everything up front and awaits only the end.
With ``--streams 2`` uploads and downloads share one copy stream.

It prints the time achieved against the ideal bound: the busiest stream's
total of device time (H2D, kernels or D2H; with two streams, H2D + D2H share
one).  On the
mock, ops are given a latency (``--mock-latency-ms``) and run on per-stream
threads, so the overlap is real there too.

    python examples/pipeline_overlap.py [--trio] [--chunks 24] [--buffers 3] [--streams 3]
"""

from __future__ import annotations

import argparse
import os

import anyio
import numpy as np

import aruntime as ar

CHUNK = 1 << 18  # float32 elements per chunk (1 MiB)


def parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--trio", action="store_true", help="run under trio")
    p.add_argument("--chunks", type=int, default=24)
    p.add_argument("--buffers", type=int, default=3, choices=(2, 3), help="double or triple")
    p.add_argument("--streams", type=int, default=3, choices=(2, 3))
    p.add_argument("--mock-latency-ms", type=float, default=2.0, help="per-op time on the mock")
    return p.parse_args()


def open_gpu(mock_latency_ms: float) -> ar.Backend:
    gpu = ar.open_backend("auto")
    if gpu.name != "mock":
        return gpu
    gpu.close()  # the born-done mock cannot overlap; use the threaded one
    return ar.open_backend("mock", latency=mock_latency_ms / 1e3)


async def main(args: argparse.Namespace) -> None:
    async with open_gpu(args.mock_latency_ms) as gpu:
        kernel = gpu.kernel(gpu.builtin_module("vector_ops"), "scale_f32")
        nbytes = CHUNK * 4
        src = np.random.default_rng(1).standard_normal(args.chunks * CHUNK, dtype=np.float32)
        dst = np.zeros_like(src)
        up = gpu.create_stream()
        compute = gpu.create_stream()
        down = gpu.create_stream() if args.streams == 3 else up
        streams = {up, compute, down}
        slots = [gpu.alloc(nbytes) for _ in range(args.buffers)]
        uploaded, computed, downloaded = ([gpu.create_event() for _ in slots] for _ in range(3))
        # Per chunk: start and end of each stage, for device-side timing.
        marks = [[gpu.create_event(timing=True) for _ in range(6)] for _ in range(args.chunks)]

        # TRACE HOOK: wrap this loop in ``with gpu.trace("pipeline.json"):`` once
        # tracing (DESIGN.md section 9) is in the core, and print the path.
        for i in range(args.chunks):
            b = i % len(slots)
            part = slice(i * CHUNK, (i + 1) * CHUNK)
            m = marks[i]
            if i >= len(slots):
                gpu.stream_wait_event(up, downloaded[b])  # the slot is free again
            gpu.record_event(m[0], up)
            gpu.copy_h2d_async(src[part], slots[b], stream=up)
            gpu.record_event(m[1], up)
            gpu.record_event(uploaded[b], up)
            gpu.stream_wait_event(compute, uploaded[b])
            gpu.record_event(m[2], compute)
            gpu.launch(
                kernel,
                CHUNK // 256,
                256,
                [np.uint32(CHUNK), np.float32(3), slots[b]],
                stream=compute,
            )
            gpu.record_event(m[3], compute)
            gpu.record_event(computed[b], compute)
            gpu.stream_wait_event(down, computed[b])
            gpu.record_event(m[4], down)
            gpu.copy_d2h_async(slots[b], dst[part], stream=down)
            gpu.record_event(m[5], down)
            gpu.record_event(downloaded[b], down)
        for s in streams:
            await s

        assert np.array_equal(dst, src * np.float32(3)), "the pipeline computed a wrong result"
        h2d = sum(gpu.elapsed_ms(m[0], m[1]) for m in marks)
        kernels = sum(gpu.elapsed_ms(m[2], m[3]) for m in marks)
        d2h = sum(gpu.elapsed_ms(m[4], m[5]) for m in marks)
        achieved = max(gpu.elapsed_ms(marks[0][0], m[5]) for m in marks)
        # Each stream runs its ops in order, so the busiest stream bounds the
        # whole (a device with a single copy engine adds H2D and D2H together).
        ideal = max(h2d, kernels, d2h) if args.streams == 3 else max(h2d + d2h, kernels)

        for ev in [*uploaded, *computed, *downloaded, *(e for m in marks for e in m)]:
            ev.close()
        for s in streams:
            s.close()
        for p in slots:
            gpu.free(p)

        print(
            f"{gpu.name}: {args.chunks} chunks of {nbytes >> 20} MiB, {len(slots)} buffers, "
            f"{len(streams)} streams"
        )
        print(
            f"  stages: H2D {h2d:.2f} ms, kernels {kernels:.2f} ms, D2H {d2h:.2f} ms "
            f"(serial {h2d + kernels + d2h:.2f} ms)"
        )
        print(
            f"  achieved {achieved:.2f} ms vs ideal bound {ideal:.2f} ms: "
            f"{ideal / achieved:.0%} of ideal"
        )


if __name__ == "__main__":
    arguments = parse()
    loop = "trio" if arguments.trio else os.environ.get("ARUNTIME_LOOP", "asyncio")
    anyio.run(main, arguments, backend=loop)
