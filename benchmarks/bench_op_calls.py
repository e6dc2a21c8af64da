"""How much host work one op is: Python calls, C calls and Python bytecodes, per backend.

Calls are counted with ``sys.setprofile``, bytecodes with ``sys.settrace``'s
opcode events (a second pass), over a block of ops enqueued on one stream
(a kernel launch of one 32-thread block, a 4 KiB copy from pinned memory, a
64-byte memset, a replay of a graph of that launch), each backend in its own
process.  A count, unlike a time,
does not move with the machine's load, so it shows what a change to the op
path did even on a busy machine; it is the first thing to look at when a
timing in ``bench_peers`` or ``bench_enqueue`` moves.  Each op's own
enqueue call is counted; the profiler's own calls are not.

    PYTHONPATH=. python benchmarks/bench_op_calls.py [--quick] [--backends mock,cuda-sim]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from types import FrameType
from typing import Any

import anyio
import numpy as np
from _harness import add_backend_rows, console, reason, table, worker_result

import aruntime as ar

BACKENDS = ("mock", "cuda-sim", "levelzero-sim")
OPS = ("launch", "4 KiB H2D copy", "64 B memset", "graph replay")
#: Arguments for a smoke run (``aruntime bench --quick``).
QUICK_ARGV = ["--quick"]


def count_calls(fn: Callable[[], object], n: int) -> tuple[float, float]:
    """Python and C calls per ``fn()``, over ``n`` calls (``fn``'s own frame not counted)."""
    counts = {"call": 0, "c_call": 0}

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event in counts:
            counts[event] += 1

    sys.setprofile(profile)
    try:
        for _ in range(n):
            fn()
    finally:
        sys.setprofile(None)
    # Each fn() is itself a Python call (the lambda), and setprofile(None) a C one.
    return (counts["call"] - n) / n, (counts["c_call"] - 1) / n


def count_bytecodes(fn: Callable[[], object], n: int) -> float:
    """Python bytecodes executed per ``fn()``, over ``n`` calls (the lambda's own included)."""
    executed = 0

    def trace(frame: FrameType, event: str, arg: Any) -> Any:
        nonlocal executed
        frame.f_trace_opcodes = True
        if event == "opcode":
            executed += 1
        return trace

    sys.settrace(trace)
    try:
        for _ in range(n):
            fn()
    finally:
        sys.settrace(None)
    return executed / n


async def _measure(backend: str, n: int) -> dict[str, list[float]]:
    async with ar.open_backend(backend) as gpu:
        kernel = gpu.kernel(gpu.builtin_module("vector_ops"), "fill_f32")
        dev = gpu.alloc(4096)
        pinned = gpu.alloc_host_pinned(4096)
        args = [np.uint32(32), np.float32(1.0), dev]
        with gpu.create_stream() as stream:
            with gpu.capture(stream) as graph:
                gpu.launch(kernel, 1, 32, args, stream=stream)
            ops: dict[str, Callable[[], object]] = {
                "launch": lambda: gpu.launch(kernel, 1, 32, args, stream=stream),
                "4 KiB H2D copy": lambda: gpu.copy_h2d_async(pinned, dev, stream=stream),
                "64 B memset": lambda: gpu.memset_async(dev, 0, 64, stream=stream),
                "graph replay": lambda: gpu.launch_graph(graph, stream),
            }
            for op in ops.values():  # warm-up: layouts, markers, the waiter
                for _ in range(50):
                    op()
            await stream
            out = {}
            for name, op in ops.items():
                out[name] = list(count_calls(op, n))
                await stream
                out[name].append(count_bytecodes(op, n))
                await stream
            graph.close()
        gpu.free_host_pinned(pinned)
        gpu.free(dev)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", default=",".join(BACKENDS))
    parser.add_argument("--quick", action="store_true", help="fewer ops (a smoke run)")
    parser.add_argument("--worker", nargs=2, metavar=("BACKEND", "N"))
    args = parser.parse_args(argv)
    if args.worker:
        backend, n = args.worker
        try:
            worker_result(anyio.run(_measure, backend, int(n)))
        except ar.BackendUnavailableError as exc:
            worker_result(reason(exc))
        return 0
    n = 20 if args.quick else 200
    out = table(
        "Host work per op (Python calls / C calls / Python bytecodes), one stream",
        ["backend", *OPS],
    )
    add_backend_rows(
        out,
        __file__,
        args.backends.split(","),
        lambda backend: [backend, str(n)],
        OPS,
        lambda counts: "{:.0f} / {:.0f} / {:.0f}".format(*counts),
    )
    console.print(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
