"""The cost of awaiting a mock op against a bare checkpoint, on asyncio and trio.

Each round times ``iterations`` awaits of a 4 KiB mock ``copy_h2d_async``
(enqueue and await, as user code writes it) right after as many bare
``await anyio.lowlevel.checkpoint()``.  The figure is the median of the
rounds' ratios; the target is at most 1.5x.

    python benchmarks/bench_await.py [--quick] [--rounds N]
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import anyio
import anyio.lowlevel
import numpy as np

import aruntime as ar

from _harness import console, median, parse_args, table, verdict

TARGET = 1.5
NBYTES = 4096


async def _measure(rounds: int, iterations: int) -> tuple[float, float, float]:
    """Median per-await seconds (checkpoint, copy) and the median per-round ratio."""
    checkpoint = anyio.lowlevel.checkpoint
    host = np.arange(NBYTES, dtype=np.uint8)
    bare: list[float] = []
    copy: list[float] = []
    ratios: list[float] = []
    async with ar.open_backend("mock") as gpu:
        dptr = gpu.alloc(NBYTES)
        stream = gpu.create_stream()
        log = gpu.driver.call_log  # the mock logs every op; keep it from growing
        for _ in range(iterations // 10):  # warm both paths up
            await checkpoint()
            await gpu.copy_h2d_async(host, dptr, stream=stream)
        for _ in range(rounds):
            log.clear()
            t0 = time.perf_counter()
            for _ in range(iterations):
                await checkpoint()
            t1 = time.perf_counter()
            for _ in range(iterations):
                await gpu.copy_h2d_async(host, dptr, stream=stream)
            t2 = time.perf_counter()
            bare.append((t1 - t0) / iterations)
            copy.append((t2 - t1) / iterations)
            ratios.append((t2 - t1) / (t1 - t0))
        log.clear()
        stream.close()
        gpu.free(dptr)
    return median(bare), median(copy), median(ratios)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(__doc__.splitlines()[0], argv)
    rounds = args.rounds or (3 if args.quick else 9)
    iterations = 500 if args.quick else 20_000
    t = table(
        f"await mock copy_h2d_async({NBYTES} B) vs await anyio.lowlevel.checkpoint() "
        f"(median of {rounds} rounds x {iterations})",
        ["event loop", "checkpoint (us)", "copy + await (us)", "ratio", "target"],
    )
    for loop in ("asyncio", "trio"):
        bare, copy, ratio = anyio.run(_measure, rounds, iterations, backend=loop)
        t.add_row(
            loop,
            f"{bare * 1e6:.2f}",
            f"{copy * 1e6:.2f}",
            f"{ratio:.2f}x",
            verdict(ratio, TARGET, at_most=True),
        )
    console.print(t)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
