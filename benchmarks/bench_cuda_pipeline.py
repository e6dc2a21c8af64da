"""A 3-stream H2D -> kernel -> D2H pipeline against the same work on one stream, on cuda-sim.

The sim's timing model makes every op take about ``--stage-ms`` (a fixed
per-op latency; copy bandwidth unlimited), and its H2D copy engine, compute
engine and D2H copy engine run concurrently, as on a GPU with two DMA
engines.  With N chunks the ideal overlapped time is (N + 2) stages; one
stream needs 3N.  Printed: both times, the ideal, and achieved/ideal
efficiency (target at least 0.9).

    PYTHONPATH=. python benchmarks/bench_cuda_pipeline.py [--chunks 24] [--stage-ms 2]
"""

from __future__ import annotations

import argparse
import ctypes
import time

import anyio
import numpy as np


async def _run(chunks: int, stage_ms: float, streams_used: int) -> float:
    import aruntime
    from aruntime._native import native_library_path

    sim = ctypes.CDLL(str(native_library_path("libcuda.so.1")))
    gpu = aruntime.open_backend("cuda-sim")
    n = 1 << 14  # floats per chunk
    streams = [gpu.create_stream() for _ in range(streams_used)]
    scale = gpu.kernel(gpu.builtin_module(), "scale_f32")
    host_in = [gpu.alloc_host_pinned(4 * n) for _ in range(chunks)]
    host_out = [gpu.alloc_host_pinned(4 * n) for _ in range(chunks)]
    for i, buf in enumerate(host_in):
        buf.view(np.float32)[:] = i
    dev = [gpu.alloc(4 * n) for _ in range(streams_used)]

    async def pipeline() -> float:
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

    await pipeline()  # warm-up, untimed: waiter threads, marker events, kernel lookup
    for buf in host_out:
        buf[:] = 0  # so the timed run's output is checked afresh
    sim.arsim_set_timing(ctypes.c_double(0.0), ctypes.c_double(stage_ms * 1000.0))
    try:
        elapsed = await pipeline()
    finally:
        sim.arsim_set_timing(ctypes.c_double(0.0), ctypes.c_double(0.0))
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=24)
    parser.add_argument("--stage-ms", type=float, default=2.0)
    args = parser.parse_args(argv)
    one = anyio.run(_run, args.chunks, args.stage_ms, 1)
    three = anyio.run(_run, args.chunks, args.stage_ms, 3)
    ideal = (args.chunks + 2) * args.stage_ms
    print(f"{args.chunks} chunks, ~{args.stage_ms} ms per stage on cuda-sim")
    print(f"one stream   {one:8.1f} ms (serial bound {3 * args.chunks * args.stage_ms:.1f})")
    print(f"three streams{three:8.1f} ms (ideal overlap {ideal:.1f})")
    print(
        f"overlap efficiency ideal/achieved: {ideal / three:.2f} (target >= 0.9); "
        f"speed-up over one stream {one / three:.2f}x"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
