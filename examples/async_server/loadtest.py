"""Load the service with concurrent requests and time /health meanwhile.

It serves ``app.py`` in-process through ``httpx.ASGITransport`` (no sockets),
measures ``GET /health`` latency at rest (a check every 2 ms, timed from
when it was due, so time the loop spent busy elsewhere counts), then fires ``--requests`` concurrent
``POST /scale`` requests while probing ``/health`` back to back, checks every
byte of every answer, and prints both latencies and their ratio.  A ratio
near 1 means the loop kept serving while the device worked.

    python examples/async_server/loadtest.py [--backend NAME] [--trio] [--requests N]

The mock's ops take 2 ms each here; a software driver (cuda-sim,
levelzero-sim) gets a 2 ms per-op timing model unless
``ARUNTIME_SIM_OP_LATENCY_US`` is set.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import httpx
import numpy as np


@dataclass
class LoadReport:
    statuses: list[int] = field(default_factory=list)
    wrong_bytes: int = 0  # answers whose body differs from the expected result
    rest_ms: list[float] = field(default_factory=list)
    load_ms: list[float] = field(default_factory=list)
    health_failures: int = 0  # /health answers that were not 200 during the load

    @property
    def ratio(self) -> float:
        return statistics.median(self.load_ms) / statistics.median(self.rest_ms)

    def summary(self) -> str:
        ok = self.statuses.count(200)
        return (
            f"{len(self.statuses)} requests: {ok} answered 200, every byte checked "
            f"({self.wrong_bytes} wrong)\n"
            f"/health latency at rest   : median {statistics.median(self.rest_ms):7.3f} ms, "
            f"p95 {_p95(self.rest_ms):7.3f} ms ({len(self.rest_ms)} probes)\n"
            f"/health latency under load: median {statistics.median(self.load_ms):7.3f} ms, "
            f"p95 {_p95(self.load_ms):7.3f} ms ({len(self.load_ms)} probes, "
            f"max {max(self.load_ms):.1f} ms)\n"
            f"under load / at rest (medians): {self.ratio:.2f}x"
        )


PROBE_INTERVAL = 0.002  # seconds between health checks


def _p95(samples: list[float]) -> float:
    return float(np.percentile(samples, 95))


async def _probe(client: httpx.AsyncClient, into: list[float]) -> int:
    """One health check, due PROBE_INTERVAL from now; records ms from due to answered.

    Timing from when the check was due (not from when the prober got to run)
    counts the time the loop was too busy to start it, as a client's would.
    """
    due = time.perf_counter() + PROBE_INTERVAL
    await anyio.sleep(PROBE_INTERVAL)
    response = await client.get("/health")
    into.append((time.perf_counter() - due) * 1e3)
    return response.status_code


async def run_load(
    client: httpx.AsyncClient, requests: int = 200, max_floats: int = 16384, seed: int = 0
) -> LoadReport:
    """Fire ``requests`` concurrent scale requests and probe /health throughout."""
    report = LoadReport()
    for _ in range(50):
        assert await _probe(client, report.rest_ms) == 200
    rng = np.random.default_rng(seed)
    bodies = [
        rng.standard_normal(int(rng.integers(1, max_floats + 1)), dtype=np.float32)
        for _ in range(requests)
    ]
    remaining = [requests]

    async def one(values: np.ndarray, factor: float) -> None:
        try:
            response = await client.post(
                "/scale", params={"factor": factor}, content=values.astype("<f4").tobytes()
            )
            report.statuses.append(response.status_code)
            expected = (values * np.float32(factor)).astype("<f4").tobytes()
            if response.status_code == 200 and response.content != expected:
                report.wrong_bytes += 1
        finally:
            remaining[0] -= 1

    async def prober() -> None:
        while remaining[0]:
            if await _probe(client, report.load_ms) != 200:
                report.health_failures += 1

    async with anyio.create_task_group() as tg:
        for i, values in enumerate(bodies):
            tg.start_soon(one, values, float(1 + i % 7))
        tg.start_soon(prober)
    return report


async def main(backend: str = "auto", requests: int = 200) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from app import Limits, create_app

    if backend.endswith("-sim"):
        os.environ.setdefault("ARUNTIME_SIM_OP_LATENCY_US", "2000")  # read at driver load
    options = {"latency": 0.002} if backend == "mock" else {}
    app = create_app(backend, Limits(wait_timeout=30.0), **options)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://gpu") as client:
            report = await run_load(client, requests)
        service = app.state.service
        print(f"{service.gpu.name} ({service.gpu.device.name})")
    print(report.summary())
    assert report.statuses.count(200) == requests and report.wrong_bytes == 0
    assert report.health_failures == 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default=os.environ.get("ARUNTIME_BACKEND", "auto"))
    parser.add_argument("--trio", action="store_true", help="run under trio, not asyncio")
    parser.add_argument("--requests", type=int, default=200)
    args = parser.parse_args()
    anyio.run(main, args.backend, args.requests, backend="trio" if args.trio else "asyncio")
