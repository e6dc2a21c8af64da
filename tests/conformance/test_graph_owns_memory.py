"""A graph owns the device memory its ops use (issue 10, item 6).

``free()`` of memory a live graph references invalidates the pointer at once,
but the memory is released only after ``destroy_graph`` (and the work queued
before it): a replay after the free writes into memory that still belongs to
the graph, never into a new allocation.
"""

from __future__ import annotations

import anyio
import numpy as np
import pytest

import aruntime as ar

pytestmark = pytest.mark.anyio

N = 4096  # float32 elements
NBYTES = 4 * N


async def test_replay_after_free_leaves_new_allocations_alone(backend: ar.Backend) -> None:
    fill = backend.kernel(backend.builtin_module("vector_ops"), "fill_f32")
    stream = backend.create_stream()
    a = backend.alloc(NBYTES)
    b = backend.alloc(NBYTES)
    with backend.capture(stream) as graph:
        backend.memset_async(a, 0x11, NBYTES, stream=stream)
        args = [np.uint32(N), np.float32(7), b]
        backend.launch(fill, (N + 255) // 256, 256, args, stream=stream)
    freed = {int(a), int(b)}
    backend.free(a)
    backend.free(b)
    with pytest.raises(ar.InvalidArgumentError, match="was freed"):
        backend.memset_async(a, 0, NBYTES, stream=stream)
    # New allocations of the same size while the graph lives: none may alias.
    fresh = [backend.alloc(NBYTES) for _ in range(4)]
    fresh.append(backend.alloc_async(NBYTES, stream))
    assert not freed & {int(p) for p in fresh}
    for p in fresh:
        backend.memset_async(p, 0x22, NBYTES, stream=stream)
    for _ in range(3):
        await backend.launch_graph(graph, stream)
    for p in fresh:
        out = await backend.copy_d2h_async(p, np.zeros(NBYTES, np.uint8), stream=stream)
        assert (out == 0x22).all()
    assert backend.live_alloc_count() == len(fresh)  # the freed ones are gone from the ledger
    backend.destroy_graph(graph)
    await backend.synchronize(stream)
    for p in fresh[:-1]:
        backend.free(p)
    backend.free_async(fresh[-1], stream)
    await backend.synchronize(stream)
    stream.close()


async def test_memory_is_released_at_destroy_graph(backend: ar.Backend) -> None:
    if backend.name in ("cuda", "levelzero"):
        pytest.skip("a GPU's free-memory figure moves with everything else on it")
    stream = backend.create_stream()
    big = 64 << 20
    before = backend.device_free_memory()
    ptr = backend.alloc(big)
    with backend.capture(stream) as graph:
        backend.memset_async(ptr, 1, big, stream=stream)
    backend.free(ptr)
    await backend.launch_graph(graph, stream)
    assert backend.device_free_memory() <= before - big  # still the graph's
    backend.destroy_graph(graph)
    await backend.synchronize(stream)
    # The release runs on a waiter thread once the queued work is done, maybe
    # just after this task wakes: give it a moment (bounded, not a timing claim).
    with anyio.move_on_after(10):
        while backend.device_free_memory() <= before - big:
            await anyio.sleep(0.005)
    assert backend.device_free_memory() > before - big  # given back
    stream.close()


async def test_capture_aborted_releases_what_was_freed(backend: ar.Backend) -> None:
    stream = backend.create_stream()
    ptr = backend.alloc(NBYTES)
    with pytest.raises(RuntimeError, match="boom"), backend.capture(stream):
        backend.memset_async(ptr, 1, NBYTES, stream=stream)
        backend.free(ptr)  # during the capture: parked until the capture ends
        raise RuntimeError("boom")
    await backend.synchronize(stream)
    assert backend.live_alloc_count() == 0
    stream.close()


def test_close_with_a_graph_over_freed_memory() -> None:
    for name in ("mock", "cuda-sim", "levelzero-sim"):
        try:
            gpu = ar.open_backend(name)
        except ar.BackendUnavailableError:
            continue
        stream = gpu.create_stream()
        ptr = gpu.alloc(NBYTES)
        with gpu.capture(stream) as graph:
            gpu.memset_async(ptr, 1, NBYTES, stream=stream)
        gpu.free(ptr)
        gpu.close()  # destroys the graph, then releases the memory parked on it
        assert gpu.closed and graph.closed
