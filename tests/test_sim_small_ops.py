"""Small ops on the sims: an idle engine runs them where the queue moves on, no thread woken.

A copy or memset of at most 64 KiB whose engine is idle runs on the thread
that moves its queue on (ffi/sim/engine_threads.c), as a GPU's engine starts
an op when the doorbell rings; an op the device has finished by the time it
is handed to the stream's waiter is finished right there
(aruntime/_waiter.py).  So a small op on an idle stream is done when its
enqueue returns, and no thread is woken or started for it.  Nothing else
may change: a busy engine still runs its ops in turn, a stream still runs
in order, and a Completion still finishes after the ones queued before it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import aruntime as ar

from .helpers import (
    backend_or_skip,
    build_host_kernel,
    sim_inline_bytes,
    sim_library,
    sim_op_latency,
)

pytestmark = pytest.mark.anyio

SIMS = ["cuda-sim", "levelzero-sim"]


@pytest.fixture(params=SIMS)
def gpu(request: pytest.FixtureRequest) -> Iterator[ar.Backend]:
    yield from backend_or_skip(request.param)


@pytest.fixture(scope="module")
def hold_image(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    return build_host_kernel("hold_kernel", Path(tmp_path_factory.mktemp("hold")))


async def test_a_small_op_on_an_idle_stream_is_done_when_its_enqueue_returns(
    gpu: ar.Backend,
) -> None:
    dev = gpu.alloc(4096)
    host = np.arange(4096, dtype=np.uint8)
    # Pinned: a copy into pageable memory is staged through a host function.
    pinned = gpu.alloc_host_pinned(4096)
    out = np.frombuffer(pinned, dtype=np.uint8)
    with gpu.create_stream() as stream:
        for op in (
            gpu.memset_async(dev, 7, 4096, stream=stream),
            gpu.copy_h2d_async(host, dev, stream=stream),
            gpu.copy_d2h_async(dev, out, stream=stream),
        ):
            assert op.done(), op
            await op
        waiter = stream.state.waiter
        assert waiter is not None and not waiter.started  # no thread was needed
    assert np.array_equal(out, host)
    del out, op  # the last op's Completion holds its destination, a view
    gpu.free_host_pinned(pinned)
    gpu.free(dev)


async def test_without_small_ops_the_engines_threads_run_them(gpu: ar.Backend) -> None:
    """The knob that turns it off (for comparison) still gives the same answers."""
    dev = gpu.alloc(64)
    out = np.zeros(64, np.uint8)
    with sim_inline_bytes(gpu.name, 0), gpu.create_stream() as stream:
        await gpu.memset_async(dev, 5, 64, stream=stream)
        await gpu.copy_d2h_async(dev, out, stream=stream)
    assert (out == 5).all()
    gpu.free(dev)


async def test_a_small_op_waits_for_its_busy_engine(gpu: ar.Backend, hold_image: bytes) -> None:
    """The compute engine runs a held kernel: a small memset on another stream waits its turn."""
    hold = gpu.kernel(gpu.load_module("hold", hold_image), "hold_until")
    flag, dev = gpu.alloc(4), gpu.alloc(64)
    await gpu.memset_async(flag, 0, 4)
    with gpu.create_stream() as a, gpu.create_stream() as b, gpu.create_stream() as c:
        held = gpu.launch(hold, 1, 1, [flag], stream=a)
        small = gpu.memset_async(dev, 9, 64, stream=b)
        # The kernel cannot end before the flag is set, so the engine is busy
        # (or its thread has the kernel still to start): the memset is queued.
        assert not small.done()
        await gpu.copy_h2d_async(np.ones(1, np.uint32), flag, stream=c)  # a copy engine
        await held
        await small
    out = await gpu.copy_d2h_async(dev, np.zeros(64, np.uint8))
    assert (out == 9).all()
    gpu.free(flag)
    gpu.free(dev)


async def test_small_and_large_ops_on_one_stream_run_in_order(gpu: ar.Backend) -> None:
    """Large ops go to the engines' threads, small ones run where the queue moves on:
    one stream's ops still land in the order they were queued."""
    n = 1 << 20
    dev = gpu.alloc(n)
    out = np.zeros(n, np.uint8)
    with gpu.create_stream() as stream:
        for round_ in range(20):
            gpu.memset_async(dev, 1, n, stream=stream)  # large: the compute engine's thread
            gpu.memset_async(dev, 2 + round_, 64, stream=stream)  # small, behind it
            gpu.copy_h2d_async(np.full(64, 100 + round_, np.uint8), dev.offset(64), stream=stream)
        await gpu.copy_d2h_async(dev, out, stream=stream)
    assert (out[:64] == 21).all()
    assert (out[64:128] == 119).all()
    assert (out[128:] == 1).all()
    gpu.free(dev)


