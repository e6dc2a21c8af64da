"""Start a local Ray cluster, deploy ``deployment.py`` and check N concurrent answers.

    python examples/ray_serve/client.py [--kind cuda-sim] [--replicas 2] [--requests 200]

Every ``POST /scale`` answer is checked value by value; each replica's
``/stats`` must show no live allocation afterwards.  Ray listens on
127.0.0.1 only, on a free port, and is shut down at the end.
"""

from __future__ import annotations

import argparse
import socket
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import httpx
import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

import deployment
from deployment import build_app

#: A request's answer may wait for Serve to notice a dead replica and route
#: around it, which on a loaded two-CPU machine has taken over 30 s.  Long,
#: but bounded: a request that never comes back still fails the run.
TIMEOUT = httpx.Timeout(90.0)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def start(kind: str, replicas: int, sim_devices: int = 2) -> str:
    """Start Ray and Serve locally and deploy; returns the ingress URL."""
    import ray
    from ray import serve

    # Replicas get the deployment class by value: they need not find this folder on their path.
    ray.cloudpickle.register_pickle_by_value(deployment)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    port = free_port()
    serve.start(http_options={"host": "127.0.0.1", "port": port})
    serve.run(build_app(kind, replicas, sim_devices), name="scale", route_prefix="/")
    return f"http://127.0.0.1:{port}"


def stop() -> None:
    import ray
    from ray import serve

    serve.shutdown()
    ray.shutdown()


async def one_request(client: httpx.AsyncClient, i: int) -> str:
    """``"ok"`` for a right answer, ``"status N"`` for a refused one; a wrong one fails."""
    values = np.arange(64 + i % 7 * 100, dtype=np.float32)
    factor = 1.0 + i % 5
    try:
        reply = await client.post("/scale", params={"factor": factor}, content=values.tobytes())
    except httpx.TransportError as exc:
        return f"transport {type(exc).__name__}"
    if reply.status_code != 200:
        return f"status {reply.status_code}"
    got = np.frombuffer(reply.content, dtype=np.float32)
    assert np.array_equal(got, values * np.float32(factor)), f"request {i}: wrong answer"
    return "ok"


async def fire(
    url: str, n: int, midway: Callable[[], object] | None = None, at: int = 50
) -> Counter[str]:
    """N concurrent requests; the count of each outcome.

    ``midway`` (a blocking call, run in a worker thread) runs once ``at``
    answers have come back, while the rest are in flight.
    """
    outcomes: Counter[str] = Counter()
    reached = anyio.Event()

    async def run(i: int) -> None:
        outcomes[await one_request(client, i)] += 1
        if outcomes.total() >= at:
            reached.set()

    async def at_midway() -> None:
        await reached.wait()
        assert midway is not None
        await anyio.to_thread.run_sync(midway)

    limits = httpx.Limits(max_connections=32)
    async with httpx.AsyncClient(base_url=url, timeout=TIMEOUT, limits=limits) as client:
        with anyio.fail_after(240):
            async with anyio.create_task_group() as tg:
                if midway is not None:
                    tg.start_soon(at_midway)
                for i in range(n):
                    tg.start_soon(run, i)
    return outcomes


async def replica_stats(url: str, want: int) -> dict[str, dict[str, Any]]:
    """``/stats`` of ``want`` distinct replicas (Serve routes each call to one of them)."""
    seen: dict[str, dict[str, Any]] = {}
    async with httpx.AsyncClient(base_url=url, timeout=TIMEOUT) as client:
        for _ in range(200):
            if len(seen) >= want:
                break
            reply = await client.get("/stats")
            if reply.status_code == 200:  # not a replica that is going away
                seen[reply.json()["replica"]] = reply.json()
    return seen


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kind", default="cuda-sim")
    parser.add_argument("--replicas", type=int, default=2)
    parser.add_argument("--requests", type=int, default=200)
    args = parser.parse_args()
    url = start(args.kind, args.replicas)
    try:
        outcomes = await fire(url, args.requests)
        print(dict(outcomes))
        assert outcomes["ok"] == args.requests, outcomes
        stats = await replica_stats(url, args.replicas)
        for replica, s in stats.items():
            print(f"replica {replica}: device {s['device']}, served {s['served']}")
            assert s["live_allocs"] == 0, s
        assert len({s["device"] for s in stats.values()}) == min(args.replicas, 2)
    finally:
        stop()


if __name__ == "__main__":
    anyio.run(main)
