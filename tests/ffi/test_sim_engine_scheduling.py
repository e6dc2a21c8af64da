"""cuda-sim's engine scheduler: queues without threads, waits that park.

The engine runs every queue of a device on one thread per engine; a
device-side wait that is not yet satisfied parks its queue, and whatever
satisfies it (a record on another queue, a queue draining) moves the queue
on.  These tests hold one stream behind a host function (a Gate) so that
many waits park at once, then check that every dependency was honoured and
that no queue or thread is left behind.  The checks on the sim's queue and
thread counts run each in a fresh interpreter (see run_alone).
"""

from __future__ import annotations

import os
import random
import time

import numpy as np
from _cudasim_support import CU_EVENT_DISABLE_TIMING, Cuda, Gate, ffi, host_kernels_path, run_alone


def _threads() -> int:
    return len(os.listdir("/proc/self/task"))


def _read_u32(cu: Cuda, ptr: int, n: int) -> np.ndarray:
    out = np.zeros(n, np.uint32)
    cu.check(cu.lib.cuMemcpyDtoH_v2(ffi.cast("void *", out.ctypes.data), ptr, 4 * n))
    return out


def test_parked_waits_honour_every_cross_stream_dependency(cu: Cuda) -> None:
    lib = cu.lib
    rng = random.Random(7)
    streams = [cu.stream() for _ in range(12)]
    pairs = 400
    src, dst = cu.alloc(4 * pairs), cu.alloc(4 * pairs)
    cu.check(lib.cuMemsetD32_v2(dst, 0, pairs))
    events = [cu.event(CU_EVENT_DISABLE_TIMING) for _ in range(pairs)]
    gate = Gate(cu, streams[0])  # stream 0 holds still: waits on it park
    for i in range(pairs):
        producer, consumer = rng.sample(streams, 2)
        cu.check(lib.cuMemsetD32Async(src + 4 * i, i + 1, 1, producer))
        cu.check(lib.cuEventRecord(events[i], producer))
        cu.check(lib.cuStreamWaitEvent(consumer, events[i], 0))
        cu.check(lib.cuMemcpyDtoDAsync_v2(dst + 4 * i, src + 4 * i, 4, consumer))
    gate.release()
    cu.check(lib.cuCtxSynchronize())
    # Each copy ran after its producer's memset, whichever queues they were on.
    assert (_read_u32(cu, dst, pairs) == np.arange(1, pairs + 1)).all()


# The sim's queue and engine-thread counts, and the process's threads, are
# process-wide: the checks on them run alone in a fresh interpreter
# (run_alone), where no earlier test's streams or threads can come or go.


def test_queues_cost_no_threads() -> None:
    run_alone(__file__, "queues_cost_no_threads")


def queues_cost_no_threads(cu: Cuda) -> None:
    lib = cu.lib
    lib.arsim_set_engine_idle_ms(600_000)  # no engine thread ends during the count
    lib.arsim_set_inline_bytes(0)  # every memset goes to the compute engine's thread
    d = cu.alloc(64)
    cu.check(lib.cuMemsetD8_v2(d, 0, 64))  # the compute engine's thread is started now
    before_queues = lib.arsim_live_queues()
    before_threads = _threads()
    streams = [cu.stream() for _ in range(64)]
    for s in streams:
        cu.check(lib.cuMemsetD8Async(d, 1, 64, s))
    cu.check(lib.cuCtxSynchronize())
    queues = lib.arsim_live_queues()
    assert queues == before_queues + 64, (before_queues, queues)
    # At most the engines not started yet (two copy engines, host functions).
    added = _threads() - before_threads
    assert added <= 3, added
    engines = lib.arsim_engine_threads()
    assert 1 <= engines <= 4, engines
    for s in streams:
        cu.check(lib.cuStreamDestroy_v2(s))


def test_a_stream_destroyed_while_parked_still_runs_its_work() -> None:
    run_alone(__file__, "a_stream_destroyed_while_parked_still_runs_its_work")


