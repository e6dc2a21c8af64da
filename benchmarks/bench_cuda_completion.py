"""Completion on cuda-sim: wake latency, event-loop CPU, and 10,000 concurrent awaits.

Printed side by side, on asyncio and on trio:

1. wake latency of ``await`` on a tiny op on an idle stream, against
   ``await anyio.to_thread.run_sync(completion.wait)`` (median of N runs);
   target at most 0.5x;
2. CPU time of the event-loop thread while it awaits a 200 ms op, as a share
   of one core; target at most 5%;
3. 10,000 tasks awaiting one op each over 64 streams: all complete, threads
   added (target at most 64 + 4), ops per second against the mock backend.

bench_backends.py prints the same figures for cuda-sim and levelzero-sim.

    PYTHONPATH=. python benchmarks/bench_cuda_completion.py [--runs 300]
"""

from __future__ import annotations

import argparse

import anyio
from _harness import NOISE, mark
from _simbench import loop_cpu, many, wake_latency

QUICK_ARGV = ["--runs", "5", "--tasks", "200"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--tasks", type=int, default=10_000)
    args = parser.parse_args(argv)
    for loop in ("asyncio", "trio"):
        direct, threaded = anyio.run(wake_latency, "cuda-sim", args.runs, backend=loop)
        cpu = anyio.run(loop_cpu, "cuda-sim", 200.0, backend=loop)
        sim = anyio.run(many, "cuda-sim", args.tasks, 64, backend=loop)
        mock = anyio.run(many, "mock", args.tasks, 64, backend=loop)
        print(f"--- {loop} ---")
        print(
            f"1. wake latency, median us: await {direct:.1f}, to_thread(wait) {threaded:.1f}"
            f" -> {direct / threaded:.2f}x (target <= 0.5x {mark(direct / threaded <= 0.5)})"
        )
        print(
            f"2. loop-thread CPU while awaiting a 200 ms op: {cpu.loop:.2f}% of a core "
            f"(target <= 5% {mark(cpu.loop <= 5.0)}); whole process {cpu.process:.2f}%"
        )
        print(
            f"3. {sim.done} tasks over 64 streams: {sim.ops_per_s:,.0f} ops/s on cuda-sim vs "
            f"{mock.ops_per_s:,.0f} on mock ({sim.ops_per_s / mock.ops_per_s:.2f}x); threads added "
            f"{sim.threads_added} (target <= 68 {mark(sim.threads_added <= 68)})"
        )
    print(NOISE)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
