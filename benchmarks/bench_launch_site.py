"""What a sim's launch site costs a kernel launch: the user's ``file:line`` handed to the sim.

Before each launch on cuda-sim and levelzero-sim, aruntime hands the sim the
line that launched the kernel, so that a fault names it
(``aruntime/backends/_sim_faults.py``).  A GPU backend has no such hook.  In
one process per sim, under asyncio, blocks of launches of a one-block
``iota_u32`` alternate between the hook in place and the hook taken out;
each figure is the host thread's CPU time per launch (``time.thread_time``,
which the sims' engine threads do not add to), the median over rounds.  The
hook's cost is the difference, paired by round.  Nothing is asserted about
time.

    PYTHONPATH=. python benchmarks/bench_launch_site.py [--quick] [--rounds N]
"""

from __future__ import annotations

import statistics
import sys
import time
from typing import Any

import anyio
import numpy as np
from _harness import NOISE, SKIPPED, console, parse_args, reason, run_worker, table, worker_result

import aruntime as ar

BACKENDS = ("cuda-sim", "levelzero-sim")
#: Arguments for a smoke run (``aruntime bench --quick``).
QUICK_ARGV = ["--quick"]
BLOCK = 200


async def _measure(backend: str, rounds: int) -> dict[str, float]:
    async with ar.open_backend(backend) as gpu:
        stream = gpu.create_stream()
        out = gpu.alloc(32 * 4)
        kernel = gpu.kernel(gpu.builtin_module("vector_ops"), "iota_u32")
        args = [np.uint32(32), np.uint32(0), out]
        await gpu.launch(kernel, 1, 32, args, stream=stream)
        driver: Any = gpu.driver
        hook = driver._note_launch_site
        if hook is None:
            raise RuntimeError(f"{backend} has no launch-site hook")
        with_site: list[float] = []
        without: list[float] = []
        try:
            for _ in range(rounds):
                for sample, installed in ((with_site, hook), (without, None)):
                    driver._note_launch_site = installed
                    start = time.thread_time()
                    for _ in range(BLOCK):
                        gpu.launch(kernel, 1, 32, args, stream=stream)
                    sample.append((time.thread_time() - start) / BLOCK * 1e6)
                    await gpu.synchronize(stream)
        finally:
            driver._note_launch_site = hook
        got = await gpu.copy_d2h_async(out, np.empty(32, np.uint32), stream=stream)
        assert np.array_equal(got, np.arange(32, dtype=np.uint32)), got
        gpu.free(out)
        stream.close()
    site = [a - b for a, b in zip(with_site, without, strict=True)]
    return {
        "with": statistics.median(with_site),
        "without": statistics.median(without),
        "site": statistics.median(site),
    }


def main(argv: list[str] | None = None) -> int:
    args_in = list(sys.argv[1:] if argv is None else argv)
    if args_in[:1] == ["--worker"]:
        backend, rounds = args_in[1], int(args_in[2])
        worker_result(anyio.run(_measure, backend, rounds))
        return 0
    args = parse_args(__doc__.splitlines()[0], args_in)
    rounds = args.rounds or (3 if args.quick else 15)
    results: dict[str, dict[str, Any] | str] = {}
    for backend in BACKENDS:
        try:
            ar.open_backend(backend).close()
        except ar.AruntimeError as exc:
            results[backend] = f"skipped: {reason(exc)}"
            continue
        results[backend] = run_worker(__file__, [backend, str(rounds)])
    if all(isinstance(r, str) and r.startswith("skipped") for r in results.values()):
        for backend, why in results.items():
            console.print(f"{backend}: {why}")
        return SKIPPED
    t = table(
        f"A sim's launch site: host CPU per launch, median of {rounds} rounds of {BLOCK} (us)",
        ["backend", "with the site", "without", "the site", "share"],
    )
    failed = False
    for backend, r in results.items():
        if isinstance(r, str):
            failed = failed or not r.startswith("skipped")
            t.add_row(backend, r, "", "", "")
            continue
        share = r["site"] / r["with"] if r["with"] else 0.0
        t.add_row(
            backend, f"{r['with']:.2f}", f"{r['without']:.2f}", f"{r['site']:.2f}", f"{share:.0%}"
        )
    console.print(t)
    console.print(NOISE)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
