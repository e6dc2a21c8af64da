"""aruntime beside NVIDIA's own Python bindings, on the same driver and context.

What a user pays in host time for one small op, measured in one process per
backend and loop, against the cheapest way to issue the same op from Python:

* ``cuda-sim`` (and ``cuda`` on a GPU, unchanged): aruntime against cuda.core
  and raw cuda-bindings calls.  cuda.core and cuda-bindings are imported
  after ``open_backend``, so that they bind the libcuda that aruntime loaded
  (the sim), and their ops go to a second aruntime stream, which cuda.core's
  stream wraps, as ``examples/custom_kernel_nvrtc.py`` does.  aruntime's own
  ops run on a stream it keeps: one whose native handle is handed out marks
  every op, since the other library's work may follow aruntime's on it
  (``StreamState.share``), and a user who does not share a stream does not
  pay that.  Rows:

  - enqueue only: a kernel launch (``iota_u32`` from aruntime's committed
    ``vector_ops`` PTX, one block of 32 threads), a 4 KiB host-to-device copy
    from pinned memory, a 64-byte memset and a graph replay (a graph of that
    one launch).  aruntime's ``launch``, ``copy_h2d_async``, ``memset_async``
    and ``launch_graph`` against cuda.core's ``launch``, ``Buffer.copy_from``,
    ``Buffer.fill`` and ``Graph.launch``, and against cuda-bindings'
    ``cuLaunchKernel``, ``cuMemcpyHtoDAsync``, ``cuMemsetD8Async`` and
    ``cuGraphLaunch``;
  - the tiny launch awaited, one at a time: ``await gpu.launch(...)`` against
    cuda.core's ``launch`` then ``stream.record()`` polled with ``await
    anyio.sleep(0)`` until it is done, and against cuda.core's ``launch`` then
    ``await anyio.to_thread.run_sync(stream.sync)``; then the same with 128
    blocks, an op that lasts about 100 us on the sims (still tiny on a GPU):
    what the await's spin window is for.

* ``levelzero-sim`` (and ``levelzero``): the same enqueue rows against raw
  calls into the loader through cffi, on the list aruntime's stream appends
  that op to: ``zeKernelSetGroupSize``, ``zeKernelSetArgumentValue`` and
  ``zeCommandListAppendLaunchKernel``; ``zeCommandListAppendMemoryCopy``;
  ``zeCommandListAppendMemoryFill``.  aruntime's figure includes the barrier
  it appends to keep the stream in order, which the raw call does not; graph
  replay has no raw Level Zero call to compare with (aruntime's own figure is
  shown).

* ``mock``: an awaited 4 KiB ``copy_h2d_async`` against a bare checkpoint
  (``anyio.lowlevel.checkpoint()``, trio's own on trio).

Method: every contender runs blocks of ``--block`` ops in turn (the order
rotates each round; the stream is drained after each block, untimed), and a
figure is the median over ``--rounds`` rounds of the per-op mean of a block,
in wall time.  Each backend and loop runs in a fresh process of its own.
Every ratio is aruntime's time over the best peer's (or over the peer its
target names), paired by round: the median over rounds of the ratio within a
round, so that load from other processes, which comes and goes, moves both
sides of a pair alike.  The targets are issue 29's.  Nothing is asserted
about time.

    PYTHONPATH=. python benchmarks/bench_peers.py [--quick] [--backend cuda-sim,mock]
"""

from __future__ import annotations

import argparse
import ctypes
import functools
import os
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import anyio.to_thread
import numpy as np
from _harness import NOISE, SKIPPED, reason, run_worker, worker_result

import aruntime as ar

BACKENDS = ("cuda-sim", "levelzero-sim", "mock")
LOOPS = ("asyncio", "trio")
#: Arguments for a smoke run (``aruntime bench --quick``).
QUICK_ARGV = ["--quick"]

KERNEL = "iota_u32"  # iota_u32(n, start, y): y[i] = start + i, i < n
THREADS = 32
#: Blocks of the longer awaited launch: about 100 us on the sims here, past
#: the 50 us spin window the await had until the thirteenth round.
LONG_GRID = 128
COPY_BYTES = 4096
MEMSET_BYTES = 64

# Row labels.
LAUNCH = "kernel launch"
COPY = "4 KiB H2D copy (pinned)"
MEMSET = "64 B memset"
GRAPH = "graph replay"
AWAITED = "awaited launch"
AWAITED_LONG = f"awaited {LONG_GRID}-block launch"
MOCK_COPY = "awaited 4 KiB copy"

