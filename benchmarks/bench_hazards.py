"""The cost of stream-race checking: an awaited 4 KiB copy with ``check_hazards`` on and off.

Each round times a block of awaited ``copy_h2d_async`` calls (enqueue and
await, as user code writes it) on a backend opened with checking on beside
the same block on one opened with it off, in alternating order, on one
thread.  The figure is the median of the rounds' on/off ratios; the target
on the mock is at most 2x (docs/testing.md, "Stream races").  The sims are
timed the same way (wall time: their ops finish on other threads), to show
what checking costs beside a device that does real work per op.

    python benchmarks/bench_hazards.py [--quick] [--rounds N]
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import anyio
import numpy as np
from _harness import console, median, parse_args, reason, table, verdict

import aruntime as ar

TARGET = 2.0
NBYTES = 4096
BACKENDS = ("mock", "cuda-sim", "levelzero-sim")

_fine = time.get_clock_info("thread_time").resolution <= 1e-6


async def _measure(kind: str, rounds: int, iterations: int) -> dict[str, float]:
    """Median per-copy seconds with checking off and on, and the median ratio."""
    # The mock finishes ops on this thread: its CPU time is the cost.  The
    # sims finish them on their own threads, so for them it is wall time.
    clock = time.thread_time if kind == "mock" and _fine else time.perf_counter
    host = np.arange(NBYTES, dtype=np.uint8)
    samples: dict[str, list[float]] = {"off": [], "on": [], "ratio": []}
    off = ar.open_backend(kind, check_hazards=False)
    on = ar.open_backend(kind, check_hazards=True)
    try:
        sides = []
        for gpu in (off, on):
            sides.append((gpu, gpu.alloc(NBYTES), gpu.create_stream()))

        async def block(side: int) -> float:
            gpu, dptr, stream = sides[side]
            log = getattr(gpu.driver, "call_log", None)
            if log is not None:
                log.clear()  # the mock logs every op; keep it from growing
            t0 = clock()
            for _ in range(iterations):
                await gpu.copy_h2d_async(host, dptr, stream=stream)
            return clock() - t0

        for _ in range(2):  # warm every path up
            await block(0), await block(1)
        for r in range(rounds):
            # Alternating order, so that load from other processes falls on
            # both sides of each ratio alike.
            if r % 2:
                t_on, t_off = await block(1), await block(0)
            else:
                t_off, t_on = await block(0), await block(1)
            samples["off"].append(t_off / iterations)
            samples["on"].append(t_on / iterations)
            samples["ratio"].append(t_on / t_off)
        for gpu, dptr, stream in sides:
            stream.close()
            gpu.free(dptr)
    finally:
        off.close()
        on.close()
    return {k: median(v) for k, v in samples.items()}


#: Arguments for a smoke run (``aruntime bench --quick``).
QUICK_ARGV = ["--quick"]


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(__doc__.splitlines()[0], argv)
    rounds = args.rounds or (3 if args.quick else 31)
    iterations = 100 if args.quick else 500
    t = table(
        f"await copy_h2d_async({NBYTES} B), check_hazards on vs off (asyncio): us per "
        f"copy, median of {rounds} rounds of {iterations}; target on the mock <= {TARGET}x",
        ["backend", "off", "on", "on / off"],
    )
    for kind in BACKENDS:
        try:
            m = anyio.run(_measure, kind, rounds, iterations)
        except ar.BackendUnavailableError as exc:
            t.add_row(kind, "-", "-", f"unavailable: {reason(exc)}")
            continue
        ratio = f"{m['ratio']:.2f}x"
        if kind == "mock":
            ratio += " " + verdict(m["ratio"], TARGET, at_most=True).split(" (")[0]
        t.add_row(kind, f"{m['off'] * 1e6:.2f}", f"{m['on'] * 1e6:.2f}", ratio)
    console.print(t)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
