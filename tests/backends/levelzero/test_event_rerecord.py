"""Re-recording an event while waits on its previous record are still queued.

CUDA's rule, which aruntime follows: ``stream_wait_event`` and host waits wait
for the record that was current when they were called, not for a later one.
Level Zero has no such notion (a ze event is one signalled bit), so the
driver gives each record its own pooled ze event.  These tests failed when
``event_record`` reset one ze event on the host: the wait then waited for the
new record, which in a pipeline sits behind the waiting stream itself.

A deadlocked Level Zero stream cannot be torn down (destroying it waits for
it), so the tests that would hang without the fix either open the way
themselves (a host-signalled gate) or run in a subprocess with a timeout.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from aruntime._driver import DriverStream
from aruntime.backends.levelzero import _driver

from ._subproc import run_python
from .conftest import replaced_call

ZeDriver = _driver.LevelZeroDriver
pytestmark = pytest.mark.timeout(120)


class _Gate:
    """A raw pooled ze event that a stream waits for until the test opens it."""

    def __init__(self, ze: ZeDriver) -> None:
        self._ze = ze
        self._event = ze._events.acquire()
        self._event.recorded = True  # a signal is pending (the host's)

    def block(self, stream: DriverStream) -> None:
        s: Any = stream
        with s.lock:
            self._ze._barrier(self._ze._tail(s), wait=[self._event])

    def open(self) -> None:
        self._ze._lib.zeEventHostSignal(self._event.handle)

    def close(self) -> None:
        self.open()
        self._ze._events.release(self._event)


@pytest.fixture
def gates(ze: ZeDriver) -> Iterator[list[_Gate]]:
    made: list[_Gate] = []
    yield made
    for gate in made:  # opened even when a test failed, so the streams can drain
        gate.close()


def _poll(ze: ZeDriver, event: Any, seconds: float = 20.0) -> bool:
    """event_query until true or ``seconds`` pass (a hang guard, not a timing check)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if ze.event_query(event):
            return True
        time.sleep(0.002)
    return False


def test_stream_wait_keeps_the_record_current_at_call_time(
    ze: ZeDriver, gates: list[_Gate]
) -> None:
    """s2's wait for ``ev`` is queued behind a gate; ``ev`` is re-recorded after s2's work.

    Correct: s2 passes the first record, then s1 passes ``ev2`` and ``done``
    completes.  With one reset ze event, s2 waits for the second record,
    which waits for s2: a deadlock.
    """
    s1, s2 = ze.stream_create(0), ze.stream_create(0)
    ev, ev2, done = (ze.event_create(False) for _ in range(3))
    gate = _Gate(ze)
    gates.append(gate)
    try:
        ze.event_record(ev, s1)  # record 1
        gate.block(s2)
        ze.stream_wait_event(s2, ev)  # must mean record 1
        ze.event_record(ev2, s2)
        ze.event_wait(ev)  # record 1 has landed
        ze.stream_wait_event(s1, ev2)
        ze.event_record(ev, s1)  # record 2: behind s2's wait
        ze.event_record(done, s1)
        gate.open()
        completed = _poll(ze, done)
        if not completed:
            stuck: Any = getattr(ev, "current", ev)
            ze._lib.zeEventHostSignal(stuck.handle)  # break the cycle to clean up
        assert completed, "s2's wait waited for a record made after the wait call"
        ze.event_wait(ev)
        assert ze.event_query(ev)
    finally:
        gate.open()
        for e in (ev, ev2, done):
            ze.event_destroy(e)
        ze.stream_destroy(s1)
        ze.stream_destroy(s2)


