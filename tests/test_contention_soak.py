"""The server pattern on the sims, alone and beside busy processes: a bounded soak.

The short version of ``benchmarks/bench_contention.py`` (whose ``_soak``
module both use): a bounded number of requests, each alloc -> upload ->
kernel -> download -> free, every answer checked.  Nothing here is timed;
what is checked is that every request is served right, beside two busy
processes too (a starved device would never finish: the test's timeout is
the bound), and that the backlog leaves nothing behind once it drains: no
allocation, no pending op, and no Python objects piling up round after
round.  The event pools that a burst of ops in flight grows give their
peak back (levelzero-sim counts its live events).
"""

from __future__ import annotations

import ctypes
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import numpy as np
import pytest

import aruntime as ar

from .helpers import backend_or_skip, build_host_kernel, sim_library

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import _soak

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(300)]

REQUESTS = 400


@pytest.fixture(params=["cuda-sim", "levelzero-sim"])
def gpu(request: pytest.FixtureRequest) -> Iterator[ar.Backend]:
    yield from backend_or_skip(request.param)


async def test_the_backlog_drains_and_leaves_nothing_behind(gpu: ar.Backend) -> None:
    await _soak.soak(gpu, REQUESTS, inflight=16, streams=4)  # warm-up: threads, pools
    growth = []
    for _ in range(3):
        before = _soak.objects()
        done = await _soak.soak(gpu, REQUESTS, inflight=16, streams=4)
        assert (done.live_allocations, done.pending_ops) == (0, 0)
        growth.append(_soak.objects() - before)
    # A leak of one object a request grows every round by REQUESTS.  The pools
    # (markers, events) are bounded: they grow only until they hold a burst's
    # peak in flight, which a loaded machine may reach in a later round than
    # the warm-up, so one round may add a few hundred objects; not every round.
    assert min(growth) < REQUESTS // 4, f"Python objects added per round of {REQUESTS}: {growth}"


async def test_the_sims_keep_serving_beside_busy_processes(gpu: ar.Backend) -> None:
    await _soak.soak(gpu, 50, inflight=16, streams=4)
    with _soak.busy_neighbours(2) as pids:
        assert len(pids) == 2
        done = await _soak.soak(gpu, REQUESTS, inflight=64, streams=8)
    assert (done.live_allocations, done.pending_ops) == (0, 0)


def test_busy_neighbours_end_with_the_block() -> None:
    import os

    with _soak.busy_neighbours(2) as pids:
        for pid in pids:
            os.kill(pid, 0)  # running
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


async def test_a_burst_gives_its_events_back_once_drained(tmp_path: Path) -> None:
    """levelzero-sim: 1,500 ops held in flight behind a kernel need 1,500 markers (and as
    many ze events); once they drain, the marker pool and the ze event pools shrink."""
    try:
        gpu = ar.open_backend("levelzero-sim")
    except ar.BackendUnavailableError as exc:
        pytest.skip(f"levelzero-sim unavailable: {exc}")
    live = sim_library("levelzero-sim").arze_sim_live_handles
    live.restype = ctypes.c_uint64
    events = 8  # arze_sim_live_handles' kind for events
    try:
        hold = gpu.kernel(
            gpu.load_module("hold", build_host_kernel("hold_kernel", tmp_path)), "hold_until"
        )
        flag, dev = gpu.alloc(4), gpu.alloc(64)
        await gpu.memset_async(flag, 0, 4)
        with gpu.create_stream() as held, gpu.create_stream() as other:
            before = live(events)
            gpu.launch(hold, 1, 1, [flag], stream=held)
            try:
                ops = [gpu.memset_async(dev, i & 0xFF, 64, stream=held) for i in range(1500)]
                peak = live(events)  # made in pools of 64
            finally:
                await gpu.copy_h2d_async(np.ones(1, np.uint32), flag, stream=other)
            assert peak >= 1500, (before, peak)
            await ar.gather(*ops)
            for i in range(200):  # later work: the pool sweeps as markers come back
                await gpu.memset_async(dev, i & 0xFF, 64, stream=held)
            after = live(events)
        assert after <= before + 400, (before, peak, after)
        gpu.free(flag)
        gpu.free(dev)
    finally:
        gpu.close()
    await anyio.lowlevel.checkpoint()
