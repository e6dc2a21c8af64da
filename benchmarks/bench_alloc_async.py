"""Per-request allocation in an async server loop: alloc_async/free_async against alloc/free.

Each request does what examples/async_server does: take a stream from a
pool, allocate its buffer, upload, run ``scale_f32``, download, free,
awaiting each step, with one request per stream at a time and all requests
in flight at once.  The two variants differ only in the allocation:
``alloc``/``free`` against ``alloc_async``/``free_async`` on the request's
stream.  Two cases: every buffer 64 KiB, and buffer sizes that vary (a fixed
pseudo-random sequence between 1 KiB and 1 MiB), where a pool that reused
blocks only for equal sizes would keep allocating; the work stays on the
first 64 KiB at most, so that the cases differ in the allocations only.
Throughput is requests per second of wall time; rounds alternate the two
variants and the figure is the median of the rounds' ratios (stream-ordered
over plain).  "held" is the most device memory that the stream-ordered
rounds left taken (in use or kept idle by the pool) at their end.

On the sims every op costs ``--latency-us`` of device time (the timing
model), so requests overlap as on a GPU.  A plain ``free`` reaches
``cuMemFree`` once the queued work is done, and the CUDA driver (and
cuda-sim) synchronise the whole device there; ``alloc_async`` is served from
a pool in the stream's order and never reaches the driver's free.

    python benchmarks/bench_alloc_async.py [--quick] [--rounds N] [--backends LIST]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from contextlib import nullcontext

import anyio
import numpy as np
from _harness import console, median, table
from _simbench import timing

import aruntime as ar

QUICK_ARGV = ["--quick"]
ELEMENTS = 16 * 1024  # float32: 64 KiB per request
VARYING = (1 << 10, 1 << 20)  # bytes
BLOCK = 256


def _args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few requests and rounds")
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--requests", type=int, default=None, help="requests per round")
    parser.add_argument("--streams", type=int, default=8, help="requests in flight at once")
    parser.add_argument("--latency-us", type=float, default=200.0, help="sim device time per op")
    parser.add_argument("--backends", default="cuda-sim,levelzero-sim,mock")
    return parser.parse_args(argv)


def _sizes(varying: bool, count: int = 256) -> list[int]:
    """The requests' buffer sizes in bytes, used in turn."""
    if not varying:
        return [ELEMENTS * 4]
    rng = np.random.default_rng(20261203)
    return [int(n) for n in rng.integers(*VARYING, size=count)]


async def _serve(
    gpu: ar.Backend,
    kernel: ar.Kernel,
    streams: list[ar.Stream],
    sizes: list[int],
    requests: int,
    ordered: bool,
) -> float:
    """Requests per second of one round."""
    idle_send, idle_receive = anyio.create_memory_object_stream[ar.Stream](len(streams))
    for stream in streams:
        idle_send.send_nowait(stream)
    ones = np.ones(ELEMENTS, np.float32)

    async def request(nbytes: int) -> None:
        values = ones[: min(ELEMENTS, nbytes // 4)]
        grid = (values.size + BLOCK - 1) // BLOCK
        stream = await idle_receive.receive()
        try:
            ptr = gpu.alloc_async(nbytes, stream) if ordered else gpu.alloc(nbytes)
            try:
                await gpu.copy_h2d_async(values, ptr, stream=stream)
                args = [np.uint32(values.size), np.float32(2), ptr]
                await gpu.launch(kernel, grid, BLOCK, args, stream=stream)
                out = await gpu.copy_d2h_async(ptr, np.empty_like(values), stream=stream)
                assert out[-1] == 2.0
            finally:
                if ordered:
                    gpu.free_async(ptr, stream)
                else:
                    gpu.free(ptr)
        finally:
            idle_send.send_nowait(stream)

    start = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for i in range(requests):
            tg.start_soon(request, sizes[i % len(sizes)])
    elapsed = time.perf_counter() - start
    idle_send.close()
    idle_receive.close()
    return requests / elapsed


async def _measure(
    name: str, args: argparse.Namespace, varying: bool
) -> tuple[float, float, float, int]:
    """Median requests/s of (alloc/free, alloc_async/free_async), the median ratio,
    and the most device memory the stream-ordered rounds left held (the pool's)."""
    rounds = args.rounds or (2 if args.quick else 7)
    requests = args.requests or (32 if args.quick else 400)
    options = {"latency": args.latency_us / 1e6} if name == "mock" else {}
    async with ar.open_backend(name, **options) as gpu:
        kernel = gpu.kernel(gpu.builtin_module("vector_ops"), "scale_f32")
        streams = [gpu.create_stream() for _ in range(args.streams)]
        sizes = _sizes(varying)
        free_at_start = gpu.device_free_memory()
        held = 0
        plain: list[float] = []
        ordered: list[float] = []
        await _serve(gpu, kernel, streams, sizes, args.streams, True)  # warm both paths up
        await _serve(gpu, kernel, streams, sizes, args.streams, False)
        for r in range(rounds):
            # Alternating order, so that load from elsewhere hits both alike.
            for flag in (r % 2 == 0, r % 2 != 0):
                (ordered if flag else plain).append(
                    await _serve(gpu, kernel, streams, sizes, requests, flag)
                )
                if flag:
                    held = max(held, free_at_start - gpu.device_free_memory())
        for stream in streams:
            stream.close()
    ratios = [o / p for o, p in zip(ordered, plain, strict=True)]
    return median(plain), median(ordered), median(ratios), held


def main(argv: list[str] | None = None) -> int:
    args = _args(argv)
    out = table(
        f"Per-request allocation, {args.streams} requests in flight, "
        f"{args.latency_us:g} us device time per op",
        [
            "backend",
            "sizes",
            "alloc/free req/s",
            "alloc_async req/s",
            "ratio",
            "held MiB",
        ],
    )
    for name in args.backends.split(","):
        try:
            ar.open_backend(name, **({"latency": 0.001} if name == "mock" else {})).close()
        except ar.BackendUnavailableError as exc:
            console.print(f"{name}: unavailable ({exc})")
            continue
        for varying in (False, True):
            sizes = (
                f"{VARYING[0] >> 10} KiB - {VARYING[1] >> 20} MiB"
                if varying
                else f"{ELEMENTS * 4 >> 10} KiB"
            )
            with timing(name, 0.0, args.latency_us) if name.endswith("-sim") else nullcontext():
                plain, ordered, ratio, held = anyio.run(_measure, name, args, varying)
            out.add_row(
                name,
                sizes,
                f"{plain:,.0f}",
                f"{ordered:,.0f}",
                f"{ratio:.2f}x",
                f"{held / (1 << 20):,.1f}",
            )
    console.print(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