def a_stream_destroyed_while_parked_still_runs_its_work(cu: Cuda) -> None:
    lib = cu.lib
    held, parked = cu.stream(), cu.stream()
    src, dst = cu.alloc(4), cu.alloc(4)
    cu.check(lib.cuMemsetD32_v2(dst, 0, 1))
    event = cu.event(CU_EVENT_DISABLE_TIMING)
    queues = lib.arsim_live_queues()
    gate = Gate(cu, held)
    cu.check(lib.cuMemsetD32Async(src, 77, 1, held))
    cu.check(lib.cuEventRecord(event, held))
    cu.check(lib.cuStreamWaitEvent(parked, event, 0))
    cu.check(lib.cuMemcpyDtoDAsync_v2(dst, src, 4, parked))
    cu.check(lib.cuStreamDestroy_v2(parked))  # returns at once; the work still runs
    # Device memory is host memory in the sim: peek without a synchronous
    # copy (which would wait for `held`, as the legacy stream does).
    assert ffi.cast("uint32_t *", dst)[0] == 0
    assert lib.arsim_live_queues() == queues  # parked, with work queued: not gone yet
    gate.release()
    cu.check(lib.cuCtxSynchronize())
    assert (_read_u32(cu, dst, 1) == 77).all()
    for _ in range(2000):  # bounded: a destroyed queue goes once it has drained
        if lib.arsim_live_queues() == queues - 1:
            break
        time.sleep(0.001)
    now = lib.arsim_live_queues()
    assert now == queues - 1, (queues, now)  # `parked` is gone; `held` lives


def test_idle_engine_threads_end_and_come_back() -> None:
    run_alone(__file__, "idle_engine_threads_end_and_come_back")


def idle_engine_threads_end_and_come_back(cu: Cuda) -> None:
    lib = cu.lib
    d = cu.alloc(64)
    lib.arsim_set_engine_idle_ms(20)
    lib.arsim_set_inline_bytes(0)  # every memset goes to the compute engine's thread
    cu.check(lib.cuMemsetD8_v2(d, 1, 64))
    for _ in range(2000):  # bounded: each ends 20 ms after its last op
        if lib.arsim_engine_threads() == 0:
            break
        time.sleep(0.001)
    engines = lib.arsim_engine_threads()
    assert engines == 0, engines
    cu.check(lib.cuMemsetD8_v2(d, 2, 64))  # starts the compute engine again
    out = np.zeros(64, np.uint8)
    cu.check(lib.cuMemcpyDtoH_v2(ffi.cast("void *", out.ctypes.data), d, 64))
    assert (out == 2).all()