AR, CORE, BINDINGS, RAW_ZE = "aruntime", "cuda.core", "cuda-bindings", "raw ze (cffi)"
POLL, TO_THREAD, CHECKPOINT = "cuda.core + poll", "cuda.core + to_thread", "checkpoint"

#: op -> (the peer the target is against, at most this ratio); None: best peer.
ENQUEUE_TARGETS: dict[str, tuple[str | None, float]] = {
    LAUNCH: (CORE, 1.5),
    COPY: (BINDINGS, 2.0),
    MEMSET: (BINDINGS, 2.0),
}
ZE_TARGETS: dict[str, tuple[str | None, float]] = {
    LAUNCH: (RAW_ZE, 1.5),
    COPY: (RAW_ZE, 2.0),
    MEMSET: (RAW_ZE, 2.0),
}
#: Per awaited row: peer -> at most this ratio.  The to_thread bound is the tiny
#: launch's: past 100 us of device time a thread hop is no longer most of an await.
AWAITED_TARGETS = {AWAITED: {POLL: 1.0, TO_THREAD: 0.25}, AWAITED_LONG: {POLL: 1.0}}
MOCK_TARGET = 1.25

Op = Callable[[], object]
Drain = Callable[[], Awaitable[None]]


# -- timing ----------------------------------------------------------------------------------
def _figures(samples: dict[str, list[float]]) -> dict[str, Any]:
    """Each contender's median in microseconds, and aruntime's ratios, paired by round.

    A ratio is the median over rounds of aruntime's time over the peer's in
    the same round (``best``: over the best peer's of that round): a burst of
    load from other processes moves both sides of a pair alike.
    """
    ours = samples[AR]
    peers = [name for name in samples if name != AR]
    ratio = {
        name: statistics.median(a / b for a, b in zip(ours, samples[name], strict=True))
        for name in peers
    }
    best = None
    if peers:
        best = statistics.median(
            a / min(samples[name][i] for name in peers) for i, a in enumerate(ours)
        )
    return {
        "us": {name: statistics.median(values) * 1e6 for name, values in samples.items()},
        "ratio": ratio,
        "best": best,
    }


async def _enqueue_rounds(
    contenders: dict[str, Op], drain: Drain, rounds: int, block: int
) -> dict[str, Any]:
    """Figures (:func:`_figures`) per op: ``block`` ops enqueued back to back, not awaited."""
    clock = time.perf_counter
    names = list(contenders)
    samples: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds + 1):  # round 0 warms every path up
        turn = r % len(names)
        for name in names[turn:] + names[:turn]:
            op = contenders[name]
            start = clock()
            for _ in range(block):
                op()
            elapsed = clock() - start
            await drain()
            if r:
                samples[name].append(elapsed / block)
    return _figures(samples)


async def _await_rounds(
    contenders: dict[str, Callable[[], Awaitable[object]]], rounds: int, block: int
) -> dict[str, Any]:
    """Figures (:func:`_figures`) per op: each op awaited before the next starts."""
    clock = time.perf_counter
    names = list(contenders)
    samples: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds + 1):
        turn = r % len(names)
        for name in names[turn:] + names[:turn]:
            op = contenders[name]
            start = clock()
            for _ in range(block):
                await op()
            if r:
                samples[name].append((clock() - start) / block)
    return _figures(samples)


# -- the backends ------------------------------------------------------------------------------
def _ptx() -> bytes:
    """aruntime's committed vector_ops PTX: the same kernel for every CUDA contender."""
    return (Path(ar.__file__).resolve().parent / "kernels" / "vector_ops.ptx").read_bytes()


async def _check_iota(gpu: ar.Backend, stream: ar.Stream, out: ar.DevicePtr, who: str) -> None:
    """That ``who``'s launch ran the kernel: ``out`` holds 0..31."""
    got = await gpu.copy_d2h_async(out, np.empty(THREADS, np.uint32), stream=stream)
    if not np.array_equal(got, np.arange(THREADS, dtype=np.uint32)):
        raise AssertionError(f"{who}: the kernel's output is wrong: {got[:8]}...")


