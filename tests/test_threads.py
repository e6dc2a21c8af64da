"""Threads: O(streams), created lazily, all ended by close (docs/design.md, "Threads")."""

from __future__ import annotations

import gc
import threading

import anyio
import pytest

import aruntime as ar

pytestmark = pytest.mark.anyio


def _aruntime_threads() -> list[str]:
    return sorted(t.name for t in threading.enumerate() if t.name.startswith("aruntime-"))


def test_synchronous_mock_starts_no_threads() -> None:
    before = threading.active_count()
    with ar.open_backend("mock") as gpu:
        s = gpu.create_stream()
        ptr = gpu.alloc(64)
        for _ in range(10):
            gpu.memset_async(ptr, 1, 64, stream=s).wait()
        assert threading.active_count() == before
        assert gpu.statistics().waiter_threads == 0
        s.close()
        gpu.free(ptr)


async def test_one_waiter_per_stream_not_per_await() -> None:
    gpu = ar.open_backend("mock", latency=0.0)
    try:
        streams = [gpu.create_stream() for _ in range(3)]
        ptr = gpu.alloc(64)
        assert gpu.statistics().waiter_threads == 0  # lazily started
        for _ in range(20):
            for s in streams:
                gpu.memset_async(ptr, 1, 64, stream=s)
        for s in streams:
            await s
        stats = gpu.statistics()
        assert stats.waiter_threads == 3
        # 3 mock stream workers + 3 waiters: never one per op.
        assert len(_aruntime_threads()) == 6, _aruntime_threads()
        for s in streams:
            s.close()
        gpu.free(ptr)
    finally:
        gpu.close()
    # Count by name: the event loop's own helper threads come and go meanwhile.
    assert _aruntime_threads() == []


def test_close_joins_waiters_of_streams_closed_earlier() -> None:
    baseline = threading.active_count()
    gpu = ar.open_backend("mock", latency=0.05)
    ptr = gpu.alloc(16)
    s = gpu.create_stream()
    gpu.memset_async(ptr, 1, 16, stream=s)
    s.close()  # never blocks: the stream drains and is destroyed later
    gpu.free(ptr)
    gpu.close()
    assert threading.active_count() == baseline, _aruntime_threads()


def test_close_joins_waiters_of_dropped_streams() -> None:
    baseline = threading.active_count()
    gpu = ar.open_backend("mock", latency=0.05)
    ptr = gpu.alloc(16)
    s = gpu.create_stream()
    gpu.memset_async(ptr, 1, 16, stream=s)
    gpu.memset_async(ptr, 1, 16, stream=s).wait(30)
    with pytest.warns(ResourceWarning, match="unclosed stream"):
        del s
        gc.collect()  # the waiter must not keep the stream alive via its last op
    gpu.free(ptr)
    gpu.close()
    assert threading.active_count() == baseline, _aruntime_threads()


async def test_threads_return_to_baseline_after_async_with() -> None:
    async with ar.open_backend("mock", latency=0.001) as gpu:
        ptr = gpu.alloc(32)
        s = gpu.create_stream()
        for _ in range(5):
            gpu.memset_async(ptr, 2, 32, stream=s)
            gpu.memset_async(ptr, 3, 32)
        with anyio.move_on_after(0.0005):
            await s
        s.close()
        gpu.free(ptr)
    assert gpu.closed
    assert _aruntime_threads() == []


def test_many_backends_open_and_close() -> None:
    baseline = threading.active_count()
    for _ in range(5):
        gpu = ar.open_backend("mock", latency=0.0)
        ptr = gpu.alloc(8)
        s = gpu.create_stream()
        gpu.memset_async(ptr, 0, 8, stream=s)
        gpu.memset_async(ptr, 0, 8)
        s.close()
        gpu.free(ptr)
        gpu.close()
    assert threading.active_count() == baseline, _aruntime_threads()


