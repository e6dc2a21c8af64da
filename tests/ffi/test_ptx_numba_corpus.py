"""The numba-cuda part of the differential PTX corpus: kernels numba compiles
(tests/ffi/ptx/numba, made by generate.py there) run on cuda-sim through
aruntime, each against a numpy reference.

numba passes each array as its meminfo and parent pointers, its item count
and item size, its data pointer, then its shape and strides (in bytes);
scalars as themselves.  Every kernel comes three ways: numba's default
optimisation, ``lineinfo=True`` and ``debug=True, opt=False``, whose
``.loc`` lines and debug sections must change nothing (issue 19: a ``.loc``
once made the parser drop an instruction and the kernel return zeros).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _cudasim_support import Cuda
from test_cuda_sim_link import Linker

import aruntime as ar

CORPUS = Path(__file__).resolve().parent / "ptx" / "numba"
VARIANTS = ("O3", "lineinfo", "debug")
N = 1000
BLOCK = 128  # generate.py's block size: block_sums' shared array holds one block


def _entry(ptx: str) -> str:
    """The kernel's mangled name: numba writes one entry per module."""
    (line,) = [ln for ln in ptx.splitlines() if ln.startswith(".visible .entry ")]
    return line.split()[2].split("(")[0]


def _image(cu: Cuda, name: str, variant: str) -> tuple[bytes, str]:
    """The module image and the kernel's name; parts are linked as numba links them."""
    whole = CORPUS / f"{name}.{variant}.ptx"
    if whole.exists():
        text = whole.read_text()
        return text.encode() + b"\0", _entry(text)
    parts = sorted(CORPUS.glob(f"{name}.{variant}.*.ptx"))
    assert len(parts) > 1, f"no PTX for {name}.{variant} in {CORPUS}"
    lk = Linker()
    state, _, _ = lk.create()
    for part in parts:
        assert lk.add(state, part.read_bytes() + b"\0", part.name.encode()) == 0, part
    image = lk.complete(state)
    lk.lib.cuLinkDestroy(state)
    return image, _entry(parts[0].read_text())


class Arrays:
    """Device copies of host arrays, as numba's kernel arguments."""

    def __init__(self, gpu: ar.Backend) -> None:
        self.gpu = gpu
        self.held: list[tuple[ar.DevicePtr, np.ndarray[Any, Any]]] = []

    def arg(self, host: np.ndarray[Any, Any]) -> list[Any]:
        ptr = self.gpu.alloc(max(host.nbytes, 1))
        self.gpu.copy_h2d(np.ascontiguousarray(host), ptr)
        self.held.append((ptr, host))
        return [
            np.uint64(0),  # meminfo
            np.uint64(0),  # parent
            np.int64(host.size),
            np.int64(host.itemsize),
            ptr,
            *(np.int64(d) for d in host.shape),
            *(np.int64(s) for s in host.strides),
        ]

    def result(self, index: int) -> np.ndarray[Any, Any]:
        ptr, host = self.held[index]
        return self.gpu.copy_d2h(ptr, np.empty_like(host))

    def free(self) -> None:
        for ptr, _ in self.held:
            self.gpu.free(ptr)


@pytest.fixture
def gpu(cu: Cuda) -> Iterator[ar.Backend]:  # cu: a context for the linker
    with ar.open_backend("cuda-sim") as backend:
        yield backend


def _run(
    gpu: ar.Backend,
    cu: Cuda,
    name: str,
    variant: str,
    grid: int | tuple[int, int],
    block: int | tuple[int, int],
    args: Callable[[Arrays], list[Any]],
    out: int,
) -> np.ndarray[Any, Any]:
    image, entry = _image(cu, name, variant)
    module = gpu.load_module(f"numba-{name}-{variant}", image)
    arrays = Arrays(gpu)
    try:
        gpu.launch(gpu.kernel(module, entry), grid, block, args(arrays)).wait()
        return arrays.result(out)
    finally:
        arrays.free()


RNG = np.random.default_rng(19)
X32 = RNG.random(N, dtype=np.float32)
Y32 = RNG.random(N, dtype=np.float32)
GRID = (N + BLOCK - 1) // BLOCK


