"""cuda-sim's PTX executor against the host build of the same kernels.

    PYTHONPATH=. python benchmarks/bench_ptx.py [--quick] [--rounds N]

Runs gemm 256^3 and a sum over 16 Mi floats on cuda-sim twice: with the
committed PTX (the default, ARUNTIME_SIM_KERNELS=device) and with the host
shared objects (ARUNTIME_SIM_KERNELS=host), and prints the median time of
each and the ratio PTX / host.  Both run the grid the same way: the engine
splits it over ARUNTIME_SIM_KERNEL_THREADS threads (default 1), and the PTX
executor runs the block range each thread is given.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

import numpy as np
from _harness import console, median, parse_args, table

import aruntime as ar

QUICK_ARGV = ["--quick"]


@contextmanager
def _kernels(kind: str) -> Iterator[ar.Backend]:
    old = os.environ.get("ARUNTIME_SIM_KERNELS")
    os.environ["ARUNTIME_SIM_KERNELS"] = kind
    try:
        with ar.open_backend("cuda-sim") as backend:
            yield backend
    finally:
        if old is None:
            del os.environ["ARUNTIME_SIM_KERNELS"]
        else:
            os.environ["ARUNTIME_SIM_KERNELS"] = old


def _time(run: Callable[[], ar.Completion], rounds: int) -> float:
    run().wait()  # loads the module, warms the caches
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        run().wait()
        times.append(time.perf_counter() - t0)
    return median(times)


def _gemm(backend: ar.Backend, n: int, rounds: int) -> float:
    rng = np.random.default_rng(0)
    a, b = (rng.uniform(-1, 1, n * n).astype(np.float32) for _ in range(2))
    pa, pb, pc = backend.alloc(a.nbytes), backend.alloc(b.nbytes), backend.alloc(a.nbytes)
    backend.copy_h2d(a, pa)
    backend.copy_h2d(b, pb)
    try:
        return _time(lambda: backend.gemm(pa, pb, pc, n, n, n), rounds)
    finally:
        for p in (pa, pb, pc):
            backend.free(p)


def _reduce(backend: ar.Backend, n: int, rounds: int) -> float:
    x = np.random.default_rng(1).uniform(-1, 1, n).astype(np.float32)
    px, py = backend.alloc(x.nbytes), backend.alloc(4)
    backend.copy_h2d(x, px)
    try:
        return _time(lambda: backend.reduce(px, py, (n,), 0, "sum"), rounds)
    finally:
        backend.free(px)
        backend.free(py)


def _kernel_threads() -> str:
    """What the engine splits a grid over (it reads the knob when it loads)."""
    return os.environ.get("ARUNTIME_SIM_KERNEL_THREADS", "1")


def _count(n: int) -> str:
    return f"{n >> 20} Mi" if n >= 1 << 20 and n % (1 << 20) == 0 else f"{n}"


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(__doc__.splitlines()[0], argv)
    rounds = args.rounds or (1 if args.quick else 5)
    gemm_n = 64 if args.quick else 256
    reduce_n = (1 << 16) if args.quick else (16 << 20)
    cases: list[tuple[str, str, Callable[[ar.Backend], float]]] = [
        ("gemm", f"{gemm_n}^3", lambda b: _gemm(b, gemm_n, rounds)),
        ("reduce sum", _count(reduce_n) + " floats", lambda b: _reduce(b, reduce_n, rounds)),
    ]
    results: dict[str, dict[str, float]] = {"host": {}, "device": {}}
    for kind in ("host", "device"):
        with _kernels(kind) as backend:
            for name, _size, run in cases:
                results[kind][name] = run(backend)
    t = table(
        f"cuda-sim kernel time, median of {rounds} (kernel threads: {_kernel_threads()})",
        ["op", "size", "host build", "PTX", "PTX / host"],
    )
    for name, size, _run in cases:
        host, ptx = results["host"][name], results["device"][name]
        t.add_row(name, size, f"{host * 1e3:.2f} ms", f"{ptx * 1e3:.2f} ms", f"{ptx / host:.1f}x")
    console.print(t)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
