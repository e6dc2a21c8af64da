"""Stream-ordered allocation (alloc_async/free_async) on every backend.

The memory is usable at once by the stream's later work, a free takes
effect only after the stream's earlier work, freed memory is reused, the
ledger knows every allocation's call site, and misuse is refused clearly.
That neither call blocks the loop is measured in tests/test_loop_stall.py.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

import aruntime as ar

from ..helpers import Gate, build_host_kernel, sim_sanitizing

pytestmark = pytest.mark.anyio

N = 4096  # float32 elements
NBYTES = 4 * N


async def test_usable_at_once_in_stream_order(backend: ar.Backend) -> None:
    saxpy = backend.kernel(backend.builtin_module("vector_ops"), "saxpy")
    stream = backend.create_stream()
    x = np.arange(N, dtype=np.float32)
    outs = []
    for round_ in range(4):
        # Nothing awaited between the allocation and the work that uses it.
        dx = backend.alloc_async(NBYTES, stream)
        dy = backend.alloc_async(NBYTES, stream)
        backend.copy_h2d_async(x, dx, stream=stream)
        backend.memset_async(dy, 0, NBYTES, stream=stream)
        args = [np.uint32(N), np.float32(round_ + 1), dx, dy]
        backend.launch(saxpy, (N + 255) // 256, 256, args, stream=stream)
        outs.append(backend.copy_d2h_async(dy, np.empty(N, np.float32), stream=stream))
        backend.free_async(dx, stream)
        backend.free_async(dy, stream)
    for round_, done in enumerate(outs):
        np.testing.assert_array_equal(await done, (round_ + 1) * x)
    stream.close()


async def test_freed_memory_is_reused(backend: ar.Backend) -> None:
    stream = backend.create_stream()
    addresses = set()
    host = np.empty(NBYTES, np.uint8)
    for i in range(64):
        ptr = backend.alloc_async(NBYTES, stream)
        addresses.add(int(ptr))
        backend.memset_async(ptr, i, NBYTES, stream=stream)
        done = backend.copy_d2h_async(ptr, host, stream=stream)
        backend.free_async(ptr, stream)
    await done
    assert (host == 63).all()
    # One stream, one size: the pool hands the same block back every time.
    assert len(addresses) <= 2, f"{len(addresses)} blocks for 64 same-size allocations"
    stream.close()


_Hold = Callable[[ar.Stream], tuple[ar.Completion, Callable[[], None] | None]]


def _hold(backend: ar.Backend, tmp_path_factory: pytest.TempPathFactory) -> _Hold:
    """start(stream): an op that keeps ``stream`` busy, and what releases it (or None)."""
    if backend.name == "mock" and not backend.driver.synchronous:
        gate = Gate(backend)
        return lambda stream: (gate.launch(stream), gate.open)
    if backend.name.endswith("-sim"):
        image = build_host_kernel("sleep_kernel", tmp_path_factory.mktemp("sleep"))
        kernel = backend.kernel(backend.load_module("hold", image), "sleep_us")
        return lambda stream: (
            backend.launch(kernel, 1, 1, [np.uint64(200_000)], stream=stream),
            None,
        )
    pytest.skip(f"no way to hold a {backend.name} stream busy here")


async def test_free_takes_effect_after_earlier_work(
    backend: ar.Backend, tmp_path_factory: pytest.TempPathFactory
) -> None:
    start = _hold(backend, tmp_path_factory)
    first, second = backend.create_stream(), backend.create_stream()
    data = np.arange(NBYTES, dtype=np.uint32).astype(np.uint8)
    p1 = backend.alloc_async(NBYTES, first)
    backend.copy_h2d_async(data, p1, stream=first)
    held, release = start(first)
    seen = backend.copy_d2h_async(p1, np.zeros(NBYTES, np.uint8), stream=first)
    backend.free_async(p1, first)  # the copy above still has to read it
    # Another stream allocates now and scribbles over what it gets.
    p2 = backend.alloc_async(NBYTES, second)
    scribble = backend.memset_async(p2, 0xEE, NBYTES, stream=second)
    await scribble
    if release is not None:
        release()
    np.testing.assert_array_equal(await seen, data)
    await held
    await backend.synchronize(first)
    # Once the freeing stream caught up, any stream may reuse the block.
    p3 = backend.alloc_async(NBYTES, second)
    if backend.name != "cuda":  # a GPU's pool is free to choose another block
        assert int(p3) == int(p1)
    backend.free_async(p2, second)
    backend.free_async(p3, second)
    await backend.synchronize(second)
    first.close()
    second.close()


async def test_freeing_stream_reuses_memory_for_a_smaller_request(
    backend: ar.Backend, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Reused at once in stream order, for less; the work before the free keeps all of it."""
    start = _hold(backend, tmp_path_factory)
    stream = backend.create_stream()
    scale = backend.kernel(backend.builtin_module("vector_ops"), "scale_f32")
    big = 64 * N  # float32 elements: 1 MiB
    p1 = backend.alloc_async(4 * big, stream)
    backend.copy_h2d_async(np.ones(big, np.float32), p1, stream=stream)
    held, release = start(stream)
    backend.launch(scale, big // 256, 256, [np.uint32(big), np.float32(3), p1], stream=stream)
    whole = backend.copy_d2h_async(p1, np.empty(big, np.float32), stream=stream)
    backend.free_async(p1, stream)
    p2 = backend.alloc_async(NBYTES, stream)
    # A GPU's pool is free to choose another block; a sim's sanitizer keeps
    # the guard page at the end of each request, so it never shrinks a block.
    if backend.name != "cuda" and not sim_sanitizing(backend):
        assert int(p2) == int(p1)
    backend.memset_async(p2, 0, NBYTES, stream=stream)
    part = backend.copy_d2h_async(p2, np.empty(N, np.float32), stream=stream)
    if release is not None:
        release()
    np.testing.assert_array_equal(await whole, np.full(big, 3, np.float32))
    np.testing.assert_array_equal(await part, np.zeros(N, np.float32))
    await held
    backend.free_async(p2, stream)
    await backend.synchronize(stream)
    stream.close()


async def test_ledger_and_misuse(backend: ar.Backend) -> None:
    stream = backend.create_stream()
    ptr = backend.alloc_async(NBYTES, stream)
    line = test_ledger_and_misuse.__code__.co_firstlineno + 2
    (entry,) = [a for a in backend.live_allocations() if a.ptr is ptr]
    assert entry.nbytes == NBYTES and entry.kind == "async"
    assert entry.site.endswith(f"test_alloc_async.py:{line}")
    with pytest.raises(ar.InvalidArgumentError, match="free it with free_async"):
        backend.free(ptr)
    plain = backend.alloc(NBYTES)
    with pytest.raises(ar.InvalidArgumentError, match="free_async"):
        backend.free_async(plain, stream)
    backend.free(plain)
    with pytest.raises(ar.InvalidArgumentError, match="view"):
        backend.free_async(ptr[16:], stream)
    with pytest.raises(ar.InvalidArgumentError, match="nbytes must be >= 1"):
        backend.alloc_async(0, stream)
    with pytest.raises(TypeError, match="stream must be a Stream"):
        backend.alloc_async(NBYTES, "s")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="nbytes must be an int"):
        backend.alloc_async(1.5, stream)  # type: ignore[arg-type]
    capturing = backend.create_stream()
    with pytest.raises(ar.CaptureError, match="free_async"), backend.capture(capturing):
        backend.free_async(ptr, capturing)  # a graph frees only what it allocated
    backend.free_async(ptr, stream)
    assert backend.live_alloc_count() == 0
    with pytest.raises(ar.InvalidArgumentError):
        backend.free_async(ptr, stream)  # twice
    await backend.synchronize(stream)
    stream.close()
    capturing.close()


