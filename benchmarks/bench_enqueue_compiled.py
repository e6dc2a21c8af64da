"""The compiled enqueue beside the Python one, per backend, in one process.

Two streams of one backend: one made with ``ARUNTIME_COMPILED_ENQUEUE=0``
(the Python path, ``Stream.enqueue``) and one without (the C path,
``aruntime/_enqueue.py``).  Blocks of ops alternate between them, so both
see the same machine; each figure is the median, over the rounds, of a
block's time per op, and the ratio is compiled / Python (below 1: the C
path is cheaper).  The ops are a kernel launch of one 32-thread block, a
4 KiB copy from pinned memory and a 64-byte memset, none awaited.

    PYTHONPATH=. python benchmarks/bench_enqueue_compiled.py [--quick] [--backends mock,cuda-sim]
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable

import anyio
import numpy as np
from _harness import add_backend_rows, console, median, reason, table, worker_result

import aruntime as ar
from aruntime import _enqueue

BACKENDS = ("mock", "cuda-sim", "levelzero-sim")
OPS = ("launch", "4 KiB H2D copy", "64 B memset")
#: Arguments for a smoke run (``aruntime bench --quick``).
QUICK_ARGV = ["--quick"]


def _python_stream(gpu: ar.Backend) -> ar.Stream:
    saved = os.environ.get("ARUNTIME_COMPILED_ENQUEUE")
    os.environ["ARUNTIME_COMPILED_ENQUEUE"] = "0"
    try:
        return gpu.create_stream()
    finally:
        if saved is None:
            del os.environ["ARUNTIME_COMPILED_ENQUEUE"]
        else:
            os.environ["ARUNTIME_COMPILED_ENQUEUE"] = saved


async def _measure(backend: str, rounds: int, block: int) -> dict[str, list[float]] | str:
    if not _enqueue.enabled():
        return "the compiled enqueue is not built or is switched off"
    async with ar.open_backend(backend) as gpu:
        kernel = gpu.kernel(gpu.builtin_module("vector_ops"), "fill_f32")
        dev = gpu.alloc(4096)
        pinned = gpu.alloc_host_pinned(4096)
        args = [np.uint32(32), np.float32(1.0), dev]
        out: dict[str, list[float]] = {}
        with _python_stream(gpu) as python, gpu.create_stream() as compiled:
            ops: dict[str, Callable[[ar.Stream], object]] = {
                "launch": lambda s: gpu.launch(kernel, 1, 32, args, stream=s),
                "4 KiB H2D copy": lambda s: gpu.copy_h2d_async(pinned, dev, stream=s),
                "64 B memset": lambda s: gpu.memset_async(dev, 0, 64, stream=s),
            }
            for name, op in ops.items():
                times: dict[str, list[float]] = {"python": [], "compiled": []}
                for index in range(rounds + 1):  # the first round warms up
                    for label, stream in (("python", python), ("compiled", compiled)):
                        start = time.perf_counter()
                        for _ in range(block):
                            op(stream)
                        elapsed = time.perf_counter() - start
                        await stream
                        if index:
                            times[label].append(elapsed / block * 1e6)
                py, c = median(times["python"]), median(times["compiled"])
                out[name] = [py, c, c / py]
        gpu.free_host_pinned(pinned)
        gpu.free(dev)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", default=",".join(BACKENDS))
    parser.add_argument("--rounds", type=int, default=31)
    parser.add_argument("--quick", action="store_true", help="3 rounds of 20 (a smoke run)")
    parser.add_argument("--worker", nargs=3, metavar=("BACKEND", "ROUNDS", "BLOCK"))
    args = parser.parse_args(argv)
    if args.worker:
        backend, rounds, block = args.worker
        try:
            worker_result(anyio.run(_measure, backend, int(rounds), int(block)))
        except ar.BackendUnavailableError as exc:
            worker_result(reason(exc))
        return 0
    rounds, block = (3, 20) if args.quick else (args.rounds, 200)
    out = table(
        f"Enqueue, us per op (Python path / compiled / ratio), median of {rounds} rounds "
        f"of {block}; load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}",
        ["backend", *OPS],
    )
    add_backend_rows(
        out,
        __file__,
        args.backends.split(","),
        lambda backend: [backend, str(rounds), str(block)],
        OPS,
        lambda times: "{:.2f} / {:.2f} / {:.2f}x".format(*times),
    )
    console.print(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
