"""cuda-sim: stream capture, graphs, and the capture rules."""

from __future__ import annotations

from typing import Any

import numpy as np
from _cudasim_support import (
    CU_STREAM_NON_BLOCKING,
    CUDA_ERROR_CAPTURED_EVENT,
    CUDA_ERROR_ILLEGAL_STATE,
    CUDA_ERROR_INVALID_HANDLE,
    CUDA_ERROR_STREAM_CAPTURE_IMPLICIT,
    CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
    CUDA_ERROR_STREAM_CAPTURE_ISOLATION,
    CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
    CUDA_SUCCESS,
    Cuda,
    ffi,
)

GLOBAL, THREAD_LOCAL, RELAXED = 0, 1, 2
NONE, ACTIVE, INVALIDATED = 0, 1, 2


def _ptr(a: np.ndarray) -> Any:
    return ffi.cast("void *", a.ctypes.data)


def _read(cu: Cuda, d: int, n: int) -> np.ndarray:
    out = np.zeros(n, np.uint8)
    cu.check(cu.lib.cuMemcpyDtoH_v2(_ptr(out), d, n))
    return out


def _status(cu: Cuda, s: Any) -> int:
    st = ffi.new("int *")
    cu.check(cu.lib.cuStreamIsCapturing(s, st))
    return int(st[0])


def test_capture_and_replay(cu: Cuda) -> None:
    lib = cu.lib
    s, other = cu.stream(), cu.stream()
    a, b = cu.alloc(64), cu.alloc(64)
    cu.check(lib.cuMemsetD8_v2(a, 0, 64))
    cu.check(lib.cuMemsetD8_v2(b, 0, 64))
    calls: list[int] = []

    @ffi.callback("void(void *)")
    def host_fn(user: Any) -> None:
        calls.append(int(ffi.cast("intptr_t", user)))

    assert _status(cu, s) == NONE
    cu.check(lib.cuStreamBeginCapture_v2(s, GLOBAL))
    assert _status(cu, s) == ACTIVE
    st, cid = ffi.new("int *"), ffi.new("cuuint64_t *")
    graph_out, deps, ndeps = ffi.new("CUgraph *"), ffi.new("CUgraphNode **"), ffi.new("size_t *")
    cu.check(lib.cuStreamGetCaptureInfo_v2(s, st, cid, graph_out, deps, ndeps))
    assert st[0] == ACTIVE and cid[0] != 0
    cu.check(lib.cuMemsetD8Async(a, 7, 64, s))
    cu.check(lib.cuMemcpyDtoDAsync_v2(b, a, 32, s))
    cu.check(lib.cuLaunchHostFunc(s, host_fn, ffi.cast("void *", 42)))
    graph = ffi.new("CUgraph *")
    cu.check(lib.cuStreamEndCapture(s, graph))
    assert graph[0] == graph_out[0]
    assert _status(cu, s) == NONE
    # Captured, not executed.
    assert (_read(cu, a, 64) == 0).all() and calls == []
    n = ffi.new("size_t *")
    cu.check(lib.cuGraphGetNodes(graph[0], ffi.NULL, n))
    assert n[0] == 3
    exe = ffi.new("CUgraphExec *")
    cu.check(lib.cuGraphInstantiateWithFlags(exe, graph[0], 0))
    cu.check(lib.cuGraphDestroy(graph[0]))  # the executable graph is independent
    for _ in range(2):
        cu.check(lib.cuMemsetD8_v2(b, 0, 64))
        cu.check(lib.cuGraphLaunch(exe[0], other))
        cu.check(lib.cuStreamSynchronize(other))
        assert (_read(cu, b, 32) == 7).all() and (_read(cu, b, 64)[32:] == 0).all()
    assert calls == [42, 42]
    cu.check(lib.cuGraphExecDestroy(exe[0]))
    assert lib.cuGraphLaunch(exe[0], other) == CUDA_ERROR_INVALID_HANDLE
    assert lib.cuGraphExecDestroy(exe[0]) == CUDA_ERROR_INVALID_HANDLE
    assert lib.cuGraphDestroy(graph[0]) == CUDA_ERROR_INVALID_HANDLE


def test_cross_stream_capture(cu: Cuda) -> None:
    lib = cu.lib
    s1, s2 = cu.stream(), cu.stream()
    a, b = cu.alloc(16), cu.alloc(16)
    fork, join = cu.event(), cu.event()
    cu.check(lib.cuStreamBeginCapture_v2(s1, GLOBAL))
    cu.check(lib.cuMemsetD8Async(a, 1, 16, s1))
    cu.check(lib.cuEventRecord(fork, s1))
    assert lib.cuEventQuery(fork) == CUDA_ERROR_CAPTURED_EVENT
    cu.check(lib.cuStreamWaitEvent(s2, fork, 0))  # s2 joins the capture
    assert _status(cu, s2) == ACTIVE
    cu.check(lib.cuMemcpyDtoDAsync_v2(b, a, 16, s2))
    cu.check(lib.cuEventRecord(join, s2))
    cu.check(lib.cuStreamWaitEvent(s1, join, 0))
    graph = ffi.new("CUgraph *")
    cu.check(lib.cuStreamEndCapture(s1, graph))
    assert _status(cu, s2) == NONE
    assert lib.cuEventQuery(fork) == CUDA_SUCCESS
    exe = ffi.new("CUgraphExec *")
    cu.check(lib.cuGraphInstantiateWithFlags(exe, graph[0], 0))
    cu.check(lib.cuGraphLaunch(exe[0], s1))
    cu.check(lib.cuStreamSynchronize(s1))
    assert (_read(cu, b, 16) == 1).all()
    cu.check(lib.cuGraphExecDestroy(exe[0]))
    cu.check(lib.cuGraphDestroy(graph[0]))