async def test_an_op_done_at_submit_still_finishes_after_the_ops_before_it(
    gpu: ar.Backend,
) -> None:
    """An event recorded while the stream was idle is done, but synchronizing on it after a
    pending op was queued finishes after that op: a stream's Completions finish in order."""
    dev = gpu.alloc(64)
    order: list[str] = []
    with gpu.create_stream() as stream:
        event = gpu.create_event()
        gpu.record_event(event, stream)
        with sim_op_latency(gpu.name, 20_000):
            slow = gpu.memset_async(dev, 1, 64, stream=stream)  # modeled: 20 ms
        synced = gpu.event_synchronize(event)
        for name, op in (("slow", slow), ("event", synced)):
            if not op.subscribe(lambda name=name: order.append(name)):
                order.append(name)
        await synced
        await slow
        gpu.destroy_event(event)
    assert order == ["slow", "event"]
    gpu.free(dev)


async def test_an_op_done_at_submit_gets_a_finished_completion_and_no_pending_one(
    gpu: ar.Backend,
) -> None:
    """Nobody will wait for it, so no pending Completion is made and finished around it:
    ops that return nothing share one finished Completion, as on the mock.

    This is the path of a stream whose every op keeps its marker: one
    shared with another library (``StreamState.share``, as a handed-out or
    adopted stream is).  Elsewhere a marker is recorded only where a wait
    needs one (tests/test_deferred_markers.py)."""
    dev = gpu.alloc(64)
    with gpu.create_stream() as stream:
        stream.state.share()
        first = gpu.memset_async(dev, 1, 64, stream=stream)
        second = gpu.memset_async(dev, 2, 64, stream=stream)
        assert first is second and first.done()
        out = np.zeros(64, np.uint8)
        pinned = gpu.alloc_host_pinned(64)
        dst = np.frombuffer(pinned, dtype=np.uint8)
        fetched = gpu.copy_d2h_async(dev, dst, stream=stream)
        assert fetched.done() and fetched is not first
        assert await fetched is dst  # its own finished Completion, holding the result
        out[:] = dst
        del dst, fetched
        gpu.free_host_pinned(pinned)
    assert (out == 2).all()
    gpu.free(dev)


async def test_an_op_done_at_submit_lets_go_of_the_callers_buffer(gpu: ar.Backend) -> None:
    """The core's view of a host buffer is released when the op finishes, at once here:
    a bytearray can be resized again as soon as the enqueue returns."""
    dev = gpu.alloc(64)
    data = bytearray(range(64))
    with gpu.create_stream() as stream:
        op = gpu.copy_h2d_async(data, dev, stream=stream)
        assert op.done()
        data.extend(b"more")  # BufferError while a view of it is held
        await op
    out = await gpu.copy_d2h_async(dev, np.zeros(64, np.uint8))
    assert bytes(out) == bytes(range(64))
    gpu.free(dev)


@pytest.mark.parametrize("name", SIMS)
def test_a_host_waiter_wakes_once_its_queue_is_let_go(name: str) -> None:
    """A thread blocked on an event that a queue signals wakes after the thread moving the
    queue on has let it go, not at the signal (ffi/sim/engine_events.c): woken at once,
    it took that thread's CPU and held the queue, and its next op, for up to 0.6 ms.
    The probe holds the queue 50 ms after the signal; the waiter must still wake."""
    import ctypes

    try:
        probe = sim_library(name).arsim_deferred_wake_ns
    except (OSError, AttributeError) as exc:
        pytest.skip(f"{name} unavailable: {exc}")
    probe.restype = ctypes.c_int64
    probe.argtypes = [ctypes.c_int]
    after_letting_go = probe(50_000)
    assert after_letting_go != -(2**63), "the waiter was never woken (or could not start)"
    assert after_letting_go >= 0, f"woken {-after_letting_go} ns before the queue was let go"
