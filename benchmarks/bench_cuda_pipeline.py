"""A 3-stream H2D -> kernel -> D2H pipeline against the same work on one stream, on cuda-sim.

The sim's timing model makes every op take about ``--stage-ms`` (a fixed
per-op latency; copy bandwidth unlimited), and its H2D copy engine, compute
engine and D2H copy engine run concurrently, as on a GPU with two DMA
engines.  With N chunks the ideal overlapped time is (N + 2) stages; one
stream needs 3N.  Printed: both times, the ideal, and achieved/ideal
efficiency (target at least 0.9).  bench_backends.py prints the same for
levelzero-sim beside it.

    PYTHONPATH=. python benchmarks/bench_cuda_pipeline.py [--chunks 24] [--stage-ms 2]
"""

from __future__ import annotations

import argparse

import anyio
from _harness import NOISE, mark
from _simbench import ideal_overlap_ms, pipeline_ms

QUICK_ARGV = ["--chunks", "4", "--stage-ms", "1"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=24)
    parser.add_argument("--stage-ms", type=float, default=2.0)
    args = parser.parse_args(argv)
    one = anyio.run(pipeline_ms, "cuda-sim", args.chunks, args.stage_ms, 1)
    three = anyio.run(pipeline_ms, "cuda-sim", args.chunks, args.stage_ms, 3)
    ideal = ideal_overlap_ms(args.chunks, args.stage_ms)
    print(f"{args.chunks} chunks, ~{args.stage_ms} ms per stage on cuda-sim")
    print(f"one stream   {one:8.1f} ms (serial bound {3 * args.chunks * args.stage_ms:.1f})")
    print(f"three streams{three:8.1f} ms (ideal overlap {ideal:.1f})")
    # The ideal is the least time the work can take: the fraction is at most 1.
    efficiency = min(1.0, ideal / three)
    print(
        f"overlap, ideal / three-stream time (1 = perfect overlap): {efficiency:.2f}, "
        f"target >= 0.9 {mark(efficiency >= 0.9)}; speed-up over one stream {one / three:.2f}x"
    )
    print(NOISE)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
