"""Reliability on levelzero-sim through the public API: faults, cancellation, exit.

Runs under asyncio and trio.  Fault injection and the timing model are
process-wide sim state, so every test puts them back as it found them.
"""

from __future__ import annotations

import contextlib
import gc
import time
from collections.abc import Iterator

import anyio
import numpy as np
import pytest

import aruntime as ar
from aruntime._exceptions import BackendUnavailableError, DeviceLostError, DriverError

from . import _simhooks
from ._subproc import run_python

pytestmark = pytest.mark.anyio


@pytest.fixture
def gpu() -> Iterator[ar.Backend]:
    try:
        backend = ar.open_backend("levelzero-sim")
    except BackendUnavailableError as exc:
        pytest.skip(f"levelzero-sim cannot be opened: {exc}")
    try:
        yield backend
    finally:
        _simhooks.hooks().arze_sim_clear_faults()
        _simhooks.hooks().arze_sim_set_timing(0.0, 0.0)
        backend.close()


async def _await_all(completions: list[ar.Completion]) -> list[BaseException | None]:
    results: list[BaseException | None] = [None] * len(completions)

    async def one(i: int) -> None:
        try:
            await completions[i]
        except DriverError as exc:
            results[i] = exc

    async with anyio.create_task_group() as tg:
        for i in range(len(completions)):
            tg.start_soon(one, i)
    return results


async def test_injected_kernel_fault_reaches_every_awaiter(gpu: ar.Backend) -> None:
    module = gpu.load_module("k", _simhooks.kernels_image())
    fill = gpu.kernel(module, "fill_f32")
    stream = gpu.create_stream()
    dev = gpu.alloc(4096)
    assert _simhooks.hooks().arze_sim_inject_fault(0, _simhooks.FAULT_KERNEL_ERROR, 1) == 0
    failed = gpu.launch(
        fill, (8, 1, 1), (128, 1, 1), [np.uint32(1024), np.float32(1), dev], stream=stream
    )
    # Ten tasks await the same failed op: each one sees the error.
    errors = await _await_all([failed] * 10)
    assert all(isinstance(e, DriverError) and not isinstance(e, DeviceLostError) for e in errors), (
        errors
    )
    # Not sticky: the stream goes on working.
    out = np.empty(1024, np.float32)
    gpu.launch(fill, (8, 1, 1), (128, 1, 1), [np.uint32(1024), np.float32(3), dev], stream=stream)
    await gpu.copy_d2h_async(dev, out, stream=stream)
    assert (out == 3).all()
    gpu.free(dev)
    stream.close()


@pytest.mark.parametrize("hand_overs", [1, 2])
async def test_a_kernel_fault_nobody_kept_reaches_an_op_after_a_hand_over(
    gpu: ar.Backend, hand_overs: int
) -> None:
    """A launch whose Completion nobody keeps gets no marker.  The sim hands its
    fault to the next event its queue signals: here the one through which the stream
    moves to its copy list (and back, for two).  The list that waited for that event
    takes the fault on, so the op awaited after it still fails, naming the launch."""
    module = gpu.load_module("k", _simhooks.kernels_image())
    fill = gpu.kernel(module, "fill_f32")
    stream = gpu.create_stream()
    dev = gpu.alloc(4096)
    args = [np.uint32(1024), np.float32(1), dev]
    await gpu.memset_async(dev, 0, 4096, stream=stream)
    assert _simhooks.hooks().arze_sim_inject_fault(0, _simhooks.FAULT_KERNEL_ERROR, 1) == 0
    gpu.launch(fill, (8, 1, 1), (128, 1, 1), args, stream=stream)  # dropped at once
    gpu.memset_async(dev, 0, 16, stream=stream)  # compute -> copy
    if hand_overs == 2:
        last = gpu.launch(fill, (8, 1, 1), (128, 1, 1), args, stream=stream)  # and back
    else:
        last = gpu.copy_d2h_async(dev, np.empty(1024, np.float32), stream=stream)
    with pytest.raises(DriverError, match=r"not done: .*\(the first a launch\)") as info:
        await last
    assert not isinstance(info.value, DeviceLostError)
    await gpu.synchronize(stream)  # seen: not raised again
    out = np.empty(1024, np.float32)
    gpu.launch(fill, (8, 1, 1), (128, 1, 1), [np.uint32(1024), np.float32(4), dev], stream=stream)
    await gpu.copy_d2h_async(dev, out, stream=stream)
    assert (out == 4).all()
    gpu.free(dev)
    stream.close()


