"""Streams, events, synchronisation and errors on every backend."""

from __future__ import annotations

import anyio
import numpy as np
import pytest

import aruntime as ar

pytestmark = pytest.mark.anyio


async def test_streams_and_events(backend: ar.Backend) -> None:
    s1 = backend.create_stream()
    s2 = backend.create_stream(priority=backend.driver.priority_range()[1])
    a = backend.alloc(1 << 20)
    b = backend.alloc(1 << 20)
    data = np.random.default_rng(2).integers(0, 255, 1 << 20, dtype=np.uint8)
    backend.copy_h2d_async(data, a, stream=s1)
    ready = backend.create_event()
    backend.record_event(ready, s1)
    backend.stream_wait_event(s2, ready)
    backend.copy_d2d_async(a, b, 1 << 20, stream=s2)
    out = await backend.copy_d2h_async(b, np.empty(1 << 20, np.uint8), stream=s2)
    np.testing.assert_array_equal(out, data)
    await ready
    assert backend.event_query(ready)
    await s1
    await backend.synchronize(s2)
    backend.destroy_event(ready)
    backend.destroy_event(ready)  # idempotent
    s1.close()
    s2.close()
    s2.close()
    with pytest.raises(ar.ClosedResourceError):
        backend.copy_d2d_async(a, b, 16, stream=s1)
    backend.free(a)
    backend.free(b)


async def test_timing_events(backend: ar.Backend) -> None:
    start = backend.create_event(timing=True)
    end = backend.create_event(timing=True)
    ptr = backend.alloc(1 << 16)
    backend.record_event(start)
    backend.memset_async(ptr, 3, 1 << 16)
    backend.record_event(end)
    await end
    assert backend.elapsed_ms(start, end) >= 0.0
    plain = backend.create_event()
    backend.record_event(plain)
    await plain
    with pytest.raises(ar.InvalidArgumentError, match="timing"):
        backend.elapsed_ms(plain, end)
    for ev in (start, end, plain):
        ev.close()
    backend.free(ptr)


async def test_completion_api(backend: ar.Backend) -> None:
    ptr = backend.alloc(256)
    c = backend.memset_async(ptr, 1, 256)
    # wait() blocks its thread: off the loop, as sync code calls it.
    assert await anyio.to_thread.run_sync(lambda: c.wait(timeout=30)) is None
    assert c.done() and c.exception() is None
    out = np.zeros(256, np.uint8)
    assert await anyio.to_thread.run_sync(backend.copy_d2h_async(ptr, out).wait) is out
    assert (out == 1).all()
    backend.free(ptr)


async def test_kernel_launch(backend: ar.Backend) -> None:
    module = backend.builtin_module("vector_ops")
    saxpy = backend.kernel(module, "saxpy")
    n = 1000
    x = np.arange(n, dtype=np.float32)
    y = np.ones(n, dtype=np.float32)
    dx, dy = backend.alloc(x.nbytes), backend.alloc(y.nbytes)
    backend.copy_h2d_async(x, dx)
    backend.copy_h2d_async(y, dy)
    await backend.launch(saxpy, (n + 127) // 128, 128, [np.uint32(n), np.float32(3), dx, dy])
    out = await backend.copy_d2h_async(dy, np.empty_like(y))
    np.testing.assert_allclose(out, 3 * x + 1)
    with pytest.raises(TypeError, match=r"np\.uint32"):
        backend.launch(saxpy, 8, 128, [n, np.float32(3), dx, dy])
    with pytest.raises(ar.InvalidArgumentError):
        backend.launch(saxpy, 8, 4096, [np.uint32(n), np.float32(3), dx, dy])
    backend.free(dx)
    with pytest.raises(ar.InvalidArgumentError, match="freed"):
        backend.launch(saxpy, 8, 128, [np.uint32(n), np.float32(3), dx, dy])
    backend.free(dy)


async def test_graph_capture_and_replay(backend: ar.Backend) -> None:
    stream = backend.create_stream()
    scale = backend.kernel(backend.builtin_module("vector_ops"), "scale_f32")
    n = 256
    host = np.ones(n, dtype=np.float32)
    ptr = backend.alloc(host.nbytes)
    await backend.copy_h2d_async(host, ptr, stream=stream)
    with backend.capture(stream) as graph:
        assert backend.stream_is_capturing(stream)
        captured = backend.launch(scale, 2, 128, [np.uint32(n), np.float32(2), ptr], stream=stream)
    assert not backend.stream_is_capturing(stream)
    with pytest.raises(ar.CaptureError):
        await captured
    for _ in range(3):
        backend.launch_graph(graph, stream)
    out = await backend.copy_d2h_async(ptr, np.empty_like(host), stream=stream)
    np.testing.assert_array_equal(out, np.full(n, 8, np.float32))
    backend.destroy_graph(graph)
    with pytest.raises(ar.ClosedResourceError):
        backend.launch_graph(graph, stream)
    backend.begin_capture(stream)
    with pytest.raises(ar.CaptureError):
        backend.begin_capture(stream)
    assert backend.abort_capture_if_active(stream)
    assert not backend.abort_capture_if_active(stream)
    stream.close()
    backend.free(ptr)


async def test_graph_keeps_captured_host_buffers(backend: ar.Backend) -> None:
    import gc
    import weakref

    stream = backend.create_stream()
    ptr = backend.alloc(64)
    src = np.full(64, 5, np.uint8)
    ref = weakref.ref(src)
    with backend.capture(stream) as graph:
        backend.copy_h2d_async(src, ptr, stream=stream)
    del src
    gc.collect()
    assert ref() is not None
    await backend.launch_graph(graph, stream)
    out = await backend.copy_d2h_async(ptr, np.zeros(64, np.uint8), stream=stream)
    assert (out == 5).all()
    graph.close()
    gc.collect()
    await stream
    gc.collect()
    assert ref() is None
    stream.close()
    backend.free(ptr)


async def test_closed_backend_rejects_calls(backend: ar.Backend) -> None:
    ptr = backend.alloc(16)
    backend.free(ptr)
    backend.close()
    backend.close()
    with pytest.raises(ar.ClosedResourceError):
        backend.alloc(16)
    with pytest.raises(ar.ClosedResourceError):
        backend.create_stream()
