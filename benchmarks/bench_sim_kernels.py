"""Kernel time on levelzero-sim: the shipped SPIR-V (interpreted) against the host build.

    PYTHONPATH=. python benchmarks/bench_sim_kernels.py [--rounds R] [--quick]

Runs gemm_f32 on 256 x 256 x 256 and reduce_f32 summing 16 Mi floats (the
compute ops' kernels, launched as aruntime's compute layer launches them),
once from ``aruntime/kernels/*.spv`` on the sim's SPIR-V executor and once
from the host shared object, and prints the median kernel time of each (from
timing events around the launch) and their ratio.  Both run on the threads
the engine splits a grid over (``ARUNTIME_SIM_KERNEL_THREADS``, default 1), so
the ratio is per thread: the table says how many.  Sanity figures,
not claims; nothing here asserts a time.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

import aruntime as ar
from aruntime._kernel_images import host_image, spirv_image

try:
    from _harness import console, median, parse_args, table
except ImportError:  # imported as benchmarks.bench_sim_kernels
    from benchmarks._harness import console, median, parse_args, table

QUICK_ARGV = ["--quick", "--rounds", "1"]


def _kernel_threads() -> str:
    return os.environ.get("ARUNTIME_SIM_KERNEL_THREADS") or "1"


def _time_ms(gpu: ar.Backend, kernel: ar.Kernel, grid: int, block: int, args: list[Any]) -> float:
    stream = gpu.create_stream()
    start, end = gpu.create_event(timing=True), gpu.create_event(timing=True)
    try:
        gpu.record_event(start, stream)
        gpu.launch(kernel, grid, block, args, stream=stream)
        gpu.record_event(end, stream)
        gpu.synchronize(stream).wait()
        return gpu.elapsed_ms(start, end)
    finally:
        gpu.destroy_event(start)
        gpu.destroy_event(end)
        stream.close()


def _gemm_case(gpu: ar.Backend, size: int) -> tuple[str, str, int, int, list[Any], list[Any]]:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((size, size)).astype(np.float32)
    b = rng.standard_normal((size, size)).astype(np.float32)
    bufs = [gpu.alloc(a.nbytes) for _ in range(3)]
    gpu.copy_h2d(a, bufs[0])
    gpu.copy_h2d(b, bufs[1])
    s, f = np.uint64(size), np.float32
    args = [s, s, s, f(1), bufs[0], s, bufs[1], s, f(0), bufs[2], s, np.uint32(0), np.uint32(0)]
    block = 256
    grid = max(1, min((size * size + block - 1) // block, 65535))
    return "gemm", "gemm_f32", grid, block, args, bufs


def _reduce_case(gpu: ar.Backend, n: int) -> tuple[str, str, int, int, list[Any], list[Any]]:
    x = np.random.default_rng(1).standard_normal(n).astype(np.float32)
    bufs = [gpu.alloc(x.nbytes), gpu.alloc(4)]
    gpu.copy_h2d(x, bufs[0])
    one = np.uint64(1)
    # One output element: one work-item walks the whole axis, in both builds.
    args = [one, np.uint64(n), one, np.uint32(0), bufs[0], bufs[1]]
    return "reduce", "reduce_f32", 1, 64, args, bufs


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(__doc__.splitlines()[0], argv)
    rounds = args.rounds or (1 if args.quick else 3)
    gemm_size = 32 if args.quick else 256
    reduce_n = (1 << 16) if args.quick else (16 << 20)
    gpu = ar.open_backend("levelzero-sim")
    try:
        out = table(
            f"levelzero-sim kernel time, median of {rounds} ({_kernel_threads()} kernel threads)",
            ["kernel", "SPIR-V ms", "host ms", "SPIR-V / host"],
        )
        cases = [
            (f"gemm_f32 {gemm_size}^3", _gemm_case(gpu, gemm_size)),
            (f"reduce_f32 sum of {reduce_n:,} floats", _reduce_case(gpu, reduce_n)),
        ]
        for label, (module, kernel, grid, block, kargs, bufs) in cases:
            times = {}
            for kind, image in (("spirv", spirv_image(module)), ("host", host_image(module))):
                assert image is not None, module
                mod = gpu.load_module(f"{module}.{kind}", image)
                k = gpu.kernel(mod, kernel)
                _time_ms(gpu, k, grid, block, kargs)  # warm-up
                times[kind] = median([_time_ms(gpu, k, grid, block, kargs) for _ in range(rounds)])
            ratio = times["spirv"] / times["host"] if times["host"] > 0 else float("inf")
            out.add_row(label, f"{times['spirv']:.1f}", f"{times['host']:.1f}", f"{ratio:.1f}x")
            for p in bufs:
                gpu.free(p)
        console.print(out)
    finally:
        gpu.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
