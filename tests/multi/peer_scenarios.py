"""Peer copies and cross-device ordering on two sim devices, run in a fresh process.

``python peer_scenarios.py KIND LOOP`` with ``ARUNTIME_SIM_DEVICES=2``, the
repository root on ``PYTHONPATH`` (for ``tests.helpers``) and
``ARUNTIME_SIM_COPY_GBPS`` set low (the sims read their knobs at load, so
tests/multi/test_peer.py starts one process per case).  Prints ``OK``.
"""

from __future__ import annotations

import sys

import anyio
import numpy as np

import aruntime as ar
from tests.helpers import close_during

N = 1 << 20  # the payload: 1 MiB
STALL = 8 << 20  # a copy that keeps device 0's copy engine busy first


def pattern(seed: int, n: int = N) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8)


async def each_way(g0: ar.Backend, g1: ar.Backend) -> None:
    assert g0.can_access_peer(g1) and g1.can_access_peer(g0)
    assert not g0.can_access_peer(g0)
    a0, b1 = g0.alloc(N), g1.alloc(N)
    try:
        host = pattern(1)
        g0.copy_h2d(host, a0)
        await g0.copy_d2d_async(a0, b1, N)  # pushed by device 0
        assert (g1.copy_d2h(b1, np.empty_like(host)) == host).all(), "0 -> 1 on 0's stream"
        back = pattern(2)
        g1.copy_h2d(back, b1)
        await g1.copy_d2d_async(b1, a0, N)  # pushed by device 1
        assert (g0.copy_d2h(a0, np.empty_like(host)) == back).all(), "1 -> 0 on 1's stream"
        g0.copy_h2d(host, a0)
        await g1.copy_d2d_async(a0, b1, N)  # pulled by device 1
        assert (g1.copy_d2h(b1, np.empty_like(host)) == host).all(), "0 -> 1 on 1's stream"
    finally:
        g0.free(a0)
        g1.free(b1)


async def wait_across(g0: ar.Backend, g1: ar.Backend) -> None:
    """Device 1 waits for device 0's event, then copies what device 0 wrote."""
    stall_src, stall_dst = g0.alloc(STALL), g0.alloc(STALL)
    a0, b1 = g0.alloc(N), g1.alloc(N)
    s0, s1 = g0.create_stream(), g1.create_stream()
    done = g0.create_event()
    host = pattern(3)
    try:
        g0.memset(a0, 0, N)
        # The payload lands on device 0 only after the stall has held its
        # copy engine; without the wait device 1 would copy zeros.
        g0.copy_d2d_async(stall_src, stall_dst, STALL, stream=s0)
        g0.copy_h2d_async(host, a0, stream=s0)
        g0.record_event(done, s0)
        g1.stream_wait_event(s1, done)
        g1.copy_d2d_async(a0, b1, N, stream=s1)
        out = await g1.copy_d2h_async(b1, np.empty_like(host), stream=s1)
        assert (out == host).all(), "device 1 copied before device 0's write"
    finally:
        g0.destroy_event(done)
        s0.close()
        s1.close()
        for p in (stall_src, stall_dst, a0):
            g0.free(p)
        g1.free(b1)


async def free_waits_for_peer(g0: ar.Backend, g1: ar.Backend) -> None:
    """Device 0 frees memory a queued copy on device 1 still reads: the free waits."""
    stall_src, stall_dst = g1.alloc(STALL), g1.alloc(STALL)
    a0, b1 = g0.alloc(N), g1.alloc(N)
    host = pattern(4)
    g0.copy_h2d(host, a0)
    g1.copy_d2d_async(stall_src, stall_dst, STALL)
    copied = g1.copy_d2d_async(a0, b1, N)
    g0.free(a0)
    await copied
    assert (g1.copy_d2h(b1, np.empty_like(host)) == host).all(), "the free landed first"
    for p in (stall_src, stall_dst, b1):
        g1.free(p)


async def captured(g0: ar.Backend, g1: ar.Backend) -> None:
    a0, b1 = g0.alloc(N), g1.alloc(N)
    stream = g0.create_stream()
    try:
        with g0.capture(stream) as graph:
            g0.copy_d2d_async(a0, b1, N, stream=stream)
        for seed in (5, 6):
            host = pattern(seed)
            g0.copy_h2d(host, a0)
            await g0.launch_graph(graph, stream)
            assert (g1.copy_d2h(b1, np.empty_like(host)) == host).all(), "graph replay"
        g0.destroy_graph(graph)
    finally:
        stream.close()
        g0.free(a0)
        g1.free(b1)


def _peer_wait_round(
    g0: ar.Backend, g1: ar.Backend, s0: ar.Stream, s1: ar.Stream, after: int
) -> None:
    event = g0.create_event()
    event.record(s0)
    close_during(
        lambda: g1.stream_wait_event(s1, event),
        event.close,
        ar.ClosedResourceError,
        "is closed",
        after,
        "a peer wait hung against Event.close()",
    )


async def event_close_against_peer_waits(g0: ar.Backend, g1: ar.Backend) -> None:
    """Device 0 closes an event while another thread makes device 1's stream wait on it:
    each wait is made before the event is destroyed, or raises ClosedResourceError."""
    s0, s1 = g0.create_stream(), g1.create_stream()
    try:
        for round_ in range(40):
            _peer_wait_round(g0, g1, s0, s1, after=round_ % 4)
            await s1.synchronize()  # no wait failed on a destroyed event
    finally:
        s0.close()
        s1.close()


def misuse(g0: ar.Backend, g1: ar.Backend) -> None:
    b1 = g1.alloc(64)
    try:
        for call in (
            lambda: g0.memset_async(b1, 0, 8),
            lambda: g0.copy_h2d_async(b"12345678", b1),
            lambda: g0.copy_d2h_async(b1, bytearray(8)),
            lambda: g0.free(b1),
        ):
            try:
                call()
            except ar.InvalidArgumentError as exc:
                text = str(exc)
                assert "device 1" in text and "device 0" in text, text
            else:
                raise AssertionError("a device-1 pointer was used on device 0")
    finally:
        g1.free(b1)


async def main(kind: str) -> None:
    async with ar.open_pool(kind) as pool:
        g0, g1 = pool.backends
        await each_way(g0, g1)
        await wait_across(g0, g1)
        await free_waits_for_peer(g0, g1)
        await captured(g0, g1)
        await event_close_against_peer_waits(g0, g1)
        misuse(g0, g1)


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], backend=sys.argv[2])
    print("OK")