async def _measure_cuda(
    gpu: ar.Backend, rounds: int, block: int, notes: list[str]
) -> list[dict[str, Any]]:
    stream = gpu.create_stream()
    out = gpu.alloc(THREADS * 4)
    dev = gpu.alloc(COPY_BYTES)
    pinned = gpu.alloc_host_pinned(COPY_BYTES)
    kernel = gpu.kernel(gpu.load_module("bench_peers", _ptx()), KERNEL)
    args = [np.uint32(THREADS), np.uint32(0), out]
    await gpu.memset_async(out, 0, THREADS * 4, stream=stream)
    await gpu.launch(kernel, 1, THREADS, args, stream=stream)
    await _check_iota(gpu, stream, out, AR)
    with gpu.capture(stream) as graph:
        gpu.launch(kernel, 1, THREADS, args, stream=stream)

    enqueue: dict[str, dict[str, Op]] = {
        LAUNCH: {AR: lambda: gpu.launch(kernel, 1, THREADS, args, stream=stream)},
        COPY: {AR: lambda: gpu.copy_h2d_async(pinned, dev, stream=stream)},
        MEMSET: {AR: lambda: gpu.memset_async(dev, 1, MEMSET_BYTES, stream=stream)},
        GRAPH: {AR: lambda: gpu.launch_graph(graph, stream)},
    }
    awaited: dict[str, Callable[[], Awaitable[object]]] = {
        AR: lambda: gpu.launch(kernel, 1, THREADS, args, stream=stream)
    }
    awaited_long: dict[str, Callable[[], Awaitable[object]]] = {
        AR: lambda: gpu.launch(kernel, LONG_GRID, THREADS, args, stream=stream)
    }
    cleanup: list[Callable[[], object]] = []
    shared = gpu.create_stream()  # the peers' (handed out: it marks every aruntime op)
    cleanup.append(shared.close)
    handle = shared.__cuda_stream__()[1]

    # After open_backend: on cuda-sim they find the sim aruntime loaded.
    try:
        from cuda.bindings import driver as cb  # type: ignore[import-untyped]
    except ImportError as exc:
        notes.append(
            f"no {BINDINGS} column: it is not installed ({exc}); pip install cuda-bindings"
        )
    else:
        await _bindings_peers(cb, gpu, shared, handle, out, dev, pinned, enqueue, cleanup, notes)
    try:
        from cuda.core import (  # type: ignore[import-untyped]
            Buffer,
            Device,
            LaunchConfig,
            ObjectCode,
            launch,
        )
    except ImportError as exc:
        notes.append(f"no {CORE} columns: it is not installed ({exc}); pip install cuda-core")
    else:
        device = Device(gpu.driver.ordinal)
        device.set_current()  # the primary context, which aruntime uses too
        cstream = device.create_stream(shared)  # wraps the aruntime stream handed out
        cleanup.append(cstream.close)
        ckernel = ObjectCode.from_ptx(_ptx()).get_kernel(KERNEL)
        config = LaunchConfig(grid=1, block=THREADS)
        cargs = (np.uint32(THREADS), np.uint32(0), Buffer.from_handle(int(out), THREADS * 4))
        core_dev = Buffer.from_handle(int(dev), COPY_BYTES)
        core_head = Buffer.from_handle(int(dev), MEMSET_BYTES)  # fill() sets all of a Buffer
        core_pinned = Buffer.from_handle(pinned.ctypes.data, COPY_BYTES)

        def core_launch() -> None:
            launch(cstream, config, ckernel, *cargs)

        async def core_poll(config: Any = config) -> None:
            launch(cstream, config, ckernel, *cargs)
            event = cstream.record()
            while not event.is_done:
                await anyio.sleep(0)

        async def core_to_thread(config: Any = config) -> None:
            launch(cstream, config, ckernel, *cargs)
            await anyio.to_thread.run_sync(cstream.sync)

        await gpu.memset_async(out, 0, THREADS * 4, stream=shared)
        core_launch()
        await _check_iota(gpu, shared, out, CORE)
        enqueue[LAUNCH][CORE] = core_launch
        awaited[POLL] = core_poll
        awaited[TO_THREAD] = core_to_thread
        long_config = LaunchConfig(grid=LONG_GRID, block=THREADS)
        awaited_long[POLL] = functools.partial(core_poll, long_config)
        awaited_long[TO_THREAD] = functools.partial(core_to_thread, long_config)

        def core_copy() -> None:
            core_dev.copy_from(core_pinned, stream=cstream)

        def core_fill() -> None:
            core_head.fill(1, stream=cstream)

        for row, op in ((COPY, core_copy), (MEMSET, core_fill)):
            try:
                op()
                await shared.synchronize()
            except Exception as exc:
                notes.append(f"{row}: no {CORE} figure: {reason(exc)}")
            else:
                enqueue[row][CORE] = op
        try:
            own = device.create_stream()
            cleanup.append(own.close)
            builder = own.create_graph_builder()
            builder.begin_building()
            launch(builder, config, ckernel, *cargs)
            core_graph = builder.end_building().complete()
            cleanup.append(core_graph.close)
            await gpu.memset_async(out, 0, THREADS * 4, stream=shared)
            core_graph.launch(cstream)
            await _check_iota(gpu, shared, out, f"{CORE} graph")
        except Exception as exc:
            notes.append(f"{GRAPH}: no {CORE} figure: {reason(exc)}")
        else:
            enqueue[GRAPH][CORE] = lambda: core_graph.launch(cstream)

    rows: list[dict[str, Any]] = []
    try:
        for op_name, contenders in enqueue.items():
            ar_op = contenders[AR]

            async def drain(ar_op: Op = ar_op) -> None:
                ar_op()
                await stream.synchronize()
                await shared.synchronize()

            figures = await _enqueue_rounds(contenders, drain, rounds, block)
            rows.append({"section": "enqueue", "op": op_name, **figures})
        for op_name, contenders_awaited in ((AWAITED, awaited), (AWAITED_LONG, awaited_long)):
            figures = await _await_rounds(contenders_awaited, rounds, block)
            rows.append({"section": "awaited", "op": op_name, **figures})
        await stream.synchronize()
        await shared.synchronize()
    finally:
        for release in reversed(cleanup):
            release()
        graph.close()
        stream.close()
        gpu.free_host_pinned(pinned)
        gpu.free(dev)
        gpu.free(out)
    return rows


