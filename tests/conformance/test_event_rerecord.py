"""Re-recording an event while a wait on its previous record is still queued.

A ``stream_wait_event`` (and a host wait) waits for the record that was
current when it was called; a later ``record_event`` of the same event must
not change what it waits for.  A backend that gets this wrong deadlocks here:
the re-record sits behind the waiting stream itself.
"""

from __future__ import annotations

import anyio
import numpy as np
import pytest

import aruntime as ar

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]

N = 1 << 20


async def test_rerecord_before_queued_wait(backend: ar.Backend) -> None:
    fast, slow = backend.create_stream(), backend.create_stream()
    shared, out, busy = backend.alloc(N), backend.alloc(N), backend.alloc(N)
    ev, ev2 = backend.create_event(), backend.create_event()
    backend.memset_async(shared, 1, N, stream=fast)
    backend.record_event(ev, fast)  # record 1: right after the 1s
    for i in range(16):  # keeps the slow stream busy past the re-record below
        backend.memset_async(busy, i, N, stream=slow)
    backend.stream_wait_event(slow, ev)  # means record 1
    backend.copy_d2d_async(shared, out, N, stream=slow)
    backend.record_event(ev2, slow)
    await ev  # record 1 has completed while the slow stream is (likely) still busy
    backend.stream_wait_event(fast, ev2)
    backend.memset_async(shared, 2, N, stream=fast)  # only after the slow stream's copy
    backend.record_event(ev, fast)  # record 2: behind the slow stream's wait
    with anyio.fail_after(30):
        await backend.synchronize(fast)
        await backend.synchronize(slow)
    assert backend.event_query(ev) and backend.event_query(ev2)
    result = await backend.copy_d2h_async(out, np.empty(N, np.uint8), stream=slow)
    assert (result == 1).all()
    final = await backend.copy_d2h_async(shared, np.empty(N, np.uint8), stream=fast)
    assert (final == 2).all()
    for e in (ev, ev2):
        e.close()
    for s in (fast, slow):
        s.close()
    for p in (shared, out, busy):
        backend.free(p)


async def test_host_wait_sees_the_latest_record(backend: ar.Backend) -> None:
    """Awaiting an event re-recorded many times completes, and covers the latest record."""
    s1, s2 = backend.create_stream(), backend.create_stream()
    buf = backend.alloc(N)
    ev = backend.create_event()
    for i in range(20):
        stream = s1 if i % 2 else s2
        backend.memset_async(buf, i, N, stream=stream)
        backend.record_event(ev, stream)
        backend.stream_wait_event(s2 if i % 2 else s1, ev)
        if i % 5 == 4:
            with anyio.fail_after(30):
                await ev
            assert backend.event_query(ev)
    with anyio.fail_after(30):
        await ev
    out = await backend.copy_d2h_async(buf, np.empty(N, np.uint8), stream=s1)
    assert (out == 19).all()
    ev.close()
    for s in (s1, s2):
        s.close()
    backend.free(buf)


async def test_wait_is_not_satisfied_by_a_later_record_elsewhere(backend: ar.Backend) -> None:
    """A wait queued before a re-record on another, idle stream still waits for the first.

    CUDA documents that later records "will not have any effect" on a wait
    already made.
    """
    slow, fast, reader = (backend.create_stream() for _ in range(3))
    buf, out, busy = backend.alloc(N), backend.alloc(N), backend.alloc(8 * N)
    ev = backend.create_event()
    await backend.memset_async(buf, 0, N, stream=slow)
    for i in range(16):  # long enough for record 2 to finish first (else the test is moot)
        backend.memset_async(busy, i, 8 * N, stream=slow)
    backend.memset_async(buf, 7, N, stream=slow)
    backend.record_event(ev, slow)  # record 1: after the 7s
    backend.stream_wait_event(reader, ev)  # means record 1
    copied = backend.copy_d2d_async(buf, out, N, stream=reader)
    backend.record_event(ev, fast)  # record 2: completes at once
    with anyio.fail_after(30):
        await copied
        await ev
    result = await backend.copy_d2h_async(out, np.empty(N, np.uint8), stream=reader)
    assert (result == 7).all(), "the wait passed on a later record before the one it waited for"
    await backend.synchronize(slow)
    ev.close()
    for s in (slow, fast, reader):
        s.close()
    for p in (buf, out, busy):
        backend.free(p)