def _nice_of_threads_named(prefix: str) -> list[int]:
    found = []
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/comm") as f:
                comm = f.read().strip()
            with open(f"/proc/self/task/{tid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue  # the thread ended meanwhile
        if comm.startswith(prefix):
            found.append(int(fields[16]))  # field 19 of stat: nice
    return found


def test_engine_threads_run_at_the_applications_nice() -> None:
    run_alone(__file__, "engine_threads_run_at_the_applications_nice")


def engine_threads_run_at_the_applications_nice(cu: Cuda) -> None:
    """By default an engine thread competes for a core as the application's own
    threads do (benchmarks/bench_contention.py: 5 levels lower starved the
    device beside busy processes), whichever thread started it."""
    _engine_nice_is(cu, 0)


def test_engine_nice_is_a_knob() -> None:
    run_alone(__file__, "engine_nice_is_three", env={"ARUNTIME_SIM_ENGINE_NICE": "3"})


def engine_nice_is_three(cu: Cuda) -> None:
    _engine_nice_is(cu, 3)


def _engine_nice_is(cu: Cuda, offset: int) -> None:
    lib = cu.lib
    lib.arsim_set_inline_bytes(0)  # the memset and the copy go to their engines' threads
    d, e = cu.alloc(64), cu.alloc(64)
    stream = cu.stream()
    # Held by a host function, the queue is moved on by engine threads only:
    # the host-function thread starts the compute engine, whose thread then
    # starts the copy engine.  Each must take the main thread's nice + offset,
    # not its creator's plus the offset again.
    gate = Gate(cu, stream)
    cu.check(lib.cuMemsetD8Async(d, 1, 64, stream))
    cu.check(lib.cuMemcpyDtoDAsync_v2(e, d, 64, stream))
    gate.release()
    # Once the ops are done, their engines' threads have named themselves and
    # set their nice values: both come before they run their first op.
    cu.check(lib.cuStreamSynchronize(stream))
    assert (_read_u32(cu, e, 16) == 0x01010101).all()
    want = min(os.getpriority(os.PRIO_PROCESS, 0) + offset, 19)
    nices = [
        nice
        for name in ("arsim-hostfn", "arsim-compute", "arsim-h2d")
        for nice in _nice_of_threads_named(name)
    ]
    assert len(nices) == 3 and set(nices) == {want}, (nices, want)


def test_small_ops_run_in_place_up_to_a_budget() -> None:
    run_alone(__file__, "small_ops_run_in_place_up_to_a_budget")


def small_ops_run_in_place_up_to_a_budget(cu: Cuda) -> None:
    """A small memset on an idle stream runs within the submit: no engine thread starts.
    A backlog of them, moved on at once, runs in place only up to a budget (64 KiB,
    each op counting at least 1 KiB): the rest goes to the compute engine's thread,
    so a long queue or a big graph of small ops never holds one thread."""
    lib = cu.lib
    lib.arsim_set_engine_idle_ms(600_000)  # no engine thread ends during the count
    d = cu.alloc(4 * 256)
    stream = cu.stream()
    cu.check(lib.cuMemsetD32Async(d, 7, 256, stream))
    assert lib.cuStreamQuery(stream) == 0  # done within the submit
    assert lib.arsim_engine_threads() == 0
    gate = Gate(cu, stream)  # starts the host-function thread
    for i in range(256):
        cu.check(lib.cuMemsetD32Async(d + 4 * i, i, 1, stream))
    gate.release()  # the host-function thread moves the backlog on
    cu.check(lib.cuStreamSynchronize(stream))
    assert (_read_u32(cu, d, 256) == np.arange(256)).all()
    assert _nice_of_threads_named("arsim-compute"), "every memset ran on one thread"


def test_a_big_grid_reuses_the_kernel_helpers() -> None:
    run_alone(
        __file__, "a_big_grid_reuses_the_kernel_helpers", env={"ARUNTIME_SIM_KERNEL_THREADS": "3"}
    )


def a_big_grid_reuses_the_kernel_helpers(cu: Cuda) -> None:
    """A grid split over ARUNTIME_SIM_KERNEL_THREADS runs on the compute engine's thread and
    that many - 1 helper threads, made once and reused (a thread made per launch would make
    every big kernel wait for a new thread to be scheduled); every block runs once."""
    from test_cuda_sim_kernels import _function, _load, _params

    lib = cu.lib
    lib.arsim_set_engine_idle_ms(600_000)  # no helper ends during the count
    fill = _function(cu, _load(cu, host_kernels_path().read_bytes()), "fill_f32")
    n = 1 << 16
    out = cu.alloc(4 * n)
    threads_before = _threads()
    for value in range(20):
        args, _keep = _params(
            ffi.new("unsigned int *", n),
            ffi.new("float *", float(value)),
            ffi.new("CUdeviceptr *", out),
        )
        cu.check(lib.cuLaunchKernel(fill, n // 64, 1, 1, 64, 1, 1, 0, ffi.NULL, args, ffi.NULL))
        got = np.zeros(n, np.float32)
        cu.check(lib.cuMemcpyDtoH_v2(ffi.cast("void *", got.ctypes.data), out, got.nbytes))
        assert (got == value).all(), value
    # A helper names itself when it first runs, which on a busy host may come
    # after every chunk was claimed without it: wait for that (bounded).
    for _ in range(10_000):
        helpers = _nice_of_threads_named("arsim-kernel")
        if len(helpers) >= 2:
            break
        time.sleep(0.001)
    assert len(helpers) == 2, helpers
    assert _threads() - threads_before <= 2 + 2  # the helpers, the compute and D2H engines
