"""Closing a backend with everything still live releases each resource once, in dependency order.

A spy wraps the driver's release calls before anything is made, so every
release the core asks for is recorded: which call, which driver object.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import aruntime as ar

pytestmark = pytest.mark.anyio

_RELEASES = (
    "stream_destroy",
    "event_destroy",
    "graph_destroy",
    "module_unload",
    "mem_free",
    "host_free",
    "close",
)


def _spy(driver: Any) -> list[tuple[str, object]]:
    """Record every release call on ``driver`` as ``(call, its first argument)``."""
    calls: list[tuple[str, object]] = []

    def recorded(name: str, real: Callable[..., Any], *args: Any) -> Any:
        calls.append((name, args[0] if args else None))
        return real(*args)

    for name in _RELEASES:
        setattr(driver, name, functools.partial(recorded, name, getattr(driver, name)))
    return calls


def _index(calls: list[tuple[str, object]], name: str, target: object) -> int:
    """Where ``target`` was released by ``name``; it must be exactly once."""
    hits = [i for i, (n, obj) in enumerate(calls) if n == name and _same(obj, target)]
    assert len(hits) == 1, f"{name}({target!r}) ran {len(hits)} times: {calls}"
    return hits[0]


def _same(a: object, b: object) -> bool:
    return a == b if isinstance(b, int) else a is b


async def test_close_releases_each_resource_once_in_dependency_order(backend: ar.Backend) -> None:
    calls = _spy(backend.driver)
    rz = backend._state.redzone  # the driver frees the raw address, below the guard band
    n = 256
    ptr = backend.alloc(n * 4)
    arena = backend.alloc_arena(4096)
    pinned = backend.alloc_host_pinned(4096)
    module = backend.builtin_module("vector_ops")
    fill = backend.kernel(module, "fill_f32")
    stream = backend.create_stream()
    other = backend.create_stream()
    src = np.arange(n, dtype=np.float32)
    with backend.capture(stream) as graph:
        backend.copy_h2d_async(src, ptr, stream=stream)
        backend.launch(fill, 1, n, [np.uint32(n), np.float32(2.0), ptr], stream=stream)
    await backend.launch_graph(graph, stream)
    event = backend.create_event()
    backend.record_event(event, other)
    closed_early = backend.create_event()
    backend.record_event(closed_early, stream)
    closed_early.close()  # released by its own close, not again by the backend's
    await other
    handles = {
        "stream": stream.handle,
        "other": other.handle,
        "event": event.handle,
        "early": closed_early.handle,
        "graph": graph.handle,
        "module": module.handle,
    }
    with pytest.warns(ResourceWarning, match="still live"):
        backend.close()
    backend.close()  # idempotent: releases nothing twice

    stream_at = _index(calls, "stream_destroy", handles["stream"])
    _index(calls, "stream_destroy", handles["other"])
    _index(calls, "event_destroy", handles["event"])
    _index(calls, "event_destroy", handles["early"])
    graph_at = _index(calls, "graph_destroy", handles["graph"])
    module_at = _index(calls, "module_unload", handles["module"])
    ptr_at = _index(calls, "mem_free", ptr.address - rz)
    arena_at = _index(calls, "mem_free", arena.address - rz)
    pinned_at = _index(calls, "host_free", pinned.address)
    close_at = _index(calls, "close", None)
    # The graph goes before the memory and the module its ops use; every
    # resource goes before the driver itself, which closes last.
    assert graph_at < ptr_at and graph_at < module_at
    assert close_at == len(calls) - 1
    assert max(stream_at, graph_at, module_at, ptr_at, arena_at, pinned_at) < close_at
    for handle in (stream, other, event, closed_early, graph, module):
        assert handle.closed
    with pytest.raises(ar.ClosedResourceError):
        backend.create_stream()
