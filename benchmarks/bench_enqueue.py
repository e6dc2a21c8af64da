"""What one small op costs the host on each backend: enqueue, and enqueue then await.

A 64-byte ``memset_async`` on an idle stream of its own, on the mock,
cuda-sim and levelzero-sim side by side (each in its own process), under
asyncio and trio:

* ``enqueue``: ops enqueued back to back, not awaited (the stream drained
  after each block, untimed);
* ``enqueue + await``: each op awaited before the next is enqueued, back to
  back;
* ``... 1 ms apart``: the same, each op 1 ms after the last, so that caches
  and threads have gone cold, as in an application between requests;
* ``checkpoint``: a bare ``await anyio.lowlevel.checkpoint()``, the least an
  await can cost.

Wall time, median of the rounds' per-op means (``1 ms apart``: median of
single ops).  Beside each sim's figure, the ratio to the mock's in the same
run: what the sim's driver and its completion path add to the core's own
Python, which the mock has alone.  Nothing is asserted about time.

    PYTHONPATH=. python benchmarks/bench_enqueue.py [--quick] [--backends mock,cuda-sim]
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import anyio
import anyio.lowlevel
from _harness import NOISE, run_worker, worker_result

import aruntime as ar

BACKENDS = ("mock", "cuda-sim", "levelzero-sim")
LOOPS = ("asyncio", "trio")
#: Arguments for a smoke run (``aruntime bench --quick``).
QUICK_ARGV = ["--quick"]
ROWS = ("enqueue", "enqueue + await", "enqueue + await, 1 ms apart", "checkpoint")


async def _measure_loop(backend: str, block: int, rounds: int, spaced: int) -> dict[str, float]:
    """Microseconds per op for each of :data:`ROWS`, on the running loop."""
    clock = time.perf_counter
    checkpoint = anyio.lowlevel.checkpoint
    async with ar.open_backend(backend) as gpu:
        dev = gpu.alloc(64)
        with gpu.create_stream() as stream:
            for _ in range(200):  # warm-up: markers, waiter, caches
                await gpu.memset_async(dev, 0, 64, stream=stream)
            samples: dict[str, list[float]] = {row: [] for row in ROWS}
            for _ in range(rounds):
                start = clock()
                for _ in range(block):
                    gpu.memset_async(dev, 1, 64, stream=stream)
                samples["enqueue"].append((clock() - start) / block)
                await stream.synchronize()
                start = clock()
                for _ in range(block):
                    await gpu.memset_async(dev, 2, 64, stream=stream)
                samples["enqueue + await"].append((clock() - start) / block)
                start = clock()
                for _ in range(block):
                    await checkpoint()
                samples["checkpoint"].append((clock() - start) / block)
            for _ in range(spaced):
                await anyio.sleep(0.001)
                start = clock()
                await gpu.memset_async(dev, 3, 64, stream=stream)
                samples["enqueue + await, 1 ms apart"].append(clock() - start)
            if backend == "mock":
                gpu.driver.call_log.clear()  # type: ignore[attr-defined]
        gpu.free(dev)
    return {row: statistics.median(values) * 1e6 for row, values in samples.items()}


def _measure(backend: str, quick: bool) -> dict[str, Any]:
    block, rounds, spaced = (200, 5, 50) if quick else (2_000, 15, 400)
    return {
        loop: anyio.run(_measure_loop, backend, block, rounds, spaced, backend=loop)
        for loop in LOOPS
    }


def _print_table(results: dict[str, dict[str, Any] | str]) -> None:
    ok = {b: r for b, r in results.items() if not isinstance(r, str)}
    mock = ok.get("mock")
    columns = list(results)
    cells: dict[str, dict[str, str]] = {}
    for loop in LOOPS:
        for row in ROWS:
            label = f"{row} us [{loop}]"
            cells[label] = {}
            for backend, r in ok.items():
                value = r[loop][row]
                text = f"{value:.1f}"
                if mock is not None and backend != "mock" and row != "checkpoint":
                    text += f" ({value / mock[loop][row]:.2f}x mock)"
                cells[label][backend] = text
    width = max(len(label) for label in cells)
    widths = [max([len(c)] + [len(v.get(c, "")) for v in cells.values()]) for c in columns]
    print("64-byte memset_async on an idle stream: wall us per op, medians")
    print(f"{'':{width}}  " + "  ".join(f"{c:>{w}}" for c, w in zip(columns, widths, strict=True)))
    for label, values in cells.items():
        row_cells = "  ".join(
            f"{values.get(c, '-'):>{w}}" for c, w in zip(columns, widths, strict=True)
        )
        print(f"{label:{width}}  {row_cells}")
    for backend, r in results.items():
        if isinstance(r, str):
            print(f"{backend}: {r}")
    print(NOISE)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (smoke test)")
    parser.add_argument("--backends", default=",".join(BACKENDS))
    parser.add_argument("--worker", metavar="BACKEND", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker_result(_measure(args.worker, args.quick))
        return 0
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    quick = ["--quick"] if args.quick else []
    results = {b: run_worker(__file__, [b, *quick]) for b in backends}
    _print_table(results)
    return 0 if all(not isinstance(r, str) for r in results.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
