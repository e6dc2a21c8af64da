"""Compute operations: ops per second on each backend beside numpy on the host.

    PYTHONPATH=. python benchmarks/bench_compute.py [--seconds S] [--backends mock,cuda-sim,...]

For each op at one fixed, moderate size, the table shows numpy's ops per
second on the host (float32) and each backend's, with the ratio backend /
numpy (with one BLAS thread, see below).  On the software drivers the
kernels are aruntime's naive portable kernels running on one host thread, so
this is a sanity figure (the sims are there to run the real code paths, not to
be fast), not a performance claim.

When a real CUDA GPU is present, a second table compares the naive gemm and
attention kernels with CuPy or PyTorch on the device (a skip message
otherwise).
"""

from __future__ import annotations

import os

# One BLAS thread, set before numpy loads: the sims run kernels on one host
# thread, and OpenBLAS's spinning threads collapse on a loaded machine (a
# 128^3 sgemm measured 22 ms with them against 0.15 ms without, under load).
# Set OPENBLAS_NUM_THREADS yourself to override.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from _harness import reason

import aruntime as ar
from aruntime.testing import open_test_backend


@dataclass
class Case:
    name: str
    size: str
    inputs: list[np.ndarray]
    out_elements: int
    host: Callable[..., Any]  # numpy on the inputs
    device: Callable[..., ar.Completion]  # (backend, *input ptrs, out ptr, stream)


def _gelu(x: np.ndarray) -> np.ndarray:
    inner = np.float32(0.7978845608028654) * (x + np.float32(0.044715) * x * x * x)
    return np.float32(0.5) * x * (np.float32(1) + np.tanh(inner))


def _attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, scale: float) -> np.ndarray:
    s = (q @ k.swapaxes(-1, -2)) * np.float32(scale)
    s = np.exp(s - s.max(axis=-1, keepdims=True))
    return (s / s.sum(axis=-1, keepdims=True)) @ v


