"""The cost of awaiting a mock op against a bare checkpoint, on asyncio and trio.

Each round times a block of awaits of a 4 KiB mock ``copy_h2d_async``
(enqueue and await, as user code writes it) beside a block of as many bare
``await anyio.lowlevel.checkpoint()``, in both orders.  The figure is the
median of the blocks' ratios; the target is at most 1.5x.

    python benchmarks/bench_await.py [--quick] [--rounds N]
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import anyio
import anyio.lowlevel
import numpy as np
from _harness import console, median, parse_args, table, verdict

import aruntime as ar

TARGET = 1.5
NBYTES = 4096

# Everything measured runs on this one thread (mock ops finish at enqueue), so
# the thread's CPU time is the cost, and other processes' load does not leak
# into it the way it does into wall time.  Fall back where the clock is coarse.
_fine = time.get_clock_info("thread_time").resolution <= 1e-6
clock = time.thread_time if _fine else time.perf_counter
CLOCK_NAME = "thread CPU time" if _fine else "wall time"


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
        for r in range(rounds):
            log.clear()
            # Short blocks, alternating which goes first, so that load from
            # other processes falls on both sides of each ratio alike.
            for first_bare in (r % 2 == 0, r % 2 == 1):
                t0 = clock()
                if first_bare:
                    for _ in range(iterations):
                        await checkpoint()
                else:
                    for _ in range(iterations):
                        await gpu.copy_h2d_async(host, dptr, stream=stream)
                t1 = clock()
                if first_bare:
                    for _ in range(iterations):
                        await gpu.copy_h2d_async(host, dptr, stream=stream)
                else:
                    for _ in range(iterations):
                        await checkpoint()
                t2 = clock()
                b, c = (t1 - t0, t2 - t1) if first_bare else (t2 - t1, t1 - t0)
                bare.append(b / iterations)
                copy.append(c / iterations)
                ratios.append(c / b)
        log.clear()
        stream.close()
        gpu.free(dptr)
    return median(bare), median(copy), median(ratios)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(__doc__.splitlines()[0], argv)
    rounds = args.rounds or (2 if args.quick else 41)
    iterations = 500 if args.quick else 2_000
    t = table(
        f"await mock copy_h2d_async({NBYTES} B) vs await anyio.lowlevel.checkpoint() "
        f"({CLOCK_NAME}, median of {2 * rounds} blocks of {iterations})",
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
