"""cuda-sim: streams, events, engines and the timing model.

Overlap and ordering are asserted through event timestamps and the timing
model's lower bounds (an op holds its engine at least as long as the model
says), never through wall-clock thresholds.
"""

from __future__ import annotations

import itertools
import time
from typing import Any

import numpy as np
from _cudasim_support import (
    CU_EVENT_BLOCKING_SYNC,
    CU_EVENT_DISABLE_TIMING,
    CU_STREAM_NON_BLOCKING,
    CU_STREAM_PER_THREAD,
    CUDA_ERROR_INVALID_HANDLE,
    CUDA_ERROR_NOT_READY,
    CUDA_SUCCESS,
    Cuda,
    Gate,
    ffi,
    run_alone,
)

NULL_STREAM = ffi.NULL


def _ptr(a: np.ndarray) -> Any:
    return ffi.cast("void *", a.ctypes.data)


def _pinned(cu: Cuda, n: int) -> tuple[Any, np.ndarray]:
    pp = ffi.new("void **")
    cu.check(cu.lib.cuMemHostAlloc(pp, n, 0))
    return pp[0], np.frombuffer(ffi.buffer(pp[0], n), dtype=np.uint8)


def test_async_copies_and_event_wait(cu: Cuda) -> None:
    lib = cu.lib
    s = cu.stream()
    n = 1 << 16
    hp, host = _pinned(cu, n)
    host[:] = np.arange(n, dtype=np.uint8)
    d = cu.alloc(n)
    out_p, out = _pinned(cu, n)
    e = cu.event(CU_EVENT_BLOCKING_SYNC)
    assert lib.cuEventQuery(e) == CUDA_SUCCESS  # never recorded: complete
    cu.check(lib.cuMemcpyHtoDAsync_v2(d, hp, n, s))
    cu.check(lib.cuMemcpyDtoHAsync_v2(out_p, d, n, s))
    cu.check(lib.cuEventRecord(e, s))
    cu.check(lib.cuEventSynchronize(e))
    assert lib.cuEventQuery(e) == CUDA_SUCCESS
    assert np.array_equal(out, host)
    cu.check(lib.cuStreamDestroy_v2(s))
    cu.check(lib.cuMemFreeHost(hp))
    cu.check(lib.cuMemFreeHost(out_p))


def test_queries_report_not_ready_while_work_runs(cu: Cuda) -> None:
    lib = cu.lib
    s = cu.stream()
    d = cu.alloc(64)
    e = cu.event()
    gate = Gate(cu, s)
    cu.check(lib.cuMemsetD8Async(d, 1, 64, s))
    cu.check(lib.cuEventRecord(e, s))
    assert lib.cuStreamQuery(s) == CUDA_ERROR_NOT_READY
    assert lib.cuEventQuery(e) == CUDA_ERROR_NOT_READY
    gate.release()
    cu.check(lib.cuStreamSynchronize(s))
    assert lib.cuStreamQuery(s) == CUDA_SUCCESS
    assert lib.cuEventQuery(e) == CUDA_SUCCESS


def test_event_timing(cu: Cuda) -> None:
    lib = cu.lib
    lib.arsim_set_timing(0.0, 20_000.0)
    s = cu.stream()
    d = cu.alloc(64)
    a, b = cu.event(), cu.event()
    untimed = cu.event(CU_EVENT_DISABLE_TIMING)
    ms = ffi.new("float *")
    assert lib.cuEventElapsedTime_v2(ms, a, b) == CUDA_ERROR_INVALID_HANDLE  # not recorded
    cu.check(lib.cuEventRecord(a, s))
    cu.check(lib.cuMemsetD8Async(d, 1, 64, s))
    cu.check(lib.cuEventRecord(b, s))
    cu.check(lib.cuEventRecord(untimed, s))
    assert lib.cuEventElapsedTime_v2(ms, a, b) in (CUDA_ERROR_NOT_READY, CUDA_SUCCESS)
    cu.check(lib.cuEventSynchronize(untimed))
    assert cu.elapsed_ms(a, b) >= 20.0 * 0.999  # the model's lower bound
    cu.check(lib.cuEventElapsedTime(ms, a, b))  # the pre-12.8 name answers too
    assert lib.cuEventElapsedTime_v2(ms, a, untimed) == CUDA_ERROR_INVALID_HANDLE


def test_stream_order(cu: Cuda) -> None:
    lib = cu.lib
    lib.arsim_set_timing(0.0, 2_000.0)
    s = cu.stream()
    d = cu.alloc(16)
    events = [cu.event() for _ in range(6)]
    for i, e in enumerate(events):
        cu.check(lib.cuMemsetD8Async(d, i + 1, 16, s))
        cu.check(lib.cuEventRecord(e, s))
    cu.check(lib.cuStreamSynchronize(s))
    gaps = [cu.elapsed_ms(a, b) for a, b in itertools.pairwise(events)]
    assert all(g >= 2.0 * 0.999 for g in gaps)  # each waited for the previous
    out = np.zeros(16, np.uint8)
    cu.check(lib.cuMemcpyDtoH_v2(_ptr(out), d, 16))
    assert (out == 6).all()