@pytest.mark.parametrize("variant", VARIANTS)
def test_saxpy(gpu: ar.Backend, cu: Cuda, variant: str) -> None:
    def args(a: Arrays) -> list[Any]:
        return [np.float32(2.5), *a.arg(X32), *a.arg(Y32), *a.arg(np.zeros(N, np.float32))]

    out = _run(gpu, cu, "saxpy", variant, GRID, BLOCK, args, 2)
    if "fma.rn.f32" in (CORPUS / f"saxpy.{variant}.ptx").read_text():
        # Contracted to one rounding: the float64 product of two float32s is
        # exact, so only the sum rounds (twice, which these inputs survive).
        expected = (2.5 * X32.astype(np.float64) + Y32).astype(np.float32)
    else:
        expected = np.float32(2.5) * X32 + Y32
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("variant", VARIANTS)
def test_block_sums(gpu: ar.Backend, cu: Cuda, variant: str) -> None:
    def args(a: Arrays) -> list[Any]:
        return [*a.arg(X32), *a.arg(np.zeros(GRID, np.float32))]

    out = _run(gpu, cu, "block_sums", variant, GRID, BLOCK, args, 1)
    padded = np.zeros(GRID * BLOCK, np.float32)
    padded[:N] = X32
    # The tree reduction's order, in float32, as the kernel adds.
    tree = padded.reshape(GRID, BLOCK)
    step = BLOCK // 2
    while step:
        tree = tree[:, :step] + tree[:, step : 2 * step]
        step //= 2
    np.testing.assert_array_equal(out, tree[:, 0])


@pytest.mark.parametrize("variant", VARIANTS)
def test_collatz(gpu: ar.Backend, cu: Cuda, variant: str) -> None:
    start = np.arange(1, N + 1, dtype=np.uint32)

    def args(a: Arrays) -> list[Any]:
        return [*a.arg(start), *a.arg(np.full(N, -1, np.int32))]

    def steps(v: int) -> int:
        n = 0
        while v > 1:
            v = 3 * v + 1 if v & 1 else v // 2
            n += 1
        return n

    out = _run(gpu, cu, "collatz", variant, GRID, BLOCK, args, 1)
    assert out.tolist() == [steps(int(v)) for v in start]


@pytest.mark.parametrize("variant", VARIANTS)
def test_transcendental(gpu: ar.Backend, cu: Cuda, variant: str) -> None:
    x = RNG.random(N) * 20

    def args(a: Arrays) -> list[Any]:
        return [*a.arg(x), *a.arg(np.zeros(N))]

    out = _run(gpu, cu, "transcendental", variant, GRID, BLOCK, args, 1)
    # libdevice is within a few ulp of the C library: a dropped or wrong
    # instruction is not.
    expected = np.sqrt(x) + np.exp(-x) * np.sin(x) - np.log1p(x)
    np.testing.assert_allclose(out, expected, rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("variant", VARIANTS)
def test_histogram(gpu: ar.Backend, cu: Cuda, variant: str) -> None:
    nbins = 16

    def args(a: Arrays) -> list[Any]:
        return [*a.arg(X32), *a.arg(np.zeros(nbins, np.int32))]

    out = _run(gpu, cu, "histogram", variant, GRID, BLOCK, args, 1)
    expected = np.bincount(np.minimum((X32 * nbins).astype(np.int32), nbins - 1), minlength=nbins)
    assert out.tolist() == expected.tolist()


@pytest.mark.parametrize("variant", VARIANTS)
def test_matmul(gpu: ar.Backend, cu: Cuda, variant: str) -> None:
    a_host = RNG.random((33, 17), dtype=np.float32)
    b_host = RNG.random((17, 21), dtype=np.float32)

    def args(a: Arrays) -> list[Any]:
        return [*a.arg(a_host), *a.arg(b_host), *a.arg(np.zeros((33, 21), np.float32))]

    out = _run(gpu, cu, "matmul", variant, (5, 3), (8, 8), args, 2)
    expected = np.zeros((33, 21), np.float32)
    for k in range(17):  # the kernel's order of float32 additions
        expected += a_host[:, k : k + 1] * b_host[k : k + 1, :]
    np.testing.assert_allclose(out, expected, rtol=2e-6)