async def _bindings_peers(
    cb: Any,
    gpu: ar.Backend,
    stream: ar.Stream,
    handle: int,
    out: ar.DevicePtr,
    dev: ar.DevicePtr,
    pinned: ar.HostBuffer,
    enqueue: dict[str, dict[str, Op]],
    cleanup: list[Callable[[], object]],
    notes: list[str],
) -> None:
    """cuda-bindings' raw calls for each enqueue row, on the aruntime stream handed out."""
    success = cb.CUresult.CUDA_SUCCESS

    def check(result: tuple[Any, ...], what: str) -> Any:
        if result[0] != success:
            raise RuntimeError(f"{BINDINGS}: {what}: {result[0]!r}")
        return result[1] if len(result) > 1 else None

    check(cb.cuInit(0), "cuInit")
    context = check(cb.cuDevicePrimaryCtxRetain(gpu.driver.ordinal), "cuDevicePrimaryCtxRetain")
    cleanup.append(lambda: cb.cuDevicePrimaryCtxRelease(gpu.driver.ordinal))
    check(cb.cuCtxSetCurrent(context), "cuCtxSetCurrent")
    module = check(cb.cuModuleLoadData(_ptx()), "cuModuleLoadData")
    cleanup.append(lambda: cb.cuModuleUnload(module))
    function = check(cb.cuModuleGetFunction(module, KERNEL.encode()), "cuModuleGetFunction")
    cstream = cb.CUstream(handle)
    # As examples/custom_kernel_nvrtc.py passes them: values and their C types.
    params = ((THREADS, 0, int(out)), (ctypes.c_uint, ctypes.c_uint, ctypes.c_void_p))
    dst, src = cb.CUdeviceptr(int(dev)), pinned.ctypes.data

    def raw_launch() -> None:
        cb.cuLaunchKernel(function, 1, 1, 1, THREADS, 1, 1, 0, cstream, params, 0)

    def raw_copy() -> None:
        cb.cuMemcpyHtoDAsync(dst, src, COPY_BYTES, cstream)

    def raw_memset() -> None:
        cb.cuMemsetD8Async(dst, 1, MEMSET_BYTES, cstream)

    # The graph: the same launch, captured on a stream of its own.
    capture = check(cb.cuStreamCreate(1), "cuStreamCreate")
    cleanup.append(lambda: cb.cuStreamDestroy(capture))
    mode = cb.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_RELAXED
    check(cb.cuStreamBeginCapture(capture, mode), "cuStreamBeginCapture")
    check(
        cb.cuLaunchKernel(function, 1, 1, 1, THREADS, 1, 1, 0, capture, params, 0),
        "cuLaunchKernel (capture)",
    )
    body = check(cb.cuStreamEndCapture(capture), "cuStreamEndCapture")
    cleanup.append(lambda: cb.cuGraphDestroy(body))
    exec_ = check(cb.cuGraphInstantiate(body, 0), "cuGraphInstantiate")
    cleanup.append(lambda: cb.cuGraphExecDestroy(exec_))

    def raw_graph() -> None:
        cb.cuGraphLaunch(exec_, cstream)

    for op, what in ((raw_launch, "cuLaunchKernel"), (raw_graph, "cuGraphLaunch")):
        await gpu.memset_async(out, 0, THREADS * 4, stream=stream)
        op()
        await _check_iota(gpu, stream, out, f"{BINDINGS} {what}")
    raw_copy()
    raw_memset()
    await stream.synchronize()
    for row, op in ((LAUNCH, raw_launch), (COPY, raw_copy), (MEMSET, raw_memset)):
        enqueue[row][BINDINGS] = op
    enqueue[GRAPH][BINDINGS] = raw_graph


