"""Requests per second through Ray Serve against the same handler called in-process.

Both sides run :class:`Scaler` from ``examples/ray_serve/deployment.py`` on
cuda-sim (upload 1 KiB of float32, ``scale_f32``, download) with 32 requests
in flight: in-process, straight on one backend under anyio; through Serve,
over HTTP to two replicas on two sim devices of a local Ray cluster.  The
ratio is what the HTTP hop, the proxy and the router cost per request; on a
real cluster the replicas' devices add up, which one process cannot do.

    python benchmarks/bench_serve.py [--quick] [--rounds N]     (needs aruntime[ray])
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import numpy as np
from _harness import SKIPPED, console, median, parse_args, table

import aruntime as ar

# The example's modules import Ray, which is optional (aruntime[ray]): they are
# loaded in main, so that `aruntime bench` can report the skip.
EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "ray_serve"
INFLIGHT = 32
QUICK_ARGV = ["--quick"]


async def in_process(scaler_type: Any, n: int) -> float:
    """Requests per second with the handler called directly, ``INFLIGHT`` at a time."""
    values = np.arange(256, dtype=np.float32)
    async with ar.open_backend("cuda-sim") as gpu:
        scaler = scaler_type(gpu)
        limit = anyio.Semaphore(INFLIGHT)

        async def one() -> None:
            async with limit:
                out = await scaler.scale(values, 2.0)
            assert np.array_equal(out, values * 2)

        start = time.perf_counter()
        async with anyio.create_task_group() as tg:
            for _ in range(n):
                tg.start_soon(one)
        return n / (time.perf_counter() - start)


async def through_serve(client: Any, url: str, n: int) -> float:
    start = time.perf_counter()
    outcomes = await client.fire(url, n)
    elapsed = time.perf_counter() - start
    assert outcomes["ok"] == n, outcomes
    return n / elapsed


def main(argv: Sequence[str] | None = None) -> int | None:
    args = parse_args(__doc__.splitlines()[0], argv)
    try:
        import ray  # noqa: F401
    except ImportError:
        console.print("bench_serve needs Ray Serve: pip install 'aruntime[ray]'", markup=False)
        return SKIPPED
    if str(EXAMPLE) not in sys.path:
        sys.path.insert(0, str(EXAMPLE))
    import client
    from deployment import Scaler

    n = 64 if args.quick else 400
    rounds = args.rounds or (1 if args.quick else 3)
    os.environ.setdefault("ARUNTIME_SIM_DEVICES", "2")
    url = client.start("cuda-sim", replicas=2, sim_devices=2)
    try:
        anyio.run(through_serve, client, url, 32)  # warm the proxy, the router and the replicas
        local, served = [], []
        for _ in range(rounds):
            local.append(anyio.run(in_process, Scaler, n))
            served.append(anyio.run(through_serve, client, url, n))
    finally:
        client.stop()
    t = table(
        f"requests/s, {n} requests, {INFLIGHT} in flight, median of {rounds}",
        ["path", "req/s", "vs in-process"],
    )
    lo, se = median(local), median(served)
    t.add_row("in-process (one backend)", f"{lo:,.0f}", "1.00x")
    t.add_row("Ray Serve (2 replicas, HTTP)", f"{se:,.0f}", f"{se / lo:.2f}x")
    console.print(t)
    return None


if __name__ == "__main__":
    raise SystemExit(main())
