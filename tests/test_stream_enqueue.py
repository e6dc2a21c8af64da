"""``Stream.enqueue``: the backend's copies, memsets and launches without an ``Op`` object.

Only a capture and the race checker read an Op; everywhere else the op goes
to the completion policy as its parts.  These tests hold that path to what
``Stream.submit`` guarantees (refusals under the stream's lock, the right
buffers kept) and check that it builds no Op, since building one costs a
fifth of a memset's enqueue.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import aruntime as ar
import aruntime._handles as handles_module
import aruntime._ops as ops_module
import aruntime._submit as submit_module
from aruntime._enqueue import enabled as compiled_enabled
from aruntime._op import Op, OpKind
from aruntime._streamstate import StreamState

from .helpers import backend_or_skip

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["compiled", "python"])
def path(request: pytest.FixtureRequest) -> Iterator[str]:
    """Each test on both enqueues: the compiled one (_enqueue.py) and the Python one.

    Its own MonkeyPatch: a test's ``monkeypatch.undo()`` must not switch paths.
    """
    with pytest.MonkeyPatch.context() as patch:
        if request.param == "python":
            patch.setenv("ARUNTIME_COMPILED_ENQUEUE", "0")
        elif not compiled_enabled():
            pytest.skip("the compiled enqueue is not built or is switched off")
        yield str(request.param)


@pytest.fixture(params=["mock", "mock-async", "cuda-sim", "levelzero-sim"])
def gpu(request: pytest.FixtureRequest, path: str) -> Iterator[ar.Backend]:
    yield from backend_or_skip(request.param, test_variant=True, check_hazards=False)


class _NoOp(Op):
    """Stands in for Op where the plain path must not build one."""

    __slots__ = ()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise AssertionError("an Op was built on the plain path")


async def test_the_plain_path_builds_no_op(
    gpu: ar.Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    kernel = gpu.kernel(gpu.builtin_module("vector_ops"), "scale_f32")
    host = np.arange(64, dtype=np.float32)
    a, b = gpu.alloc(host.nbytes), gpu.alloc(host.nbytes)
    with gpu.create_stream() as stream:
        for module in (ops_module, handles_module, submit_module):
            monkeypatch.setattr(module, "Op", _NoOp)
        gpu.copy_h2d_async(host, a, stream=stream)
        gpu.memset_async(b, 0, host.nbytes, stream=stream)
        gpu.copy_d2d_async(a, b, host.nbytes, stream=stream)
        gpu.launch(kernel, 1, 64, [np.uint32(64), np.float32(3), b], stream=stream)
        out = await gpu.copy_d2h_async(b, np.empty_like(host), stream=stream)
        monkeypatch.undo()
    np.testing.assert_array_equal(out, host * 3)
    gpu.free(a)
    gpu.free(b)


def test_an_entry_freed_after_its_check_is_refused(gpu: ar.Backend) -> None:
    """Another thread's free between the check and the stream's lock: no driver call."""
    ptr = gpu.alloc(64)
    entry = gpu._ops._ledger.check_range(ptr, 64, "memset_async")  # type: ignore[attr-defined]
    calls: list[tuple[Any, ...]] = []
    with gpu.create_stream() as stream:
        gpu.free(ptr)
        with pytest.raises(ar.InvalidArgumentError, match=r"memset_async: .* was freed"):
            stream.enqueue(OpKind.MEMSET, lambda *a: calls.append(a), (0, 0, 64), (entry,), ())
    assert calls == []


def test_a_graph_closed_after_its_check_is_refused(gpu: ar.Backend) -> None:
    """Another thread's Graph.close() between the replay's check and the stream's lock."""
    ptr = gpu.alloc(64)
    calls: list[tuple[Any, ...]] = []
    with gpu.create_stream() as stream:
        with gpu.capture(stream) as graph:
            gpu.memset_async(ptr, 1, 64, stream=stream)
        handle = graph.handle
        graph.close()
        with pytest.raises(ar.ClosedResourceError, match=r"launch_graph: <graph .* is closed"):
            stream.enqueue(
                OpKind.LAUNCH_GRAPH, lambda *a: calls.append(a), (handle,), (graph,), (graph,)
            )
    assert calls == []
    gpu.free(ptr)


def test_a_closed_stream_refuses_with_the_ops_name(gpu: ar.Backend) -> None:
    stream = gpu.create_stream()
    stream.close()
    with pytest.raises(ar.ClosedResourceError, match=r"launch: .*closed"):
        stream.enqueue(OpKind.LAUNCH, lambda *a: None, (), (), ())


def test_a_capture_gets_the_whole_op(gpu: ar.Backend, monkeypatch: pytest.MonkeyPatch) -> None:
    """A capturing stream pins the buffers and the entries: keepalive is held, then entries."""
    host = np.ones(16, np.uint8)
    ptr = gpu.alloc(16)
    captured: list[Op] = []
    with gpu.create_stream() as stream:
        stream.state.capturing = True  # only the dispatch is under test here
        # The class's: a StreamState has slots, so no instance attribute can shadow it.
        monkeypatch.setattr(StreamState, "capture", lambda state, op, handle: captured.append(op))
        try:
            gpu.copy_h2d_async(host, ptr, stream=stream)
        finally:
            stream.state.capturing = False
    (op,) = captured
    assert op.kind is OpKind.COPY_H2D and op.nbytes == 16
    assert op.held == (host,)
    assert op.keepalive[0] is host and len(op.keepalive) == 2
    assert op.writes == ((int(ptr), 16),)
    gpu.free(ptr)