async def _measure_levelzero(
    gpu: ar.Backend, rounds: int, block: int, notes: list[str]
) -> list[dict[str, Any]]:
    from aruntime.backends.levelzero._ffi import ffi

    stream = gpu.create_stream()
    out = gpu.alloc(THREADS * 4)
    dev = gpu.alloc(COPY_BYTES)
    pinned = gpu.alloc_host_pinned(COPY_BYTES)
    kernel = gpu.kernel(gpu.builtin_module("vector_ops"), KERNEL)
    args = [np.uint32(THREADS), np.uint32(0), out]
    with gpu.capture(stream) as graph:
        gpu.launch(kernel, 1, THREADS, args, stream=stream)
    # The loader's functions as aruntime's driver opened them (cffi, ABI mode), and the
    # command lists aruntime's stream appends each kind of op to.
    lib: Any = gpu.driver._lib  # type: ignore[attr-defined]
    zs: Any = stream.handle
    compute = zs.compute.handle
    copies = (zs.copy or zs.compute).handle
    zkernel = kernel.handle.handle  # type: ignore[attr-defined]
    n_arg, start_arg = ffi.new("uint32_t*", THREADS), ffi.new("uint32_t*", 0)
    out_arg = ffi.new("uint64_t*", int(out))
    groups = ffi.new("ze_group_count_t*", [1, 1, 1])
    dst, src = ffi.cast("void*", int(dev)), ffi.cast("void*", pinned.ctypes.data)
    pattern = ffi.new("uint8_t*", 1)
    null = ffi.NULL

    def check(rc: int, what: str) -> None:
        if rc != 0:
            raise RuntimeError(f"{what}: ze_result_t {rc:#x}")

    def raw_launch() -> None:
        check(lib.zeKernelSetGroupSize(zkernel, THREADS, 1, 1), "zeKernelSetGroupSize")
        check(lib.zeKernelSetArgumentValue(zkernel, 0, 4, n_arg), "zeKernelSetArgumentValue")
        check(lib.zeKernelSetArgumentValue(zkernel, 1, 4, start_arg), "zeKernelSetArgumentValue")
        check(lib.zeKernelSetArgumentValue(zkernel, 2, 8, out_arg), "zeKernelSetArgumentValue")
        check(
            lib.zeCommandListAppendLaunchKernel(compute, zkernel, groups, null, 0, null),
            "zeCommandListAppendLaunchKernel",
        )

    def raw_copy() -> None:
        check(
            lib.zeCommandListAppendMemoryCopy(copies, dst, src, COPY_BYTES, null, 0, null),
            "zeCommandListAppendMemoryCopy",
        )

    def raw_fill() -> None:
        check(
            lib.zeCommandListAppendMemoryFill(copies, dst, pattern, 1, MEMSET_BYTES, null, 0, null),
            "zeCommandListAppendMemoryFill",
        )

    enqueue: dict[str, dict[str, Op]] = {
        LAUNCH: {
            AR: lambda: gpu.launch(kernel, 1, THREADS, args, stream=stream),
            RAW_ZE: raw_launch,
        },
        COPY: {AR: lambda: gpu.copy_h2d_async(pinned, dev, stream=stream), RAW_ZE: raw_copy},
        MEMSET: {
            AR: lambda: gpu.memset_async(dev, 1, MEMSET_BYTES, stream=stream),
            RAW_ZE: raw_fill,
        },
        GRAPH: {AR: lambda: gpu.launch_graph(graph, stream)},
    }
    rows: list[dict[str, Any]] = []
    try:
        await gpu.memset_async(out, 0, THREADS * 4, stream=stream)
        await gpu.launch(kernel, 1, THREADS, args, stream=stream)
        await _check_iota(gpu, stream, out, AR)
        await gpu.memset_async(out, 0, THREADS * 4, stream=stream)
        raw_launch()
        await gpu.launch(kernel, 1, THREADS, args, stream=stream)  # its marker covers the raw one
        await _check_iota(gpu, stream, out, RAW_ZE)
        for op_name, contenders in enqueue.items():
            ar_op = contenders[AR]

            async def drain(ar_op: Op = ar_op) -> None:
                # aruntime's own op last: it orders itself after the raw appends on
                # that list (a barrier), and the marker behind it covers them all.
                ar_op()
                await stream.synchronize()

            figures = await _enqueue_rounds(contenders, drain, rounds, block)
            rows.append({"section": "enqueue", "op": op_name, **figures})
        notes.append(
            f"{GRAPH}: no raw Level Zero peer (aruntime replays a graph with its own launcher)"
        )
    finally:
        graph.close()
        stream.close()
        gpu.free_host_pinned(pinned)
        gpu.free(dev)
        gpu.free(out)
    return rows


