"""Writes the numba-cuda part of the PTX corpus (tests/ffi/test_ptx_numba_corpus.py).

numba-cuda is not one of the test suite's requirements, so its PTX is kept
here as files, made by this script in a venv that has it (docs/numba.md):

    LD_LIBRARY_PATH=aruntime/_lib NUMBA_ENABLE_CUDASIM=0 \
        python tests/ffi/ptx/numba/generate.py

(numba asks a driver for nothing but its version here; cuda-sim serves.)

Each kernel is compiled for compute capability 8.0 three ways: as numba
compiles by default, with ``lineinfo=True`` and with ``debug=True,
opt=False`` (what users pass to debug, which fills the PTX with ``.loc``
lines and debug sections).  The kernels are this project's own; the test
holds the argument layout numba gives arrays and a numpy reference for each.
Where numba's output is several PTX texts (a device function compiled on
its own, as ``debug=True`` does), they are ``NAME.VARIANT.1.ptx``,
``.2.ptx``..., which the test links with the driver's linker as numba does.
"""

from __future__ import annotations

import math
from pathlib import Path

from numba import cuda, float32, float64, int32, uint32

HERE = Path(__file__).resolve().parent
BLOCK = 128


def saxpy(a, x, y, out):  # type: ignore[no-untyped-def]
    i = cuda.grid(1)
    if i < x.size:
        out[i] = a * x[i] + y[i]


def block_sums(x, sums):  # type: ignore[no-untyped-def]
    buf = cuda.shared.array(BLOCK, float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    buf[t] = x[i] if i < x.size else float32(0)
    cuda.syncthreads()
    step = BLOCK // 2
    while step > 0:
        if t < step:
            buf[t] += buf[t + step]
        cuda.syncthreads()
        step //= 2
    if t == 0:
        sums[cuda.blockIdx.x] = buf[0]


def collatz(start, steps):  # type: ignore[no-untyped-def]
    i = cuda.grid(1)
    if i < start.size:
        v = start[i]
        n = 0
        while v > 1:
            v = 3 * v + 1 if v & 1 else v // 2
            n += 1
        steps[i] = n


def transcendental(x, out):  # type: ignore[no-untyped-def]
    i = cuda.grid(1)
    if i < x.size:
        out[i] = math.sqrt(x[i]) + math.exp(-x[i]) * math.sin(x[i]) - math.log1p(x[i])


@cuda.jit(device=True)
def bucket(v, nbins):  # type: ignore[no-untyped-def]
    return min(int32(v * nbins), nbins - 1)


def histogram(x, bins):  # type: ignore[no-untyped-def]
    i = cuda.grid(1)
    if i < x.size:
        cuda.atomic.add(bins, bucket(x[i], bins.size), 1)


def matmul(a, b, c):  # type: ignore[no-untyped-def]
    row, col = cuda.grid(2)
    if row < c.shape[0] and col < c.shape[1]:
        acc = float32(0)
        for k in range(a.shape[1]):
            acc += a[row, k] * b[k, col]
        c[row, col] = acc


KERNELS = {
    "saxpy": (saxpy, (float32, float32[::1], float32[::1], float32[::1])),
    "block_sums": (block_sums, (float32[::1], float32[::1])),
    "collatz": (collatz, (uint32[::1], int32[::1])),
    "transcendental": (transcendental, (float64[::1], float64[::1])),
    "histogram": (histogram, (float32[::1], int32[::1])),
    "matmul": (matmul, (float32[:, ::1], float32[:, ::1], float32[:, ::1])),
}
VARIANTS = {
    "O3": {},
    "lineinfo": {"lineinfo": True},
    "debug": {"debug": True, "opt": False},
}


def main() -> None:
    for old in HERE.glob("*.ptx"):
        old.unlink()
    written = 0
    for name, (fn, sig) in KERNELS.items():
        for variant, options in VARIANTS.items():
            texts, _ = cuda.compile_all(
                fn, sig, device=False, cc=(8, 0), output="ptx", abi="numba", **options
            )
            parts = [""] if len(texts) == 1 else [f".{i}" for i in range(1, len(texts) + 1)]
            for part, text in zip(parts, texts, strict=True):
                (HERE / f"{name}.{variant}{part}.ptx").write_text(text)
                written += 1
    print(f"wrote {written} PTX files to {HERE}")


if __name__ == "__main__":
    main()
