"""Kernel time on the sims: interpreted device code against the host build of our own kernels.

    PYTHONPATH=. python benchmarks/bench_sim_kernels.py [--rounds R] [--quick]

levelzero-sim: gemm_f32 on 256 x 256 x 256 and reduce_f32 summing 16 Mi
floats (the compute ops' kernels, launched as aruntime's compute layer
launches them), once from ``aruntime/kernels/*.spv`` on the sim's SPIR-V
executor and once from the host shared object.  cuda-sim: the same gemm
from its PTX and from the host build, beside Triton's tutorial matmul in
fp16 on 256 x 256 x 256 as Triton 3.9 compiled it for sm_80 (``ldmatrix``
and ``mma.sync``) and sm_90 (``wgmma`` on shared-memory descriptors), from
the corpus in ``tests/ffi/ptx/triton`` (a source checkout's; an installed
copy without it says so), and the corpus's fp8 matmuls for sm_90 (e4m3 and
e5m2 inputs, fp16 out: the tutorial's kernel as written and three tuned
configurations), each with its error against float64 numpy.  Each time
is the median kernel time (timing events around the launch); the last
column divides it by the host gemm's.
Everything runs on the threads the engine splits a grid over
(``ARUNTIME_SIM_KERNEL_THREADS``, default 1): the tables say how many.
Sanity figures, not claims; nothing here asserts a time.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

import aruntime as ar
from aruntime._kernel_images import host_image, ptx_image, spirv_image

try:
    from _harness import console, median, parse_args, table
except ImportError:  # imported as benchmarks.bench_sim_kernels
    from benchmarks._harness import console, median, parse_args, table

QUICK_ARGV = ["--quick", "--rounds", "1"]

#: Triton's PTX corpus (tests/ffi/ptx/triton/generate.py): in a source checkout only.
TRITON = Path(__file__).resolve().parent.parent / "tests" / "ffi" / "ptx" / "triton"


def _kernel_threads() -> str:
    return os.environ.get("ARUNTIME_SIM_KERNEL_THREADS") or "1"


def _time_ms(
    gpu: ar.Backend,
    kernel: ar.Kernel,
    grid: int,
    block: int,
    args: list[Any],
    shared_mem: int = 0,
) -> float:
    stream = gpu.create_stream()
    start, end = gpu.create_event(timing=True), gpu.create_event(timing=True)
    try:
        gpu.record_event(start, stream)
        gpu.launch(kernel, grid, block, args, stream=stream, shared_mem=shared_mem)
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


def _levelzero_table(rounds: int, gemm_size: int, reduce_n: int) -> None:
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


def _triton_matmul_ms(gpu: ar.Backend, arch: str, size: int, rounds: int) -> tuple[float, float]:
    """Median ms of Triton's fp16 matmul (``matmul_f16.<arch>``) on size^3, and its
    largest error against float64 numpy, relative to the result's scale."""
    name = f"matmul_f16.{arch}"
    meta = json.loads((TRITON / "manifest.json").read_text())[name]
    rng = np.random.default_rng(2)
    a = rng.standard_normal((size, size)).astype(np.float16)
    b = rng.standard_normal((size, size)).astype(np.float16)
    bufs = [gpu.alloc(a.nbytes) for _ in range(3)]
    try:
        gpu.copy_h2d(a, bufs[0])
        gpu.copy_h2d(b, bufs[1])
        module = gpu.load_module(f"triton-{name}", (TRITON / f"{name}.ptx").read_text())
        kernel = gpu.kernel(module, meta["entry"])
        n = np.int32(size)
        one = np.int32(1)
        # a, b, c; M, N, K; the row strides of a, b and c and their unit column
        # strides; then Triton's global and profile scratch (none here).
        args = [*bufs, n, n, n, n, one, n, one, n, one, np.uint64(0), np.uint64(0)]
        tiles = -(-size // 64)
        grid, block, shared = tiles * tiles, 32 * meta["num_warps"], meta["shared"]
        _time_ms(gpu, kernel, grid, block, args, shared)  # warm-up
        ms = median([_time_ms(gpu, kernel, grid, block, args, shared) for _ in range(rounds)])
        got = gpu.copy_d2h(bufs[2], np.empty((size, size), np.float16)).astype(np.float64)
        want = a.astype(np.float64) @ b.astype(np.float64)
        return ms, float(np.abs(got - want).max() / np.abs(want).max())
    finally:
        for p in bufs:
            gpu.free(p)


# The committed fp8 matmuls (sm_90 only): file stem, fp8 kind, what the kernel runs on.
FP8_MATMULS = (
    ("matmul_fp8e5", "e5m2", "wgmma k32, as written"),
    ("matmul_fp8e4_64x128x64_s3_w4", "e4m3", "wgmma k32, tuned"),
    ("matmul_fp8e5_128x128x64_s3_w8", "e5m2", "wgmma k32, tuned"),
    ("matmul_fp8e4_64x32x64_s4_w2", "e4m3", "cvt to f16x2 + mma.sync"),
)


def _fp8_values(kind: str) -> np.ndarray[Any, Any]:
    """The value of each of the 256 codes of e4m3 (bias 7, S.1111.111 NaN) or
    e5m2 (bias 15, IEEE-like), as float64."""
    code = np.arange(256)
    mb, bias = (3, 7) if kind == "e4m3" else (2, 15)
    e, m = (code & 0x7F) >> mb, code & ((1 << mb) - 1)
    v = np.where(e == 0, m * 2.0 ** (1 - bias - mb), ((1 << mb) + m) * 2.0 ** (e - bias - mb))
    v[((code & 0x7F) == 0x7F) if kind == "e4m3" else (e == 31)] = np.nan
    return np.where(code & 0x80, -v, v)


def _triton_fp8_ms(
    gpu: ar.Backend, stem: str, kind: str, size: int, rounds: int
) -> tuple[float, float]:
    """Median ms of one of Triton's fp8 matmuls on size^3 (B given transposed, as
    the tutorial passes it; C in fp16), and its largest error against float64
    numpy, relative to the result's scale."""
    name = f"{stem}.sm90"
    meta = json.loads((TRITON / "manifest.json").read_text())[name]
    values = _fp8_values(kind)
    finite = np.flatnonzero(np.isfinite(values) & (np.abs(values) <= 4))
    rng = np.random.default_rng(8)
    a = rng.choice(finite, (size, size)).astype(np.uint8)
    bt = rng.choice(finite, (size, size)).astype(np.uint8)
    bufs = [gpu.alloc(a.nbytes), gpu.alloc(bt.nbytes), gpu.alloc(2 * size * size)]
    try:
        gpu.copy_h2d(a, bufs[0])
        gpu.copy_h2d(bt, bufs[1])
        module = gpu.load_module(f"triton-{name}", (TRITON / f"{name}.ptx").read_text())
        kernel = gpu.kernel(module, meta["entry"])
        n = np.int32(size)
        one = np.int32(1)
        if stem == "matmul_fp8e5":  # as written: every stride a parameter
            ints, tile = [n, n, n, n, one, one, n, n, one], (64, 64)
        else:  # tuned: stride_am, stride_bn, stride_cm (the unit strides are constants)
            ints = [n, n, n, n, n, n]
            tile = tuple(int(v) for v in stem.split("_")[2].split("x")[:2])
        args = [*bufs, *ints, np.uint64(0), np.uint64(0)]  # Triton's scratch: none
        grid = -(-size // tile[0]) * -(-size // tile[1])
        block, shared = 32 * meta["num_warps"], meta["shared"]
        _time_ms(gpu, kernel, grid, block, args, shared)  # warm-up
        ms = median([_time_ms(gpu, kernel, grid, block, args, shared) for _ in range(rounds)])
        got = gpu.copy_d2h(bufs[2], np.empty((size, size), np.float16)).astype(np.float64)
        want = values[a] @ values[bt].T
        return ms, float(np.abs(got - want).max() / np.abs(want).max())
    finally:
        for p in bufs:
            gpu.free(p)


def _cuda_table(rounds: int, size: int) -> None:
    gpu = ar.open_backend("cuda-sim")
    try:
        out = table(
            f"cuda-sim kernel time on {size}^3, median of {rounds} "
            f"({_kernel_threads()} kernel threads)",
            ["kernel", "ms", "/ host gemm_f32", "max |err| / max |c|"],
        )
        module, kernel, grid, block, kargs, bufs = _gemm_case(gpu, size)
        times = {}
        for kind, image in (("PTX", ptx_image(module)), ("host build", host_image(module))):
            assert image is not None, module
            k = gpu.kernel(gpu.load_module(f"{module}.{kind}", image), kernel)
            _time_ms(gpu, k, grid, block, kargs)  # warm-up
            times[kind] = median([_time_ms(gpu, k, grid, block, kargs) for _ in range(rounds)])
        for p in bufs:
            gpu.free(p)
        host = times["host build"]
        for kind, ms in times.items():
            out.add_row(f"our gemm_f32, {kind}", f"{ms:.1f}", f"{ms / host:.1f}x", "")
        for arch, what in (("sm80", "ldmatrix + mma.sync"), ("sm90", "wgmma")):
            label = f"Triton matmul fp16, {arch} ({what})"
            if not (TRITON / "manifest.json").exists():
                out.add_row(label, "-", "-", "no tests/ffi/ptx/triton here (a checkout's)")
                continue
            ms, err = _triton_matmul_ms(gpu, arch, size, rounds)
            out.add_row(label, f"{ms:.1f}", f"{ms / host:.1f}x", f"{err:.1e}")
        for stem, kind, what in FP8_MATMULS:
            label = f"Triton matmul {kind}, sm90 ({what})"
            if not (TRITON / f"{stem}.sm90.ptx").exists():
                out.add_row(label, "-", "-", "no tests/ffi/ptx/triton here (a checkout's)")
                continue
            ms, err = _triton_fp8_ms(gpu, stem, kind, size, rounds)
            out.add_row(label, f"{ms:.1f}", f"{ms / host:.1f}x", f"{err:.1e}")
        console.print(out)
    finally:
        gpu.close()


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(__doc__.splitlines()[0], argv)
    rounds = args.rounds or (1 if args.quick else 3)
    gemm_size = 32 if args.quick else 256
    reduce_n = (1 << 16) if args.quick else (16 << 20)
    _levelzero_table(rounds, gemm_size, reduce_n)
    _cuda_table(rounds, 64 if args.quick else 256)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