async def _measure_mock(gpu: ar.Backend, rounds: int, block: int) -> list[dict[str, Any]]:
    host = np.arange(COPY_BYTES, dtype=np.uint8)
    dev = gpu.alloc(COPY_BYTES)
    stream = gpu.create_stream()
    log = gpu.driver.call_log  # type: ignore[attr-defined]  # the mock logs every op
    checkpoint = anyio.lowlevel.checkpoint

    async def copy() -> None:
        log.clear()
        await gpu.copy_h2d_async(host, dev, stream=stream)

    async def bare() -> None:  # log.clear() here too: only the op and its await differ
        log.clear()
        await checkpoint()

    try:
        figures = await _await_rounds({AR: copy, CHECKPOINT: bare}, rounds, block)
    finally:
        stream.close()
        gpu.free(dev)
    return [{"section": "mock", "op": MOCK_COPY, **figures}]


async def _measure(backend: str, rounds: int, block: int) -> dict[str, Any]:
    notes: list[str] = []
    try:
        gpu_cm = ar.open_backend(backend)
        gpu = await gpu_cm.__aenter__()
    except Exception as exc:
        return {"unavailable": reason(exc)}
    try:
        if backend == "mock":
            rows = await _measure_mock(gpu, rounds, block)
        elif gpu.name.startswith("cuda"):
            rows = await _measure_cuda(gpu, rounds, block, notes)
        elif gpu.name.startswith("levelzero"):
            rows = await _measure_levelzero(gpu, rounds, block, notes)
        else:
            return {"unavailable": f"{gpu.name}: no peers to compare with"}
        device = gpu.device.name
    except BaseException:
        await gpu_cm.__aexit__(*sys.exc_info())
        raise
    await gpu_cm.__aexit__(None, None, None)
    return {"device": device, "rows": rows, "notes": notes}


