"""Peer copies against the configured link, and a DevicePool's throughput against one device.

1. Peer-copy bandwidth on cuda-sim and levelzero-sim with two devices and
   the peer link set to ``ARUNTIME_SIM_PEER_GBPS`` (the host copy engines
   are set faster, so that the link is what a peer copy waits for).  Timed
   with device events, so the figure is the sim's device time: one copy
   alone, two copies in opposite directions at once (each device's outgoing
   engine feeds the other's incoming one, so they overlap), and two in the
   same direction at once (they share both engines, so they take turns).
2. Requests per second through ``ar.open_pool`` with 1, 2 and 4 sim devices,
   64 requests in flight, each an upload, ``scale_f32`` and a download.
   ``ARUNTIME_SIM_OP_LATENCY_US`` makes every device op cost that long, so
   the devices, not the host, are the bottleneck, and the rate grows with
   them until the host's cores are.

The sims read their knobs when they load: each configuration runs in a
process of its own (this script, with ``--child``).

    python benchmarks/bench_peer.py [--quick] [--rounds N]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import anyio
import numpy as np
from _harness import NOISE, console, median, table
from _simbench import set_timing

import aruntime as ar

QUICK_ARGV = ["--quick"]
KINDS = ("cuda-sim", "levelzero-sim")
#: The peer link, and the host copy engines (faster: not what is measured).
PEER_GBPS, COPY_GBPS = 1.0, 8.0
#: What every device op costs in the pool run: the device is the bottleneck.
OP_LATENCY_US = 20_000.0
INFLIGHT = 64


# ------------------------------------------------------------- children (one sim config each)
def _gate(kind: str, gpu: ar.Backend, stream: ar.Stream, buf: ar.DevicePtr) -> None:
    """Hold ``stream`` for 30 ms of device time, so that what is queued next is all queued
    before it starts: the events then time the device, not this (shared, loaded) host."""
    set_timing(kind, COPY_GBPS, 30_000.0)
    gpu.memset_async(buf, 0, 1, stream=stream)
    set_timing(kind, COPY_GBPS, 0.0)


def _timed(
    gpu: ar.Backend, stream: ar.Stream, fire: Callable[[ar.Stream], object]
) -> tuple[ar.Event, ar.Event]:
    """Events around what ``fire`` enqueues on ``stream``."""
    start, end = gpu.create_event(timing=True), gpu.create_event(timing=True)
    gpu.record_event(start, stream)
    fire(stream)
    gpu.record_event(end, stream)
    return start, end


async def peer_child(kind: str, nbytes: int, rounds: int) -> dict[str, float]:
    """Device-time GB/s of one peer copy, two opposite, two alike (medians)."""
    async with ar.open_pool(kind) as pool:
        g0, g1 = pool.backends
        a0, c0, b1, d1 = g0.alloc(nbytes), g0.alloc(nbytes), g1.alloc(nbytes), g1.alloc(nbytes)
        s0, s0b, s1 = g0.create_stream(), g0.create_stream(), g1.create_stream()
        gate = g0.alloc(1)
        results: dict[str, list[float]] = {"one": [], "opposite": [], "alike": []}
        for _ in range(rounds + 1):  # the first round warms the engines' threads
            # One copy alone.
            _gate(kind, g0, s0, gate)
            e = _timed(g0, s0, lambda s: g0.copy_d2d_async(a0, b1, nbytes, stream=s))
            await g0.synchronize(s0)
            one = g0.elapsed_ms(*e)
            # Two at once, opposite directions: 0 -> 1 on device 0, 1 -> 0 on
            # device 1, both timed from one start (device 1 waits for it).
            _gate(kind, g0, s0, gate)
            e0 = _timed(g0, s0, lambda s: g0.copy_d2d_async(a0, b1, nbytes, stream=s))
            g1.stream_wait_event(s1, e0[0])
            e1 = _timed(g1, s1, lambda s: g1.copy_d2d_async(d1, c0, nbytes, stream=s))
            await g0.synchronize(s0)
            await g1.synchronize(s1)
            opposite = max(g0.elapsed_ms(*e0), g1.elapsed_ms(*e1))
            events = [(g0, e), (g0, e0), (g1, e1)]
            # Two at once, the same direction, on two streams of device 0.
            _gate(kind, g0, s0, gate)
            e0 = _timed(g0, s0, lambda s: g0.copy_d2d_async(a0, b1, nbytes, stream=s))
            g0.stream_wait_event(s0b, e0[0])
            e1 = _timed(g0, s0b, lambda s: g0.copy_d2d_async(c0, d1, nbytes, stream=s))
            await g0.synchronize(s0)
            await g0.synchronize(s0b)
            alike = max(g0.elapsed_ms(*e0), g0.elapsed_ms(*e1))
            events += [(g0, e0), (g0, e1)]
            for name, ms, copies in (
                ("one", one, 1),
                ("opposite", opposite, 2),
                ("alike", alike, 2),
            ):
                results[name].append(copies * nbytes / (ms * 1e6))
            for gpu, pair in events:
                for event in pair:
                    gpu.destroy_event(event)
        for name in results:
            del results[name][0]
        for s in (s0, s0b, s1):
            s.close()
        for gpu, ptrs in ((g0, (a0, c0, gate)), (g1, (b1, d1))):
            for p in ptrs:
                gpu.free(p)
        return {name: median(v) for name, v in results.items()}


async def pool_child(kind: str, requests: int) -> dict[str, float]:
    """Requests per second through a pool of every sim device, INFLIGHT at a time.

    Each of the INFLIGHT workers keeps a stream and a buffer on each device,
    as a server would: a per-request allocation would measure the free, which
    waits for the device, instead of the device's throughput.
    """
    n = 1024
    host = np.arange(n, dtype=np.float32)
    async with ar.open_pool(kind) as pool:
        kernels = {
            id(g): g.kernel(g.builtin_module("vector_ops"), "scale_f32") for g in pool.backends
        }
        made: list[tuple[ar.Backend, ar.Stream, ar.DevicePtr]] = []

        async def worker(count: int) -> None:
            mine: dict[int, tuple[ar.Stream, ar.DevicePtr]] = {}
            for _ in range(count):
                gpu = pool.least_busy()
                if id(gpu) not in mine:
                    mine[id(gpu)] = (gpu.create_stream(), gpu.alloc(host.nbytes))
                    made.append((gpu, *mine[id(gpu)]))
                stream, buf = mine[id(gpu)]
                gpu.copy_h2d_async(host, buf, stream=stream)
                args = [np.uint32(n), np.float32(2), buf]
                gpu.launch(kernels[id(gpu)], n // 256, 256, args, stream=stream)
                out = await gpu.copy_d2h_async(buf, np.empty_like(host), stream=stream)
                assert (out == 2 * host).all()

        async def burst(count: int) -> float:
            start = time.perf_counter()
            async with anyio.create_task_group() as tg:
                for _ in range(INFLIGHT):
                    tg.start_soon(worker, count // INFLIGHT)
            return count / (time.perf_counter() - start)

        await burst(INFLIGHT)  # warm-up: streams, buffers, engine threads, waiters
        rps = await burst(requests)
        for gpu, stream, buf in made:
            stream.close()
            gpu.free(buf)
        return {"rps": rps, "devices": float(len(pool))}


def _child(argv: Sequence[str]) -> int:
    what, kind, size, rounds = argv[0], argv[1], int(argv[2]), int(argv[3])
    if what == "peer":
        out = anyio.run(peer_child, kind, size, rounds)
    else:
        out = anyio.run(pool_child, kind, size)
    print("RESULT " + json.dumps(out))
    return 0


# ----------------------------------------------------------------- parent
def _run(what: str, kind: str, size: int, rounds: int, env: dict[str, str]) -> dict[str, float]:
    root = Path(__file__).resolve().parents[1]
    full = {**os.environ, **env, "PYTHONPATH": os.pathsep.join([str(root), *sys.path])}
    proc = subprocess.run(
        [sys.executable, __file__, "--child", what, kind, str(size), str(rounds)],
        env=full,
        capture_output=True,
        text=True,
        timeout=600,
    )
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"bench_peer child {what} {kind} failed:\n{proc.stdout}{proc.stderr}")
    result: dict[str, float] = json.loads(lines[-1].removeprefix("RESULT "))
    return result


def peer_table(nbytes: int, rounds: int) -> None:
    t = table(
        f"peer copies of {nbytes >> 20} MiB, device time, link {PEER_GBPS:g} GB/s "
        f"(host copies {COPY_GBPS:g} GB/s), median of {rounds}",
        ["backend", "one copy GB/s", "vs link", "2 opposite GB/s", "2 alike GB/s"],
    )
    env = {
        "ARUNTIME_SIM_DEVICES": "2",
        "ARUNTIME_SIM_PEER_GBPS": str(PEER_GBPS),
        "ARUNTIME_SIM_COPY_GBPS": str(COPY_GBPS),
    }
    for kind in KINDS:
        r = _run("peer", kind, nbytes, rounds, env)
        t.add_row(
            kind,
            f"{r['one']:.2f}",
            f"{r['one'] / PEER_GBPS:.2f}x",
            f"{r['opposite']:.2f}",
            f"{r['alike']:.2f}",
        )
    console.print(t)


def pool_table(requests: int, counts: Sequence[int]) -> None:
    t = table(
        f"open_pool throughput, {requests} requests, {INFLIGHT} in flight, every device op "
        f"{OP_LATENCY_US:g} us",
        ["backend", "devices", "req/s", "vs 1 device"],
    )
    for kind in KINDS:
        base = None
        for count in counts:
            env = {
                "ARUNTIME_SIM_DEVICES": str(count),
                "ARUNTIME_SIM_OP_LATENCY_US": str(OP_LATENCY_US),
            }
            rps = _run("pool", kind, requests, 1, env)["rps"]
            base = base or rps
            t.add_row(kind, str(count), f"{rps:,.0f}", f"{rps / base:.2f}x")
    console.print(t)
    console.print(NOISE, markup=False)


def main(argv: Sequence[str] | None = None) -> int | None:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--child"]:
        return _child(argv[1:])
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, few rounds (smoke test)")
    parser.add_argument("--rounds", type=int, default=None, help="rounds to take the median of")
    args = parser.parse_args(argv)
    rounds = args.rounds or (1 if args.quick else 3)
    peer_table((4 << 20) if args.quick else (64 << 20), rounds)
    pool_table(64 if args.quick else 512, (1, 2) if args.quick else (1, 2, 4))
    return None


if __name__ == "__main__":
    raise SystemExit(main())