def test_host_wait_keeps_the_record_current_at_call_time(ze: ZeDriver, gates: list[_Gate]) -> None:
    """A host wait begun before a re-record returns when the earlier record lands."""
    s1, s2 = ze.stream_create(0), ze.stream_create(0)
    ev = ze.event_create(False)
    first, second = _Gate(ze), _Gate(ze)
    gates.extend([first, second])
    returned = threading.Event()

    def wait() -> None:
        ze.event_wait(ev)
        returned.set()

    waiter = threading.Thread(target=wait, daemon=True)
    try:
        first.block(s1)
        ze.event_record(ev, s1)
        waiter.start()
        _until_inside_event_wait(waiter)
        second.block(s2)
        ze.event_record(ev, s2)  # the waiter must not move on to this record
        assert not ze.event_query(ev)
        first.open()
        assert returned.wait(20), "the host wait waited for a record made after the call"
        # The latest record is still behind its gate: the earlier record's
        # signal must not complete it (it did when both shared one ze event).
        assert not ze.event_query(ev), "an earlier record's signal completed the latest one"
        second.open()
        ze.event_wait(ev)
    finally:
        first.open()
        second.open()
        waiter.join(20)
        ze.event_destroy(ev)
        ze.stream_destroy(s1)
        ze.stream_destroy(s2)


def _until_inside_event_wait(thread: threading.Thread) -> None:
    """Until ``thread`` blocks in the C wait (its innermost Python frame stops moving)."""
    names = {"event_wait", "_wait_recorded"}
    for _ in range(10_000):
        frame = sys._current_frames().get(thread.ident or 0)
        if frame is not None and frame.f_code.co_name in names:
            time.sleep(0.05)  # let it reach zeEventHostSynchronize
            return
        time.sleep(0.001)
    raise AssertionError("the waiter thread never reached event_wait")