# -- the table -------------------------------------------------------------------------------
def _us(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _verdict(ratio: float, target: float, against: str) -> str:
    return f"<= {target:g}x {against} ({ratio:.2f}x): {'met' if ratio <= target else 'MISSED'}"


def _print_backend(
    backend: str, results: dict[str, dict[str, Any]], rounds: int, block: int
) -> None:
    first = next(iter(results.values()))
    print(
        f"\n== {backend} ({first['device']}): median of {rounds} rounds of {block} ops, us per op"
    )
    by_loop = list(results.items())
    peers = (CORE, BINDINGS) if backend.startswith("cuda") else (RAW_ZE,)
    targets = ENQUEUE_TARGETS if backend.startswith("cuda") else ZE_TARGETS
    head = f"{'enqueue only':26}{'loop':9}{AR:>10}" + "".join(f"{p:>15}" for p in peers)
    enqueue_rows = [
        (loop, row) for loop, r in by_loop for row in r["rows"] if row["section"] == "enqueue"
    ]
    if enqueue_rows:
        print(head + f"{'/ best peer':>13}  target")
        for op_name in dict.fromkeys(row["op"] for _, row in enqueue_rows):
            for loop, row in enqueue_rows:
                if row["op"] != op_name:
                    continue
                us: dict[str, float] = row["us"]
                line = f"{op_name:26}{loop:9}{_us(us[AR]):>10}"
                line += "".join(f"{_us(us.get(p)):>15}" for p in peers)
                best = "-" if row["best"] is None else f"{row['best']:.2f}x"
                target = ""
                if op_name in targets:
                    against, bound = targets[op_name]
                    if against in us:
                        target = _verdict(row["ratio"][against], bound, against)
                    else:
                        target = f"<= {bound:g}x {against}: not measured"
                print(f"{line}{best:>13}  {target}".rstrip())
    awaited = [
        (loop, row) for loop, r in by_loop for row in r["rows"] if row["section"] == "awaited"
    ]
    if awaited:
        print(f"{'awaited, one at a time':26}{'loop':9}{AR:>10}{POLL:>18}{TO_THREAD:>23}  targets")
        for loop, row in awaited:
            us = row["us"]
            line = f"{row['op']:26}{loop:9}{_us(us[AR]):>10}"
            line += f"{_us(us.get(POLL)):>18}{_us(us.get(TO_THREAD)):>23}"
            verdicts = [
                _verdict(row["ratio"][peer], bound, peer)
                for peer, bound in AWAITED_TARGETS[row["op"]].items()
                if peer in us
            ]
            print(f"{line}  {'; '.join(verdicts) or 'no peers'}")
    mock = [(loop, row) for loop, r in by_loop for row in r["rows"] if row["section"] == "mock"]
    if mock:
        print(
            f"{'awaited, one at a time':26}{'loop':9}{AR:>10}{CHECKPOINT:>12}{'ratio':>9}  target"
        )
        for loop, row in mock:
            us = row["us"]
            ratio = row["ratio"][CHECKPOINT]
            line = f"{row['op']:26}{loop:9}{_us(us[AR]):>10}{_us(us[CHECKPOINT]):>12}"
            print(f"{line}{ratio:>8.2f}x  {_verdict(ratio, MOCK_TARGET, CHECKPOINT)}")
    for note in dict.fromkeys(n for _, r in by_loop for n in r["notes"]):
        print(f"note: {note}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--backend",
        default=",".join(BACKENDS),
        help=f"comma-separated backends (default {','.join(BACKENDS)}; cuda on a GPU)",
    )
    parser.add_argument("--loops", default=",".join(LOOPS), help="asyncio, trio or both")
    parser.add_argument("--rounds", type=int, default=31, help="rounds to take the median of")
    parser.add_argument("--block", type=int, default=200, help="ops per contender per round")
    parser.add_argument("--quick", action="store_true", help="a smoke run: 3 rounds of 20")
    parser.add_argument("--worker", nargs=4, metavar=("BACKEND", "LOOP", "ROUNDS", "BLOCK"))
    args = parser.parse_args(argv)
    if args.worker:
        backend, loop, rounds, block = args.worker
        worker_result(anyio.run(_measure, backend, int(rounds), int(block), backend=loop))
        return 0
    rounds, block = (3, 20) if args.quick else (args.rounds, args.block)
    backends = [b.strip() for b in args.backend.split(",") if b.strip()]
    loops = [lp.strip() for lp in args.loops.split(",") if lp.strip()]
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"aruntime beside its peers, same driver and stream; load average {load}")
    failed = skipped = 0
    for backend in backends:
        results: dict[str, dict[str, Any]] = {}
        for loop in loops:
            got = run_worker(__file__, [backend, loop, str(rounds), str(block)])
            if isinstance(got, str):
                print(f"\n== {backend} [{loop}]: {got}")
                failed += 1
            elif "unavailable" in got:
                print(f"\n== {backend}: unavailable: {got['unavailable']}")
                skipped += 1
                break
            else:
                results[loop] = got
        if results:
            _print_backend(backend, results, rounds, block)
    print(f"\n{NOISE}")
    if failed:
        return 1
    return SKIPPED if skipped == len(backends) else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