async def test_failed_graph_replay_reaches_its_awaiter(gpu: ar.Backend) -> None:
    module = gpu.load_module("k", _simhooks.kernels_image())
    fill = gpu.kernel(module, "fill_f32")
    stream = gpu.create_stream()
    dev = gpu.alloc(4096)
    with gpu.capture(stream) as graph:
        gpu.launch(
            fill, (8, 1, 1), (128, 1, 1), [np.uint32(1024), np.float32(5), dev], stream=stream
        )
    assert _simhooks.hooks().arze_sim_inject_fault(0, _simhooks.FAULT_KERNEL_ERROR, 1) == 0
    failed = gpu.launch_graph(graph, stream)
    errors = await _await_all([failed] * 3)
    assert all(isinstance(e, DriverError) for e in errors), errors
    # The stream and the graph go on working.
    await gpu.launch_graph(graph, stream)
    out = np.empty(1024, np.float32)
    await gpu.copy_d2h_async(dev, out, stream=stream)
    assert (out == 5).all()
    gpu.destroy_graph(graph)
    gpu.free(dev)
    stream.close()


async def test_device_lost_reaches_every_later_awaiter(gpu: ar.Backend) -> None:
    module = gpu.load_module("k", _simhooks.kernels_image())
    fill = gpu.kernel(module, "fill_f32")
    streams = [gpu.create_stream() for _ in range(3)]
    dev = gpu.alloc(4096)
    host = np.zeros(1024, np.float32)
    assert _simhooks.hooks().arze_sim_inject_fault(0, _simhooks.FAULT_DEVICE_LOST, 1) == 0
    ops = [
        gpu.launch(
            fill, (8, 1, 1), (128, 1, 1), [np.uint32(1024), np.float32(1), dev], stream=streams[0]
        )
    ]
    errors = await _await_all(ops)
    assert isinstance(errors[0], DeviceLostError)
    later: list[BaseException | None] = []
    for s in streams:
        try:
            later.extend(await _await_all([gpu.copy_h2d_async(host, dev, stream=s)]))
        except DeviceLostError as exc:  # refused at enqueue: the device is gone
            later.append(exc)
    assert all(isinstance(e, DeviceLostError) for e in later), later
    _simhooks.hooks().arze_sim_clear_faults()
    for s in streams:
        with contextlib.suppress(DeviceLostError):  # errors nobody awaited surface here
            await gpu.synchronize(s)
        s.close()
    gpu.free(dev)


async def test_injected_out_of_memory(gpu: ar.Backend) -> None:
    assert _simhooks.hooks().arze_sim_inject_fault(0, _simhooks.FAULT_OUT_OF_MEMORY, 1) == 0
    with pytest.raises(ar.OutOfMemoryError, match="zeMemAllocDevice"):
        gpu.alloc(4096)
    gpu.free(gpu.alloc(4096))
    assert gpu.live_alloc_count() == 0


