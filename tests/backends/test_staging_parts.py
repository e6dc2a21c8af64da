"""The shared staging parts: chunking, the pinned-buffer pool, the worker thread."""

from __future__ import annotations

import threading

import pytest

from aruntime.backends._staging import STAGING_CHUNK, StagingPool, chunks
from aruntime.backends._worker import HostWorker


def test_chunks_cover_the_copy_in_order() -> None:
    assert list(chunks(10, 4)) == [(0, 4), (4, 4), (8, 2)]
    assert list(chunks(8, 4)) == [(0, 4), (4, 4)]
    assert list(chunks(0, 4)) == []
    n = 3 * STAGING_CHUNK + 5
    pieces = list(chunks(n))
    assert sum(size for _, size in pieces) == n
    assert [offset for offset, _ in pieces] == [i * STAGING_CHUNK for i in range(4)]
    with pytest.raises(ValueError, match="chunk must be >= 1"):
        list(chunks(10, 0))


def test_pool_reuses_keeps_at_most_keep_and_frees_after_close() -> None:
    made: list[int] = []
    freed: list[int] = []

    def alloc() -> int:
        made.append(len(made))
        return made[-1]

    pool: StagingPool[int] = StagingPool(alloc, freed.append, keep=2)
    a, b, c = pool.take(), pool.take(), pool.take()
    assert made == [0, 1, 2]
    for buffer in (a, b, c):
        pool.give(buffer)
    assert freed == [2] and len(pool) == 2  # the third is over ``keep``
    taken = pool.take()
    assert taken in (a, b) and made == [0, 1, 2]  # reused, not made
    pool.close()  # frees the one kept
    assert sorted(freed) == sorted([c, a if taken == b else b]) and len(pool) == 0
    pool.give(taken)
    assert sorted(freed) == [0, 1, 2] and len(pool) == 0  # after close: freed at once


def test_worker_runs_jobs_in_order_survives_a_failing_job_and_stops() -> None:
    seen: list[int] = []
    worker = HostWorker("test-staging")
    for i in range(50):
        if i == 10:
            worker.submit(lambda: 1 / 0)  # logged; the worker goes on
        worker.submit(lambda i=i: seen.append(i))
    worker.stop()
    assert seen == list(range(50))
    assert not any(t.name == "test-staging" for t in threading.enumerate())