def _timed(cu: Cuda, s: Any, enqueue: Any) -> tuple[Any, Any]:
    start, end = cu.event(), cu.event()
    cu.check(cu.lib.cuEventRecord(start, s))
    enqueue()
    cu.check(cu.lib.cuEventRecord(end, s))
    return start, end


def _wait_started(cu: Cuda, s: Any, d: int) -> None:
    """Queue a tiny op and wait for it, so the next op on s is next in line."""
    e = cu.event()
    cu.check(cu.lib.cuMemsetD8Async(d, 0, 1, s))
    cu.check(cu.lib.cuEventRecord(e, s))
    cu.check(cu.lib.cuEventSynchronize(e))


def test_copy_overlaps_compute_on_another_stream(cu: Cuda) -> None:
    """A long copy on s1 and a short memset (compute engine) on s2 submitted
    after it: the memset finishes first only if the engines are separate."""
    lib = cu.lib
    n = 1 << 20
    hp, _host = _pinned(cu, n)
    d, d2 = cu.alloc(n), cu.alloc(64)
    s1, s2 = cu.stream(), cu.stream()
    lib.arsim_set_timing(0.01, 1_000.0)  # 1 MiB at 10 MB/s: ~100 ms; memset: 1 ms
    _wait_started(cu, s1, d)
    _, copy_end = _timed(cu, s1, lambda: cu.check(lib.cuMemcpyHtoDAsync_v2(d, hp, n, s1)))
    time.sleep(0.01)  # let the copy take its engine
    _, set_end = _timed(cu, s2, lambda: cu.check(lib.cuMemsetD8Async(d2, 1, 64, s2)))
    cu.check(lib.cuCtxSynchronize())
    assert cu.elapsed_ms(set_end, copy_end) > 0  # the memset ended while the copy ran
    cu.check(lib.cuMemFreeHost(hp))


def test_two_copies_in_one_direction_serialize(cu: Cuda) -> None:
    lib = cu.lib
    n = 1 << 20
    hp, _host = _pinned(cu, n)
    d1, d2 = cu.alloc(n), cu.alloc(n)
    s1, s2 = cu.stream(), cu.stream()
    lib.arsim_set_timing(0.02, 0.0)  # 1 MiB at 20 MB/s: ~52 ms each
    dur_ms = n / 0.02 / 1e6
    _, end1 = _timed(cu, s1, lambda: cu.check(lib.cuMemcpyHtoDAsync_v2(d1, hp, n, s1)))
    _, end2 = _timed(cu, s2, lambda: cu.check(lib.cuMemcpyHtoDAsync_v2(d2, hp, n, s2)))
    cu.check(lib.cuCtxSynchronize())
    # Whichever finished second held the engine for its whole duration after
    # the first one ended: one engine, one copy at a time.
    gap = abs(cu.elapsed_ms(end1, end2))
    assert gap >= dur_ms * 0.95
    cu.check(lib.cuMemFreeHost(hp))


def test_h2d_and_d2h_use_separate_copy_engines(cu: Cuda) -> None:
    lib = cu.lib
    n = 1 << 20
    hp, _host = _pinned(cu, n)
    outp, _out = _pinned(cu, 64)
    d, d2 = cu.alloc(n), cu.alloc(64)
    s1, s2 = cu.stream(), cu.stream()
    lib.arsim_set_timing(0.01, 0.0)  # H2D ~100 ms; 64-byte D2H ~6 us
    attr = ffi.new("int *")
    cu.check(lib.cuDeviceGetAttribute(attr, 40, 0))  # ASYNC_ENGINE_COUNT
    assert attr[0] == 2
    _wait_started(cu, s1, d)
    _, h2d_end = _timed(cu, s1, lambda: cu.check(lib.cuMemcpyHtoDAsync_v2(d, hp, n, s1)))
    time.sleep(0.01)
    _, d2h_end = _timed(cu, s2, lambda: cu.check(lib.cuMemcpyDtoHAsync_v2(outp, d2, 64, s2)))
    cu.check(lib.cuCtxSynchronize())
    assert cu.elapsed_ms(d2h_end, h2d_end) > 0
    cu.check(lib.cuMemFreeHost(hp))
    cu.check(lib.cuMemFreeHost(outp))