async def test_cancellation_storm(gpu: ar.Backend) -> None:
    """Hundreds of awaits cancelled mid-copy; buffers dropped at once; results intact."""
    _simhooks.hooks().arze_sim_set_timing(2.0, 50.0)  # copies take real time
    streams = [gpu.create_stream() for _ in range(4)]
    n = 64 * 1024
    dev = [gpu.alloc(n) for _ in range(8)]
    expected = [np.full(n, i + 1, np.uint8) for i in range(8)]
    for i, d in enumerate(dev):
        gpu.copy_h2d_async(expected[i].copy(), d, stream=streams[i % 4])  # host copy dropped

    async def copy_and_get_cancelled(i: int) -> None:
        with anyio.move_on_after(0):
            await gpu.copy_d2h_async(dev[i % 8], np.empty(n, np.uint8), stream=streams[i % 4])

    async with anyio.create_task_group() as tg:
        for i in range(300):
            tg.start_soon(copy_and_get_cancelled, i)
    gc.collect()
    for i, d in enumerate(dev):
        out = np.empty(n, np.uint8)
        await gpu.copy_d2h_async(d, out, stream=streams[i % 4])
        assert (out == expected[i]).all()
    for s in streams:
        await gpu.synchronize(s)
        s.close()
    for d in dev:
        gpu.free(d)
    assert gpu.live_alloc_count() == 0


def test_free_memory_returns_after_deferred_frees_and_reuse(gpu: ar.Backend) -> None:
    """alloc -> kernel -> free, 3,000 times with work queued: every byte comes back.

    Each free waits for the queued launch, so it runs on a release thread
    while this thread allocates, often at the address being freed.
    """
    fill = gpu.kernel(gpu.load_module("k", _simhooks.kernels_image()), "fill_f32")
    n = 256
    start = gpu.device_free_memory()
    queued: list[ar.Completion] = []
    for i in range(3000):
        ptr = gpu.alloc(n * 4 + (i % 3) * 256)
        queued.append(gpu.launch(fill, 1, n, [np.uint32(n), np.float32(i), ptr]))
        gpu.free(ptr)
        if len(queued) > 8:
            queued.pop(0).wait()
    for op in queued:
        op.wait()
    assert gpu.live_alloc_count() == 0
    # The last releases run on a waiter thread just after the launch is done,
    # maybe after this thread has woken: wait for them (bounded, not a timing claim).
    deadline = time.monotonic() + 10
    while gpu.device_free_memory() != start and time.monotonic() < deadline:
        time.sleep(0.005)
    assert start - gpu.device_free_memory() == 0


def test_exit_with_work_in_flight() -> None:
    """Processes that exit with slow copies queued neither crash nor hang."""
    code = """
        import numpy as np, aruntime as ar
        from tests.backends.levelzero import _simhooks
        gpu = ar.open_backend("levelzero-sim")
        _simhooks.hooks().arze_sim_set_timing(0.5, 200.0)
        s = gpu.create_stream()
        d = gpu.alloc(1 << 20)
        for _ in range(20):
            gpu.copy_h2d_async(np.ones(1 << 20, np.uint8), d, stream=s)
        print("queued", flush=True)
    """
    for _ in range(5):
        result = run_python(code, timeout=60)
        assert result.returncode == 0, result.stderr[-2000:]
        assert "queued" in result.stdout


def test_closing_a_busy_stream_then_the_backend(caplog: pytest.LogCaptureFixture) -> None:
    """The core destroys a closed stream after its last op, maybe after backend close."""
    try:
        gpu = ar.open_backend("levelzero-sim")
    except BackendUnavailableError as exc:
        pytest.skip(f"levelzero-sim cannot be opened: {exc}")
    _simhooks.hooks().arze_sim_set_timing(1.0, 100.0)
    try:
        streams = [gpu.create_stream() for _ in range(8)]
        dev = gpu.alloc(1 << 20)
        host = np.ones(1 << 20, np.uint8)
        for s in streams:
            gpu.copy_h2d_async(host, dev, stream=s)
            s.close()
        gpu.free(dev)
        gpu.close()
    finally:
        _simhooks.hooks().arze_sim_set_timing(0.0, 0.0)
    assert not [r for r in caplog.records if r.levelname == "ERROR"], caplog.text
