"""The event loop's longest stall during a 64 MiB pageable ``copy_h2d_async`` on cuda-sim.

A ticker task records the longest gap between its wake-ups while the copy is
enqueued and awaited.  Compared side by side:

* aruntime's policy (large pageable copies staged through pinned memory by
  a native host function, so the enqueue returns at once);
* the naive binding: ``cuMemcpyHtoDAsync_v2`` straight from pageable memory,
  which the driver (NVIDIA's, and the sim, which copies its behaviour) stages
  on the calling thread, blocking the loop for about the copy's length.

The sim's copy engine is set to ``--gbps`` so that the copy takes real time.

    PYTHONPATH=. python benchmarks/bench_cuda_pageable.py [--gbps 4] [--mib 64]
"""

from __future__ import annotations

import argparse
import asyncio

from _simbench import pageable_stall

QUICK_ARGV = ["--mib", "4"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gbps", type=float, default=4.0)
    parser.add_argument("--mib", type=int, default=64)
    args = parser.parse_args(argv)
    rows = [
        (label, *asyncio.run(pageable_stall(args.mib, args.gbps, naive=naive)))
        for label, naive in (("aruntime (staged)", False), ("naive binding", True))
    ]
    print(f"{args.mib} MiB pageable copy_h2d_async on cuda-sim at {args.gbps} GB/s (asyncio)")
    print(f"{'path':20} {'longest stall ms':>17} {'copy ms':>9}")
    for label, stall, total in rows:
        print(f"{label:20} {stall:17.2f} {total:9.2f}")
    print(f"stall ratio aruntime/naive: {rows[0][1] / rows[1][1]:.3f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
