"""The cost of awaiting a mock op against a bare checkpoint, on asyncio and trio.

Each round times a block of awaits of a 4 KiB mock ``copy_h2d_async``
(enqueue and await, as user code writes it) beside a block of as many bare
``await anyio.lowlevel.checkpoint()``, in alternating order.  The figure is
the median of the rounds' ratios; the target is at most 1.5x.  A last column
times the await alone (ops enqueued before the clock starts), to show how the
cost splits between enqueueing (validation, ledger, the mock's copy and call
log) and awaiting.

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


async def _measure(rounds: int, iterations: int) -> dict[str, float]:
    """Median per-await seconds of each side, and the median per-block ratios."""
    checkpoint = anyio.lowlevel.checkpoint
    host = np.arange(NBYTES, dtype=np.uint8)
    samples: dict[str, list[float]] = {k: [] for k in ("bare", "copy", "await", "ratio", "ar")}
    async with ar.open_backend("mock") as gpu:
        dptr = gpu.alloc(NBYTES)
        stream = gpu.create_stream()
        log = gpu.driver.call_log  # the mock logs every op; keep it from growing

        async def bare() -> float:
            t0 = clock()
            for _ in range(iterations):
                await checkpoint()
            return clock() - t0

        async def copy() -> float:  # what user code writes: enqueue, then await
            t0 = clock()
            for _ in range(iterations):
                await gpu.copy_h2d_async(host, dptr, stream=stream)
            return clock() - t0

        async def await_only() -> float:  # ops enqueued beforehand, untimed
            ops = [gpu.copy_h2d_async(host, dptr, stream=stream) for _ in range(iterations)]
            t0 = clock()
            for op in ops:
                await op
            return clock() - t0

        for _ in range(2):  # warm every path up
            await bare(), await copy(), await await_only()
        for r in range(rounds):
            log.clear()
            # Short blocks, in alternating order, so that load from other
            # processes falls on both sides of each ratio alike.
            if r % 2:
                c, a, b = await copy(), await await_only(), await bare()
            else:
                b, a, c = await bare(), await await_only(), await copy()
            samples["bare"].append(b / iterations)
            samples["copy"].append(c / iterations)
            samples["await"].append(a / iterations)
            samples["ratio"].append(c / b)
            samples["ar"].append(a / b)
        log.clear()
        stream.close()
        gpu.free(dptr)
    return {k: median(v) for k, v in samples.items()}


#: Arguments for a smoke run (``aruntime bench --quick``).
QUICK_ARGV = ["--quick"]


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(__doc__.splitlines()[0], argv)
    rounds = args.rounds or (3 if args.quick else 61)
    iterations = 300 if args.quick else 1_000
    t = table(
        f"await mock copy_h2d_async({NBYTES} B) vs await anyio.lowlevel.checkpoint(): "
        f"us of {CLOCK_NAME} per await, median of {rounds} rounds of {iterations}; "
        f"target <= {TARGET}x",
        ["loop", "checkpoint", "enqueue+await", "ratio", "await only", "ratio"],
    )
    for loop in ("asyncio", "trio"):
        m = anyio.run(_measure, rounds, iterations, backend=loop)
        t.add_row(
            loop,
            f"{m['bare'] * 1e6:.2f}",
            f"{m['copy'] * 1e6:.2f}",
            f"{m['ratio']:.2f}x " + verdict(m["ratio"], TARGET, at_most=True).split(" (")[0],
            f"{m['await'] * 1e6:.2f}",
            f"{m['ar']:.2f}x",
        )
    console.print(t)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