async def test_alloc_async_inside_a_capture(backend: ar.Backend) -> None:
    stream = backend.create_stream()
    if backend.name not in ("cuda", "cuda-sim"):
        # Only CUDA's graph memory nodes record a stream-ordered allocation.
        with pytest.raises(ar.CaptureError, match="alloc_async"), backend.capture(stream):
            backend.alloc_async(NBYTES, stream)
        stream.close()
        return
    keep = backend.alloc(NBYTES)
    with backend.capture(stream) as graph:
        scratch = backend.alloc_async(NBYTES, stream)
        backend.memset_async(scratch, 0x5A, NBYTES, stream=stream)
        backend.copy_d2d_async(scratch, keep, NBYTES, stream=stream)
        backend.free_async(scratch, stream)
    with pytest.raises(ar.InvalidArgumentError):
        backend.memset_async(scratch, 0, NBYTES, stream=stream)  # freed in the graph
    for value in (0, 1):
        # Each launch allocates and frees the scratch memory again.
        await backend.memset_async(keep, value, NBYTES, stream=stream)
        await backend.launch_graph(graph, stream)
        out = await backend.copy_d2h_async(keep, np.zeros(NBYTES, np.uint8), stream=stream)
        assert (out == 0x5A).all()
    backend.destroy_graph(graph)
    backend.free(keep)
    await backend.synchronize(stream)
    stream.close()


async def test_default_stream_and_sweep(backend: ar.Backend) -> None:
    ptr = backend.alloc_async(NBYTES)
    await backend.memset_async(ptr, 1, NBYTES)
    backend.free_async(ptr)
    kept = backend.alloc_async(NBYTES)
    assert backend.sweep_unreleased() == 1
    with pytest.raises(ar.InvalidArgumentError):
        backend.free_async(kept)
    await backend.synchronize()


def test_plain_alloc_takes_back_idle_pool_memory() -> None:
    gpu = ar.open_backend("mock", total_memory=64 << 20)
    try:
        ptrs = [gpu.alloc_async(5 << 20) for _ in range(3)]
        for ptr in ptrs:
            gpu.free_async(ptr)  # 15 MiB idle, under the pool's keep limit (16 MiB)
        assert gpu.device_free_memory() < 50 << 20
        big = gpu.alloc(60 << 20)  # fits only if the pool gives its idle blocks back
        gpu.free(big)
        with pytest.raises(ar.OutOfMemoryError):
            gpu.alloc(65 << 20)
    finally:
        gpu.close()


def test_close_with_stream_ordered_memory_outstanding() -> None:
    for name in ("mock", "cuda-sim", "levelzero-sim"):
        try:
            gpu = ar.open_backend(name)
        except ar.BackendUnavailableError:
            continue
        stream = gpu.create_stream()
        gpu.alloc_async(NBYTES, stream)
        freed = gpu.alloc_async(NBYTES, stream)
        gpu.free_async(freed, stream)
        # Frees both, and whatever the pool kept; the live one with a warning.
        with pytest.warns(ResourceWarning, match="freed 1 allocations"):
            gpu.close()
        assert gpu.closed