def _conv(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    windows = np.lib.stride_tricks.sliding_window_view(x, w.shape[2:], axis=(2, 3))
    return np.einsum("ncpqrs,kcrs->nkpq", windows, w, dtype=np.float32)


def cases(rng: np.random.Generator) -> list[Case]:
    def f32(*shape: int) -> np.ndarray:
        return rng.uniform(-1, 1, shape).astype(np.float32)

    m = n = k = 128
    x_conv, w_conv = f32(1, 16, 34, 34), f32(16, 16, 3, 3)
    b, h, s, d = 1, 4, 128, 64
    big = 1 << 20
    return [
        Case(
            "gemm", f"{m}x{n}x{k}", [f32(k, m), f32(n, k)], m * n,
            lambda a, bb: bb.T @ a.T,
            lambda g, a, bb, c, st: g.gemm(a, bb, c, m, n, k, stream=st),
        ),
        Case(
            "conv2d", "1x16x34x34 * 16x16x3x3", [x_conv, w_conv], 16 * 32 * 32,
            _conv,
            lambda g, x, w, y, st: g.conv2d_forward(
                x, w, y, (1, 16, 34, 34), (16, 16, 3, 3), (1, 16, 32, 32), stream=st
            ),
        ),
        Case(
            "attention", f"{b}x{h}x{s}x{s}x{d}", [f32(b, h, s, d) for _ in range(3)], b * h * s * d,
            lambda q, kk, v: _attention(q, kk, v, d**-0.5),
            lambda g, q, kk, v, o, st: g.attention(
                q, kk, v, o, b, h, s, s, d, scale=d**-0.5, stream=st
            ),
        ),
        Case(
            "reduce sum", "256x4096, axis 1", [f32(256, 4096)], 256,
            lambda x: x.sum(axis=1),
            lambda g, x, y, st: g.reduce(x, y, (256, 4096), 1, "sum", stream=st),
        ),
        Case(
            "unary gelu", "1M", [f32(big)], big,
            _gelu,
            lambda g, x, y, st: g.unary(x, y, big, "gelu", stream=st),
        ),
        Case(
            "binary add", "1M", [f32(big), f32(big)], big,
            np.add,
            lambda g, a, bb, o, st: g.binary(a, bb, o, big, "add", stream=st),
        ),
    ]  # fmt: skip


def _rate(run_batch: Callable[[int], None], seconds: float) -> float:
    """Ops per second of ``run_batch(reps)``, with reps grown until a batch takes ``seconds``."""
    run_batch(1)  # warm-up: module loads, first touch of memory
    reps = 1
    while True:
        start = time.perf_counter()
        run_batch(reps)
        elapsed = time.perf_counter() - start
        if elapsed >= seconds or reps >= 1 << 16:
            return reps / elapsed
        reps = min(1 << 16, max(2 * reps, math.ceil(reps * seconds / max(elapsed, 1e-6))))


def host_rate(case: Case, seconds: float) -> float:
    def batch(reps: int) -> None:
        for _ in range(reps):
            case.host(*case.inputs)

    return _rate(batch, seconds)


def device_rate(backend: ar.Backend, case: Case, seconds: float) -> float:
    ptrs = []
    try:
        for array in case.inputs:
            ptr = backend.alloc(array.nbytes)
            ptrs.append(ptr)
            backend.copy_h2d(array, ptr)
        out = backend.alloc(case.out_elements * 4)
        ptrs.append(out)
        stream = backend.create_stream()
        try:

            def batch(reps: int) -> None:
                last = None
                for _ in range(reps):
                    last = case.device(backend, *ptrs, stream)
                assert last is not None
                last.wait()

            return _rate(batch, seconds)
        finally:
            stream.close()
    finally:
        for ptr in ptrs:
            backend.free(ptr)


def sim_table(names: list[str], seconds: float) -> None:
    backends: dict[str, ar.Backend] = {}
    for name in names:
        try:
            backends[name] = open_test_backend(name)
        except ar.BackendUnavailableError as exc:
            print(f"{name}: skipped ({reason(exc)})")
    all_cases = cases(np.random.default_rng(0))
    header = f"{'op':<12} {'size':<24} {'numpy/s':>10}" + "".join(
        f" {name + '/s':>15} {'ratio':>7}" for name in backends
    )
    print(header)
    print("-" * len(header))
    try:
        for case in all_cases:
            base = host_rate(case, seconds)
            row = f"{case.name:<12} {case.size:<24} {base:>10.1f}"
            for backend in backends.values():
                rate = device_rate(backend, case, seconds)
                row += f" {rate:>15.1f} {rate / base:>6.2f}x"
            print(row, flush=True)
    finally:
        for backend in backends.values():
            backend.close()


def _reference(
    lib: str, name: str, host_args: list[np.ndarray], scale: float
) -> Callable[[int], None]:
    """A batch runner of the same op in PyTorch or CuPy, synchronised at the end."""
    if lib == "torch":
        import torch

        targs = [torch.from_numpy(x).cuda() for x in host_args]
        sdpa = torch.nn.functional.scaled_dot_product_attention
        op: Callable[[], Any] = (
            (lambda: torch.matmul(targs[0], targs[1])) if name == "gemm" else (lambda: sdpa(*targs))
        )
        sync: Callable[[], Any] = torch.cuda.synchronize
    else:
        import cupy

        cargs = [cupy.asarray(x) for x in host_args]
        op = (
            (lambda: cargs[0] @ cargs[1])
            if name == "gemm"
            else (lambda: _cupy_attention(cupy, *cargs, scale))
        )
        sync = cupy.cuda.Device().synchronize

    def batch(reps: int) -> None:
        for _ in range(reps):
            op()
        sync()

    return batch


def gpu_table(seconds: float) -> None:
    try:
        backend = ar.open_backend("cuda")
    except ar.BackendUnavailableError as exc:
        print(f"\nreal GPU comparison skipped: no CUDA device ({reason(exc)})")
        return
    lib = ""
    for candidate in ("torch", "cupy"):
        try:
            __import__(candidate)
        except ImportError:
            continue
        lib = candidate
        break
    if not lib:
        backend.close()
        print("\nreal GPU comparison skipped: neither PyTorch nor CuPy is installed")
        return
    rng = np.random.default_rng(1)
    m = 1024
    b, h, s, d = 4, 16, 512, 64
    a_host = rng.uniform(-1, 1, (m, m)).astype(np.float32)
    q_host = rng.uniform(-1, 1, (b, h, s, d)).astype(np.float32)
    gemm_case = Case(
        "gemm", f"{m}^3", [a_host, a_host], m * m, np.matmul,
        lambda g, x, y, z, st: g.gemm(x, y, z, m, m, m, stream=st),
    )  # fmt: skip
    attention_case = Case(
        "attention", f"{b}x{h}x{s}x{s}x{d}", [q_host] * 3, b * h * s * d, _attention,
        lambda g, q, k, v, o, st: g.attention(q, k, v, o, b, h, s, s, d, scale=d**-0.5, stream=st),
    )  # fmt: skip
    with backend:
        print(f"\nreal GPU: aruntime's naive kernels vs {lib} ({backend.device.name})")
        print(f"{'op':<10} {'size':<20} {'aruntime/s':>12} {lib + '/s':>12} {'ratio':>8}")
        for case in (gemm_case, attention_case):
            ours = device_rate(backend, case, seconds)
            theirs = _rate(_reference(lib, case.name, case.inputs, d**-0.5), seconds)
            print(
                f"{case.name:<10} {case.size:<20} {ours:>12.1f} {theirs:>12.1f} "
                f"{ours / theirs:>7.3f}x"
            )


def _cupy_attention(cupy: Any, q: Any, k: Any, v: Any, scale: float) -> Any:
    s = (q @ k.swapaxes(-1, -2)) * scale
    s = cupy.exp(s - s.max(axis=-1, keepdims=True))
    return (s / s.sum(axis=-1, keepdims=True)) @ v


QUICK_ARGV = ["--seconds", "0.01"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=0.3, help="time per measurement")
    parser.add_argument("--backends", default="mock,cuda-sim,levelzero-sim")
    parser.add_argument("--no-gpu", action="store_true", help="skip the real-GPU table")
    args = parser.parse_args(argv)
    sim_table([n for n in args.backends.split(",") if n], args.seconds)
    if not args.no_gpu:
        gpu_table(args.seconds)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
