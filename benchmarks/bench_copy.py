"""Mock blocking copies against numpy.copyto of the same bytes.

Each round copies ``size`` bytes with ``numpy.copyto`` and with the mock's
``copy_h2d`` (and ``copy_d2h``), alternating which goes first, into
destinations touched beforehand so page faults are not measured.  The figure
is the median of the rounds' bandwidth ratios; the target for ``copy_h2d`` of
64 MiB is at least 0.9x numpy's bandwidth.

    python benchmarks/bench_copy.py [--quick] [--rounds N]
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import numpy as np
from _harness import console, median, parse_args, table, verdict

import aruntime as ar

TARGET = 0.9


def _timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


#: Arguments for a smoke run (``aruntime bench --quick``).
QUICK_ARGV = ["--quick"]


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(__doc__.splitlines()[0], argv)
    rounds = args.rounds or (3 if args.quick else 11)
    size = (4 if args.quick else 64) << 20
    rng = np.random.default_rng(0)
    src = rng.integers(0, 256, size, dtype=np.uint8)
    host_dst = np.ones(size, dtype=np.uint8)
    back = np.ones(size, dtype=np.uint8)
    results: dict[str, list[tuple[float, float]]] = {"copy_h2d": [], "copy_d2h": []}
    with ar.open_backend("mock") as gpu:
        dptr = gpu.alloc(size)
        gpu.copy_h2d(src, dptr)  # touch the device pages once
        ops: dict[str, tuple[Callable[[], object], Callable[[], object]]] = {
            "copy_h2d": (lambda: np.copyto(host_dst, src), lambda: gpu.copy_h2d(src, dptr)),
            "copy_d2h": (lambda: np.copyto(back, host_dst), lambda: gpu.copy_d2h(dptr, back)),
        }
        for r in range(rounds):
            for name, (numpy_copy, mock_copy) in ops.items():
                if r % 2:
                    mock_s, numpy_s = _timed(mock_copy), _timed(numpy_copy)
                else:
                    numpy_s, mock_s = _timed(numpy_copy), _timed(mock_copy)
                results[name].append((numpy_s, mock_s))
            gpu.driver.call_log.clear()
        assert np.array_equal(back, src)  # a correctness check, not a timing one
        gpu.free(dptr)
    t = table(
        f"mock copy of {size >> 20} MiB vs numpy.copyto, GB/s, median of {rounds} rounds; "
        f"target for copy_h2d >= {TARGET}x",
        ["op", "numpy.copyto", "mock", "bandwidth ratio"],
    )
    for name, pairs in results.items():
        numpy_bw = median([size / n / 1e9 for n, _ in pairs])
        mock_bw = median([size / m / 1e9 for _, m in pairs])
        ratio = median([n / m for n, m in pairs])
        mark = ""
        if name == "copy_h2d":
            mark = " " + verdict(ratio, TARGET, at_most=False).split(" (")[0]
        t.add_row(name, f"{numpy_bw:.2f}", f"{mock_bw:.2f}", f"{ratio:.2f}x{mark}")
    console.print(t)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
