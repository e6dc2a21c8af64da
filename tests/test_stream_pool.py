"""The core's stream-ordered pool (Level Zero, the mock): reuse for any fitting size.

A recording driver stands in for the device, so that every driver allocation
is counted and the "earlier work" of a free is a Completion the test finishes
itself, never timing.  The backends' own behaviour is in
tests/conformance/test_alloc_async.py.
"""

from __future__ import annotations

from typing import cast

import numpy as np
import pytest

from aruntime._completion import Completion, finish
from aruntime._driver import Driver
from aruntime._stream_pool import REUSE_SLACK, StreamPool

KiB, MiB = 1 << 10, 1 << 20
A, B = object(), object()  # two streams


class _Recorder:
    """mem_alloc/mem_free over disjoint address ranges, with what is live."""

    def __init__(self, backend_name: str = "mock") -> None:
        self.backend_name = backend_name
        self.live: dict[int, int] = {}
        self.allocs = 0
        self._next = 1 << 32

    def mem_alloc(self, nbytes: int) -> int:
        address = self._next
        self._next += nbytes + 4096
        self.live[address] = nbytes
        self.allocs += 1
        return address

    def mem_free(self, address: int) -> None:
        del self.live[address]


def _pool(keep: int = 1 << 40, backend_name: str = "mock") -> tuple[StreamPool, _Recorder]:
    driver = _Recorder(backend_name)
    return StreamPool(cast(Driver, driver), keep), driver


def test_best_fit_within_the_slack() -> None:
    pool, driver = _pool()
    blocks = {n: pool.alloc(n, A) for n in (256 * KiB, 512 * KiB, 3 * MiB, 8 * MiB)}
    for address in blocks.values():
        pool.free(address, A, None)
    assert pool.alloc(300 * KiB, B) == blocks[512 * KiB]  # the smallest that fits
    assert 255 * KiB <= REUSE_SLACK
    assert pool.alloc(KiB, B) == blocks[256 * KiB]  # 255 KiB to spare: within the slack
    assert pool.alloc(2 * MiB, B) == blocks[3 * MiB]  # 1 MiB to spare: no more than asked
    # 8 MiB for 2 MiB would leave 6 MiB unused: a new block instead.
    allocs = driver.allocs
    fresh = pool.alloc(2 * MiB, B)
    assert fresh not in blocks.values() and driver.allocs == allocs + 1
    assert pool.statistics() == (sum(blocks) + 2 * MiB, 8 * MiB)


@pytest.mark.parametrize("pending", [False, True], ids=["done", "pending"])
def test_varying_sizes_keep_reserved_memory_bounded(pending: bool) -> None:
    """1,000 alloc/free pairs of random sizes in [1 KiB, 1 MiB] on one stream.

    Pending: the stream never catches up with its frees, so only its own
    reuse (in stream order) is at work.
    """
    pool, driver = _pool()
    work = Completion("memset_async")
    rng = np.random.default_rng(1234)
    high = 0
    for n in rng.integers(KiB, MiB, size=1000, endpoint=True):
        address = pool.alloc(int(n), A)
        assert driver.live[address] >= n
        pool.free(address, A, work if pending else None)
        high = max(high, pool.statistics()[0])
    # Exact-size reuse would hold a block per size (~500 MiB); a new block is
    # needed only for a request larger than every block so far.
    assert high <= 16 * MiB and driver.allocs <= 16, (high, driver.allocs)
    finish(work)
    reserved, idle = pool.statistics()
    assert reserved == idle == sum(driver.live.values())
    assert pool.trim()
    assert pool.statistics() == (0, 0) and not driver.live


def test_stream_order_decides_who_may_reuse() -> None:
    pool, _ = _pool()
    work = Completion("launch")
    p = pool.alloc(MiB, A)
    pool.free(p, A, work)  # A's queued launch may still use p
    assert pool.alloc(64 * KiB, B) != p  # another stream: not before A catches up
    q = pool.alloc(64 * KiB, A)  # A itself runs later work after the launch
    assert q == p
    pool.free(q, A, work)
    finish(work)  # A caught up: anyone may take it now
    assert pool.alloc(512 * KiB, B) == p


def test_no_block_is_handed_out_twice_while_in_use() -> None:
    pool, driver = _pool()
    streams = [object() for _ in range(3)]
    pending = {id(s): Completion("op") for s in streams}
    rng = np.random.default_rng(7)
    live: dict[int, tuple[int, object]] = {}
    for _ in range(2000):
        if live and (len(live) > 12 or rng.random() < 0.45):
            address = list(live)[int(rng.integers(len(live)))]
            _, stream = live.pop(address)
            pool.free(address, stream, pending[id(stream)])
        else:
            n = int(rng.integers(KiB, MiB, endpoint=True))
            stream = streams[int(rng.integers(3))]
            address = pool.alloc(n, stream)
            assert address not in live and driver.live[address] >= n
            live[address] = (n, stream)
        if rng.random() < 0.05:  # a stream catches up
            stream = streams[int(rng.integers(3))]
            finish(pending[id(stream)])
            pending[id(stream)] = Completion("op")
    for work in pending.values():
        finish(work)
    reserved, idle = pool.statistics()
    assert reserved == sum(driver.live.values())
    assert reserved - idle == sum(driver.live[a] for a in live)


def test_over_the_keep_limit_idle_blocks_go_back() -> None:
    pool, driver = _pool(keep=2 * MiB)
    addresses = [pool.alloc(MiB, A) for _ in range(4)]
    for address in addresses:
        pool.free(address, A, None)
    assert pool.statistics() == (2 * MiB, 2 * MiB)
    assert len(driver.live) == 2


def test_exact_sizes_under_a_sims_sanitizer(monkeypatch: pytest.MonkeyPatch) -> None:
    """The sim's guard page sits right after each driver allocation: no slack there."""
    monkeypatch.setenv("ARUNTIME_SIM_SANITIZE", "1")
    pool, driver = _pool(backend_name="levelzero-sim")
    p = pool.alloc(1000, A)
    assert driver.live[p] == 1000  # not rounded up to a granule either
    pool.free(p, A, None)
    q = pool.alloc(999, A)
    assert q != p and driver.live[q] == 999
    pool.free(q, A, None)
    assert pool.alloc(1000, A) == p
    # Other backends, or the sanitizer off, keep the slack.
    mock, _ = _pool(backend_name="mock")
    r = mock.alloc(1000, A)
    mock.free(r, A, None)
    assert mock.alloc(999, A) == r
    monkeypatch.setenv("ARUNTIME_SIM_SANITIZE", "0")
    sim, _ = _pool(backend_name="levelzero-sim")
    r = sim.alloc(1000, A)
    sim.free(r, A, None)
    assert sim.alloc(1, A) == r