def test_stream_wait_event_across_streams(cu: Cuda) -> None:
    lib = cu.lib
    lib.arsim_set_timing(0.0, 30_000.0)
    s1, s2 = cu.stream(), cu.stream()
    d = cu.alloc(16)
    done1, e = cu.event(), cu.event()
    cu.check(lib.cuMemsetD8Async(d, 1, 16, s1))
    cu.check(lib.cuEventRecord(done1, s1))
    cu.check(lib.cuStreamWaitEvent(s2, done1, 0))
    start2 = cu.event()
    cu.check(lib.cuEventRecord(start2, s2))
    cu.check(lib.cuMemsetD8Async(d, 2, 16, s2))
    cu.check(lib.cuEventRecord(e, s2))
    # Re-recording done1 later does not change what s2 waited for.
    cu.check(lib.cuEventSynchronize(e))
    assert cu.elapsed_ms(done1, start2) >= 0
    out = np.zeros(16, np.uint8)
    cu.check(lib.cuMemcpyDtoH_v2(_ptr(out), d, 16))
    assert (out == 2).all()


def test_host_functions_run_in_stream_order(cu: Cuda) -> None:
    lib = cu.lib
    lib.arsim_set_timing(0.0, 5_000.0)
    s1, s2 = cu.stream(), cu.stream()
    d = cu.alloc(16)
    order: list[str] = []

    @ffi.callback("void(void *)")
    def record(user: Any) -> None:
        order.append(ffi.string(ffi.cast("char *", user)).decode())

    names = {k: ffi.new("char[]", k.encode()) for k in ("a1", "a2", "b1")}
    e = cu.event()
    cu.check(lib.cuLaunchHostFunc(s1, record, names["a1"]))
    cu.check(lib.cuMemsetD8Async(d, 1, 16, s1))
    cu.check(lib.cuLaunchHostFunc(s1, record, names["a2"]))
    cu.check(lib.cuEventRecord(e, s1))
    cu.check(lib.cuStreamWaitEvent(s2, e, 0))
    cu.check(lib.cuLaunchHostFunc(s2, record, names["b1"]))
    cu.check(lib.cuCtxSynchronize())
    assert order == ["a1", "a2", "b1"]


def test_legacy_stream_synchronizes_with_blocking_streams(cu: Cuda) -> None:
    lib = cu.lib
    n = 1 << 20
    hp, _host = _pinned(cu, n)
    outp, _out = _pinned(cu, 64)
    blocking, nonblocking = cu.stream(), cu.stream(CU_STREAM_NON_BLOCKING)
    d, d2 = cu.alloc(n), cu.alloc(64)
    lib.arsim_set_timing(0.01, 0.0)  # 1 MiB: ~100 ms; 64 bytes: ~6 us
    b_end, nb_end, legacy_start = cu.event(), cu.event(), cu.event()
    # Long work on the blocking stream (H2D engine), short on the other (D2H).
    cu.check(lib.cuMemcpyHtoDAsync_v2(d, hp, n, blocking))
    cu.check(lib.cuEventRecord(b_end, blocking))
    cu.check(lib.cuEventRecord(legacy_start, NULL_STREAM))
    cu.check(lib.cuCtxSynchronize())
    assert cu.elapsed_ms(b_end, legacy_start) >= 0  # waited for the blocking stream
    # Long work on the non-blocking stream: the legacy stream does not wait.
    cu.check(lib.cuMemcpyHtoDAsync_v2(d, hp, n, nonblocking))
    cu.check(lib.cuEventRecord(nb_end, nonblocking))
    cu.check(lib.cuMemcpyDtoHAsync_v2(outp, d2, 64, NULL_STREAM))
    cu.check(lib.cuEventRecord(legacy_start, NULL_STREAM))
    cu.check(lib.cuCtxSynchronize())
    assert cu.elapsed_ms(legacy_start, nb_end) > 0
    # And a blocking stream waits for earlier legacy work.
    legacy_end, after = cu.event(), cu.event()
    cu.check(lib.cuMemcpyHtoDAsync_v2(d, hp, n, NULL_STREAM))
    cu.check(lib.cuEventRecord(legacy_end, NULL_STREAM))
    cu.check(lib.cuEventRecord(after, blocking))
    cu.check(lib.cuEventSynchronize(after))
    assert cu.elapsed_ms(legacy_end, after) >= 0
    cu.check(lib.cuMemFreeHost(hp))
    cu.check(lib.cuMemFreeHost(outp))


def test_per_thread_default_stream(cu: Cuda) -> None:
    lib = cu.lib
    ptds = ffi.cast("CUstream", CU_STREAM_PER_THREAD)
    d = cu.alloc(16)
    cu.check(lib.cuMemsetD8Async(d, 9, 16, ptds))
    cu.check(lib.cuStreamSynchronize(ptds))
    out = np.zeros(16, np.uint8)
    cu.check(lib.cuMemcpyDtoH_v2(_ptr(out), d, 16))
    assert (out == 9).all()