def test_synchronizing_a_capturing_stream_invalidates_it(cu: Cuda) -> None:
    lib = cu.lib
    s = cu.stream()
    d = cu.alloc(16)
    cu.check(lib.cuStreamBeginCapture_v2(s, GLOBAL))
    cu.check(lib.cuMemsetD8Async(d, 1, 16, s))
    assert lib.cuStreamSynchronize(s) == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED
    assert _status(cu, s) == INVALIDATED
    assert lib.cuMemsetD8Async(d, 1, 16, s) == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED
    graph = ffi.new("CUgraph *")
    assert lib.cuStreamEndCapture(s, graph) == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED
    assert graph[0] == ffi.NULL
    assert _status(cu, s) == NONE
    cu.check(lib.cuStreamSynchronize(s))  # usable again


def test_capture_rules(cu: Cuda) -> None:
    lib = cu.lib
    s = cu.stream()
    d = cu.alloc(16)
    host = np.zeros(16, np.uint8)
    graph = ffi.new("CUgraph *")

    cu.check(lib.cuStreamBeginCapture_v2(s, GLOBAL))
    assert lib.cuStreamBeginCapture_v2(s, GLOBAL) == CUDA_ERROR_ILLEGAL_STATE
    assert lib.cuStreamQuery(s) == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED
    # The query broke the capture.
    assert lib.cuStreamEndCapture(s, graph) == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED
    cu.check(lib.cuStreamBeginCapture_v2(s, GLOBAL))
    # Legacy-stream work during a global capture would depend on it.
    assert lib.cuMemsetD8Async(d, 1, 16, ffi.NULL) == CUDA_ERROR_STREAM_CAPTURE_IMPLICIT
    assert lib.cuStreamEndCapture(s, graph) == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED
    # A context-wide synchronize during a global capture is refused, and
    # waiting on an event recorded outside the capture breaks it.
    cu.check(lib.cuStreamBeginCapture_v2(s, GLOBAL))
    assert lib.cuCtxSynchronize() == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED
    outside = cu.event()
    assert lib.cuStreamWaitEvent(s, outside, 0) == CUDA_ERROR_STREAM_CAPTURE_ISOLATION
    assert lib.cuStreamEndCapture(s, graph) == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED
    # Whatever the mode, the legacy stream cannot wait for a capturing
    # blocking stream; a capturing non-blocking stream does not bother it.
    cu.check(lib.cuStreamBeginCapture_v2(s, RELAXED))
    assert lib.cuMemcpyHtoD_v2(d, _ptr(host), 16) == CUDA_ERROR_STREAM_CAPTURE_IMPLICIT
    assert lib.cuStreamEndCapture(s, graph) == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED
    nonblocking = cu.stream(CU_STREAM_NON_BLOCKING)
    cu.check(lib.cuStreamBeginCapture_v2(nonblocking, RELAXED))
    cu.check(lib.cuMemcpyHtoD_v2(d, _ptr(host), 16))
    cu.check(lib.cuStreamEndCapture(nonblocking, graph))
    cu.check(lib.cuGraphDestroy(graph[0]))
    # Ending a capture that never began; capturing the legacy stream.
    assert lib.cuStreamEndCapture(s, graph) == CUDA_ERROR_ILLEGAL_STATE
    assert lib.cuStreamBeginCapture_v2(ffi.NULL, GLOBAL) == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED


def test_destroying_a_capturing_stream_ends_its_capture(cu: Cuda) -> None:
    lib = cu.lib
    s, s2 = cu.stream(), cu.stream()
    d = cu.alloc(16)
    fork = cu.event()
    cu.check(lib.cuStreamBeginCapture_v2(s, GLOBAL))
    cu.check(lib.cuEventRecord(fork, s))
    cu.check(lib.cuStreamWaitEvent(s2, fork, 0))
    cu.check(lib.cuStreamDestroy_v2(s))
    assert _status(cu, s2) == NONE  # the joined stream left with it
    # The legacy stream works again: no capture is left in the context.
    cu.check(lib.cuMemsetD8_v2(d, 1, 16))
    cu.check(lib.cuCtxSynchronize())
    assert lib.cuEventQuery(fork) == CUDA_SUCCESS
