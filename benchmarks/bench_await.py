"""The cost of awaiting a mock op against a bare checkpoint, on asyncio and trio.

Each round times a block of awaits of a 4 KiB mock ``copy_h2d_async``
(enqueue and await, as user code writes it) beside a block of as many bare
``await anyio.lowlevel.checkpoint()``, in alternating order.  The figure is
the median of the rounds' ratios; the target is at most 1.5x, both with a
stream of the benchmark's own (``stream=s``, rows "own") and with the default
stream (no ``stream=``, rows "dflt").  A last column
times the await alone (ops enqueued before the clock starts), to show how the
cost splits between enqueueing and awaiting.  A second table breaks the
enqueue down: argument validation (the host buffer view), the ledger's
pointer check, the mock driver's copy and call log, and the rest
(submission: resolve the stream, its lock, the capture and tracing checks,
the finished Completion), each timed alone on the same thread.

    python benchmarks/bench_await.py [--quick] [--rounds N]
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import anyio
import anyio.lowlevel
import numpy as np
from _harness import NOISE, console, median, parse_args, table, verdict

import aruntime as ar
from aruntime._validate import as_host_view

TARGET = 1.5
NBYTES = 4096

# Everything measured runs on this one thread (mock ops finish at enqueue), so
# the thread's CPU time is the cost, and other processes' load does not leak
# into it the way it does into wall time.  Fall back where the clock is coarse.
_fine = time.get_clock_info("thread_time").resolution <= 1e-6
clock = time.thread_time if _fine else time.perf_counter
CLOCK_NAME = "thread CPU time" if _fine else "wall time"


async def _measure(rounds: int, iterations: int, explicit: bool) -> dict[str, float]:
    """Median per-await seconds of each side, and the median per-block ratios.

    ``explicit``: the copies name a stream of their own (``stream=``); else
    they go to the backend's default stream.
    """
    checkpoint = anyio.lowlevel.checkpoint
    host = np.arange(NBYTES, dtype=np.uint8)
    samples: dict[str, list[float]] = {k: [] for k in ("bare", "copy", "await", "ratio", "ar")}
    async with ar.open_backend("mock") as gpu:
        dptr = gpu.alloc(NBYTES)
        stream = gpu.create_stream() if explicit else None
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
        if stream is not None:
            stream.close()
        gpu.free(dptr)
    return {k: median(v) for k, v in samples.items()}


def _breakdown(rounds: int, iterations: int) -> dict[str, float]:
    """Median per-op seconds of each piece of a mock ``copy_h2d_async`` enqueue."""
    host = np.arange(NBYTES, dtype=np.uint8)
    fn = "copy_h2d_async"
    with ar.open_backend("mock") as gpu:
        dptr = gpu.alloc(NBYTES)
        stream = gpu.create_stream()
        log = gpu.driver.call_log
        view = as_host_view(host, fn, writable=False)
        ledger = gpu._ledger  # the benchmark times the core's own pieces
        memcpy = gpu.driver.memcpy_h2d
        address, handle = dptr.address, stream.handle
        enqueue = gpu.copy_h2d_async

        def piece(body: Callable[[], object]) -> float:
            t0 = clock()
            for _ in range(iterations):
                body()
            return clock() - t0

        pieces: dict[str, Callable[[], object]] = {
            "nothing": lambda: None,  # the loop and the call, taken off the others
            "validation": lambda: as_host_view(host, fn, writable=False),
            "ledger": lambda: ledger.check_range(dptr, NBYTES, fn, "dst"),
            "mock copy+log": lambda: memcpy(view, address, handle),
            "enqueue total": lambda: enqueue(host, dptr, stream),
        }
        samples: dict[str, list[float]] = {k: [] for k in pieces}
        for r in range(rounds + 2):
            log.clear()
            for name, body in pieces.items():
                t = piece(body) / iterations
                if r >= 2:  # two warm-up rounds
                    samples[name].append(t)
        log.clear()
        stream.close()
        gpu.free(dptr)
    m = {k: median(v) for k, v in samples.items()}
    base = m.pop("nothing")
    out = {k: max(0.0, v - base) for k, v in m.items()}
    out["submission"] = max(
        0.0, out["enqueue total"] - out["validation"] - out["ledger"] - out["mock copy+log"]
    )
    return out


def _add_row(t: Any, label: str, m: dict[str, float]) -> None:
    t.add_row(
        label,
        f"{m['bare'] * 1e6:.2f}",
        f"{m['copy'] * 1e6:.2f}",
        f"{m['ratio']:.2f}x " + verdict(m["ratio"], TARGET, at_most=True).split(" (")[0],
        f"{m['await'] * 1e6:.2f}",
        f"{m['ar']:.2f}x",
    )


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
        ["loop, stream", "checkpoint", "enqueue+await", "ratio", "await only", "ratio"],
    )
    for loop in ("asyncio", "trio"):
        for explicit in (True, False):
            m = anyio.run(_measure, rounds, iterations, explicit, backend=loop)
            _add_row(t, f"{loop} {'own' if explicit else 'dflt'}", m)
    console.print(t)
    console.print(f"A target's row ends in met or MISSED.  {NOISE}")
    parts = _breakdown(rounds, iterations)
    b = table(
        f"enqueue of one mock copy_h2d_async({NBYTES} B), by piece: us of {CLOCK_NAME} "
        f"per op, median of {rounds} rounds of {iterations}",
        ["piece", "us", "share"],
    )
    total = parts["enqueue total"]
    for name in ("validation", "ledger", "mock copy+log", "submission", "enqueue total"):
        share = parts[name] / total if total else 0.0
        b.add_row(name, f"{parts[name] * 1e6:.2f}", f"{share:.0%}")
    console.print(b)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