def test_wake_ups_run_on_waiter_threads_not_driver_threads() -> None:
    gpu = ar.open_backend("mock", latency=0.01)
    ptr = gpu.alloc(8)
    c = gpu.memset_async(ptr, 0, 8)
    seen: list[str] = []
    assert c.subscribe(lambda: seen.append(threading.current_thread().name))
    c.wait(30)
    assert seen and seen[0].startswith("aruntime-waiter-"), seen
    gpu.free(ptr)
    gpu.close()


def test_waiter_does_not_retain_the_last_d2h_destination() -> None:
    import weakref

    import numpy as np

    gpu = ar.open_backend("mock", latency=0.0)
    ptr = gpu.alloc(1 << 16)
    dst = np.zeros(1 << 16, np.uint8)
    ref = weakref.ref(dst)
    gpu.copy_d2h_async(ptr, dst).wait(30)
    del dst
    gc.collect()
    assert ref() is None
    gpu.free(ptr)
    gpu.close()


def _wait_for_no_aruntime_threads() -> list[str]:
    import time

    for _ in range(500):  # bounded: the waiters end once their queues drain
        if not _aruntime_threads():
            break
        time.sleep(0.01)
    return _aruntime_threads()


def test_dropped_backend_warns_and_ends_its_threads() -> None:
    def use_and_drop() -> None:
        gpu = ar.open_backend("mock", latency=0.001)
        ptr = gpu.alloc(64)
        s = gpu.create_stream()
        for _ in range(5):
            gpu.memset_async(ptr, 1, 64)
            last = gpu.memset_async(ptr, 2, 64, stream=s)
        s.close()
        # Pending ops keep their backend alive (the waiters hold them); let them end.
        last.wait(30)
        gpu.synchronize().wait(30)

    use_and_drop()
    with pytest.warns(ResourceWarning, match="unclosed backend 'mock'"):
        gc.collect()
    assert _wait_for_no_aruntime_threads() == []


def test_dropped_synchronous_backend_warns() -> None:
    gpu = ar.open_backend("mock")
    gpu.alloc(8)
    with pytest.warns(ResourceWarning, match="unclosed backend"):
        del gpu
        gc.collect()


def test_closed_backend_does_not_warn_when_dropped() -> None:
    import warnings

    gpu = ar.open_backend("mock", latency=0.0)
    ptr = gpu.alloc(8)
    gpu.memset_async(ptr, 0, 8)
    gpu.free(ptr)
    gpu.close()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        del gpu
        gc.collect()


def test_many_threads_share_one_backend() -> None:
    import random

    import numpy as np

    baseline = threading.active_count()
    gpu = ar.open_backend("mock", latency=0.0)
    errors: list[BaseException] = []

    def worker(seed: int) -> None:
        rng = random.Random(seed)
        try:
            for _ in range(100):
                s = gpu.create_stream() if rng.random() < 0.5 else None
                n = rng.randint(1, 4096)
                p = gpu.alloc(n)
                data = np.frombuffer(rng.randbytes(n), np.uint8)
                gpu.copy_h2d_async(data, p, stream=s)
                out = np.empty(n, np.uint8)
                c = gpu.copy_d2h_async(p, out, stream=s)
                if rng.random() < 0.3:  # release while the copies may still run
                    gpu.free(p)
                    if s is not None:
                        s.close()
                    c.wait(30)
                else:
                    c.wait(30)
                    gpu.free(p)
                    if s is not None:
                        s.close()
                assert (out == data).all()
                if rng.random() < 0.1:
                    with gpu.create_event() as ev:
                        gpu.record_event(ev)
                        gpu.event_synchronize(ev).wait(30)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:3]
    stats = gpu.statistics()
    assert (stats.live_allocations, stats.open_streams, stats.open_events) == (0, 0, 0)
    gpu.close()
    assert threading.active_count() == baseline, _aruntime_threads()


@pytest.mark.anyio
async def test_no_pending_ops_once_an_await_returns() -> None:
    gpu = ar.open_backend("mock", latency=0.0)
    try:
        ptr = gpu.alloc(8)
        for _ in range(300):
            await gpu.memset_async(ptr, 1, 8)
            # The awaiter may run before the waiter thread has tidied up.
            assert gpu.statistics().pending_ops == 0
        gpu.free(ptr)
    finally:
        gpu.close()