def test_host_waits_race_rerecords(ze: ZeDriver) -> None:
    """Waits, queries and elapsed_ms on events another thread keeps re-recording."""
    s = ze.stream_create(0)
    buf = ze.mem_alloc(1 << 16)
    start, end = ze.event_create(True), ze.event_create(True)
    plain = ze.event_create(False)
    stop = threading.Event()
    errors: list[BaseException] = []
    rounds = 300

    def recorder() -> None:
        try:
            for i in range(rounds):
                ze.event_record(start, s)
                ze.memset_d8(buf, i & 0xFF, 1 << 16, s)
                ze.event_record(end, s)
                ze.event_record(plain, s)
        except BaseException as exc:
            errors.append(exc)
        finally:
            stop.set()

    def host_waiter() -> None:
        try:
            while not stop.is_set():
                ze.event_wait(plain)
                ze.event_query(plain)
                ze.event_wait(end)
                ze.event_wait(start)
                ze.event_query(end)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=recorder, daemon=True)]
    threads += [threading.Thread(target=host_waiter, daemon=True) for _ in range(3)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert not any(t.is_alive() for t in threads), "a host wait hung on a re-recorded event"
        assert not errors, errors
        ze.event_wait(end)
        assert ze.event_query(start) and ze.event_query(end)
        assert ze.event_elapsed_ms(start, end) >= 0.0
    finally:
        for e in (start, end, plain):
            ze.event_destroy(e)
        ze.mem_free(buf)
        ze.stream_destroy(s)


_SLOW_FIRST_STREAM = """
from aruntime.backends import levelzero
ze = levelzero.open_driver(0, sim=True)
slow, fast = ze.stream_create(0), ze.stream_create(0)
ev, ev2, done = (ze.event_create(False) for _ in range(3))
buf = ze.mem_alloc(4096)
ze.event_record(ev, fast)              # record 1: lands at once
for _ in range(8):                     # the slow stream is busy for 8 op latencies
    ze.memset_d8(buf, 1, 4096, slow)
ze.stream_wait_event(slow, ev)         # means record 1
ze.event_record(ev2, slow)
ze.event_wait(ev)                      # record 1 has landed; the slow stream is still busy
ze.stream_wait_event(fast, ev2)
ze.event_record(ev, fast)              # record 2, behind the slow stream's wait
ze.event_record(done, fast)
ze.event_wait(done)
for e in (ev, ev2, done):
    ze.event_destroy(e)
ze.mem_free(buf)
ze.stream_destroy(slow)
ze.stream_destroy(fast)
ze.close()
print("ok")
"""


def test_rerecord_before_wait_with_sim_latency() -> None:
    """The same pattern with the sim's timing model (50 ms per op) making one stream slow."""
    proc = run_python(
        _SLOW_FIRST_STREAM,
        timeout=30,
        ARUNTIME_LEVELZERO_SIM_DIRECT="1",
        ARUNTIME_SIM_OP_LATENCY_US="50000",
    )
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr


_PIPELINE = """
import anyio
import numpy as np
import aruntime as ar

CHUNK = 1 << 14
CHUNKS = 20

async def main() -> None:
    async with ar.open_backend("levelzero-sim") as gpu:
        kernel = gpu.kernel(gpu.builtin_module("vector_ops"), "scale_f32")
        src = np.arange(CHUNKS * CHUNK, dtype=np.float32)
        dst = np.zeros_like(src)
        up, compute, down = (gpu.create_stream() for _ in range(3))
        slots = [gpu.alloc(CHUNK * 4) for _ in range(3)]
        uploaded, computed, downloaded = ([gpu.create_event() for _ in slots] for _ in range(3))
        for i in range(CHUNKS):
            b = i % 3
            part = slice(i * CHUNK, (i + 1) * CHUNK)
            if i >= 3:
                gpu.stream_wait_event(up, downloaded[b])
            gpu.copy_h2d_async(src[part], slots[b], stream=up)
            gpu.record_event(uploaded[b], up)
            gpu.stream_wait_event(compute, uploaded[b])
            for _ in range(3):  # compute is the slow stage
                gpu.launch(kernel, CHUNK // 256, 256,
                           [np.uint32(CHUNK), np.float32(2), slots[b]], stream=compute)
            gpu.record_event(computed[b], compute)
            gpu.stream_wait_event(down, computed[b])
            gpu.copy_d2h_async(slots[b], dst[part], stream=down)
            gpu.record_event(downloaded[b], down)
            if i % 2:
                await uploaded[b]  # pace the host so records land between re-records
        for s in (up, compute, down):
            await s
        assert np.array_equal(dst, src * np.float32(8)), "wrong pipeline result"
        for ev in (*uploaded, *computed, *downloaded):
            ev.close()
        for s in (up, compute, down):
            s.close()
        for p in slots:
            gpu.free(p)

anyio.run(main, backend=LOOP)
print("ok")
"""


@pytest.mark.parametrize("loop", ["asyncio", "trio"])
def test_triple_buffered_pipeline_rerecords_each_chunk(loop: str) -> None:
    """20 chunks through 3 streams and 3 buffers, every event re-recorded per chunk.

    2 ms per op lets records land between the host's re-records; it hung
    before the fix.
    """
    proc = run_python(
        f"LOOP = {loop!r}\n" + _PIPELINE,
        timeout=60,
        ARUNTIME_LEVELZERO_SIM_DIRECT="1",
        ARUNTIME_SIM_OP_LATENCY_US="2000",
    )
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr


def test_a_passed_record_only_its_event_holds_is_recorded_again_in_place(ze: ZeDriver) -> None:
    """Every op's marker is re-recorded: once its last record has passed and nothing else
    holds that ze event, the next record reuses it instead of taking one from the pool."""
    stream = ze.stream_create(0)
    event = ze.event_create(False)
    e: Any = event
    try:
        ze.event_record(event, stream)
        ze.event_wait(event)
        first = e.current
        ze.event_record(event, stream)
        assert e.current is first  # reset and signalled again
        ze.event_wait(event)
        assert ze.event_query(event)
        # A host wait in progress holds it: the next record must take a fresh one.
        held = ze._held_current(e)
        assert held is first
        ze.event_record(event, stream)
        assert e.current is not first
        ze._events.release(held)
        ze.event_wait(event)
    finally:
        ze.event_destroy(event)
        ze.stream_destroy(stream)


def test_a_record_again_that_fails_leaves_the_event_complete(ze: ZeDriver) -> None:
    """The ze event was reset before the append failed: nothing will signal it, so the
    event must not be left pointing at it (a later wait would never return)."""
    from aruntime._exceptions import DriverError

    stream = ze.stream_create(0)
    event = ze.event_create(False)
    e: Any = event
    try:
        ze.event_record(event, stream)
        ze.event_wait(event)
        z = e.current

        def refusing_barrier(*args: Any) -> int:
            return 0x70000003  # ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY

        with (
            replaced_call(ze, "zeCommandListAppendBarrier", refusing_barrier),
            pytest.raises(DriverError, match="zeCommandListAppendBarrier"),
        ):
            ze.event_record(event, stream)
        assert e.current is None and z.holds == 0
        assert ze.event_query(event)
        ze.event_wait(event)  # returns: the last record that happened had passed
        ze.event_record(event, stream)  # and the event records again as usual
        ze.event_wait(event)
    finally:
        ze.event_destroy(event)
        ze.stream_destroy(stream)


def test_a_host_wait_on_a_passed_record_takes_no_hold(
    ze: ZeDriver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nearly every wait the core makes is on a record that has passed (its waiters ask
    first): such a wait cannot block, so it asks the event instead of holding it."""
    stream = ze.stream_create(0)
    event = ze.event_create(False)
    try:
        ze.event_record(event, stream)
        assert _poll(ze, event)

        def no_hold(*args: Any) -> None:
            raise AssertionError("a wait on a passed record took a hold")

        with monkeypatch.context() as patch:
            patch.setattr(ze._events, "hold", no_hold)
            ze.event_wait(event)
    finally:
        ze.event_destroy(event)
        ze.stream_destroy(stream)


def test_a_record_again_forgets_that_its_event_was_signalled(
    ze: ZeDriver, gates: list[_Gate]
) -> None:
    """A query that saw the record signalled spares the next one the driver call, until
    the event is recorded again: then it must ask, or it reports work behind a gate done."""
    stream = ze.stream_create(0)
    event = ze.event_create(False)
    e: Any = event
    try:
        ze.event_record(event, stream)
        assert _poll(ze, event)
        first = e.current
        assert first.signalled
        gate = _Gate(ze)
        gates.append(gate)
        gate.block(stream)
        try:
            ze.event_record(event, stream)
            assert e.current is first  # recorded again in place, behind the gate
            assert not first.signalled
            assert not ze.event_query(event)
        finally:
            gate.open()  # else a failure hangs in stream_destroy, not fails
        assert _poll(ze, event)
        ze.event_wait(event)
    finally:
        ze.event_destroy(event)
        ze.stream_destroy(stream)


def test_a_signalled_record_is_queried_once(ze: ZeDriver) -> None:
    """The policy queries every op's marker, then waits on it: one driver query between them."""
    stream = ze.stream_create(0)
    event = ze.event_create(False)
    queries: list[Any] = []
    real_query = ze._lib.zeEventQueryStatus

    def counting_query(handle: Any) -> int:
        queries.append(handle)
        return int(real_query(handle))

    try:
        ze.event_record(event, stream)
        ze.event_wait(event)
        with replaced_call(ze, "zeEventQueryStatus", counting_query):
            assert ze.event_query(event)
            ze.event_wait(event)
            assert ze.event_query(event)
            assert queries == []  # the first wait saw it signalled
            ze.event_record(event, stream)  # in place: knows its last record passed
            assert queries == []
            assert _poll(ze, event)
            ze.event_wait(event)
            assert len(queries) == 1
    finally:
        ze.event_destroy(event)
        ze.stream_destroy(stream)


def test_an_event_a_replay_resets_is_always_queried(ze: ZeDriver) -> None:
    """An event recorded into a capture is reset by each replay of the graph on the
    device: a query that once saw it signalled must not answer for the next replay."""
    stream = ze.stream_create(0)
    event = ze.event_create(False)
    e: Any = event
    graph = None
    try:
        ze.capture_begin(stream)
        ze.event_record(event, stream)
        graph = ze.capture_end(stream)
        for _ in range(3):
            ze.graph_launch(graph, stream)
            assert _poll(ze, event)
            ze.event_wait(event)
            assert e.current.replayed and not e.current.signalled
    finally:
        ze.event_destroy(event)
        ze.stream_destroy(stream)
        if graph is not None:
            ze.graph_destroy(graph)