def test_stream_priorities(cu: Cuda) -> None:
    lib = cu.lib
    least, greatest = ffi.new("int *"), ffi.new("int *")
    cu.check(lib.cuCtxGetStreamPriorityRange(least, greatest))
    assert (least[0], greatest[0]) == (0, -5)
    s = cu.stream(priority=-3)
    p = ffi.new("int *")
    cu.check(lib.cuStreamGetPriority(s, p))
    assert p[0] == -3
    s = cu.stream(priority=-99)  # clamped
    cu.check(lib.cuStreamGetPriority(s, p))
    assert p[0] == -5


def test_an_engine_runs_the_higher_priority_streams_op_first(cu: Cuda) -> None:
    """Ops waiting for a busy engine: the higher-priority stream's goes first."""
    lib = cu.lib
    lib.arsim_set_timing(0.0, 30_000.0)  # every memset holds the engine 30 ms
    busy, low, high = cu.stream(), cu.stream(priority=0), cu.stream(priority=-5)
    d = cu.alloc(64)
    start, low_done, high_done = cu.event(), cu.event(), cu.event()
    cu.check(lib.cuEventRecord(start, busy))
    cu.check(lib.cuMemsetD8Async(d, 1, 64, busy))
    # Both are ready while the engine is busy: the low one became ready first.
    cu.check(lib.cuMemsetD8Async(d, 2, 64, low))
    cu.check(lib.cuEventRecord(low_done, low))
    cu.check(lib.cuMemsetD8Async(d, 3, 64, high))
    cu.check(lib.cuEventRecord(high_done, high))
    cu.check(lib.cuCtxSynchronize())
    assert cu.elapsed_ms(start, high_done) < cu.elapsed_ms(start, low_done)
    out = np.zeros(64, np.uint8)
    cu.check(lib.cuMemcpyDtoH_v2(_ptr(out), d, 64))
    assert (out == 2).all()  # the low-priority memset ran last


def test_pageable_h2d_is_staged_before_returning(cu: Cuda) -> None:
    """cuMemcpyHtoDAsync from pageable memory returns once the source is
    staged: the caller may overwrite it at once, and the copy still runs later."""
    lib = cu.lib
    s = cu.stream()
    n = 4096
    src = np.full(n, 5, np.uint8)  # numpy memory: pageable
    d = cu.alloc(n)
    gate = Gate(cu, s)
    cu.check(lib.cuMemcpyHtoDAsync_v2(d, _ptr(src), n, s))
    assert lib.cuStreamQuery(s) == CUDA_ERROR_NOT_READY  # the device copy is still pending
    src[:] = 7
    gate.release()
    cu.check(lib.cuStreamSynchronize(s))
    out = np.zeros(n, np.uint8)
    cu.check(lib.cuMemcpyDtoH_v2(_ptr(out), d, n))
    assert (out == 5).all()


def test_pageable_d2h_returns_after_the_copy(cu: Cuda) -> None:
    lib = cu.lib
    s = cu.stream()
    n = 4096
    d = cu.alloc(n)
    cu.check(lib.cuMemsetD8_v2(d, 3, n))
    lib.arsim_set_timing(0.0, 30_000.0)
    out = np.zeros(n, np.uint8)
    cu.check(lib.cuMemcpyDtoHAsync_v2(_ptr(out), d, n, s))
    assert (out == 3).all()  # no synchronize needed: the call waited
    # A pinned destination does not wait.
    outp, out2 = _pinned(cu, n)
    gate = Gate(cu, s)
    cu.check(lib.cuMemcpyDtoHAsync_v2(outp, d, n, s))
    assert lib.cuStreamQuery(s) == CUDA_ERROR_NOT_READY
    gate.release()
    cu.check(lib.cuStreamSynchronize(s))
    assert (out2 == 3).all()
    cu.check(lib.cuMemFreeHost(outp))


def test_queues_end_with_their_streams() -> None:
    # The live-queue count is process-wide: alone in a fresh interpreter, no
    # earlier test's streams can go away while this one counts.
    run_alone(__file__, "queues_end_with_their_streams")


def queues_end_with_their_streams(cu: Cuda) -> None:
    lib = cu.lib
    before = lib.arsim_live_queues()
    streams = [cu.stream() for _ in range(8)]
    now = lib.arsim_live_queues()
    assert now == before + 8, (before, now)
    for s in streams:
        cu.check(lib.cuStreamDestroy_v2(s))
    for _ in range(1000):  # a destroyed queue goes once it has drained
        if lib.arsim_live_queues() == before:
            break
        time.sleep(0.001)
    now = lib.arsim_live_queues()
    assert now == before, (before, now)
