"""A differential corpus: CUDA C kernels compiled by the tools users run
(nvcc -O3 / -lineinfo / -G for sm_80 and sm_90, NVRTC) and run on cuda-sim,
each against a numpy reference.  A variant cuda-sim cannot run must be
refused at load, naming what it refused; a wrong answer is never allowed."""

from __future__ import annotations

import subprocess
import sys
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _cudasim_support import CUDA_SUCCESS, Cuda
from test_ptx_exec import NVCC, Kernels, load_ex
from test_ptx_nvrtc import COMPILE

CUDA_ERROR_INVALID_PTX = 218
P = "unsigned long long"
N = 300

SOURCE = r"""
extern "C" __global__ void saxpy(int n, float a, const float *__restrict__ x, float *y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = a * x[i] + y[i];
}

extern "C" __global__ void collatz(const unsigned *in, unsigned *steps, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    unsigned v = in[i], s = 0;
    while (v > 1) {
        v = (v & 1) ? 3 * v + 1 : v / 2;
        s++;
    }
    steps[i] = s;
}

extern "C" __global__ void block_sum(const int *x, int *out, int n)
{
    __shared__ int part[128];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    part[threadIdx.x] = i < n ? x[i] : 0;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w /= 2) {
        if (threadIdx.x < w)
            part[threadIdx.x] += part[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        atomicAdd(out, part[0]);
}

__device__ __noinline__ double poly(double x, double c) { return __fma_rn(x, x, c); }

extern "C" __global__ void call_poly(const double *x, double *y, double c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = poly(x[i], c);
}

extern "C" __global__ void histogram(const unsigned char *x, unsigned *bins, unsigned *top, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        atomicAdd(&bins[x[i] & 15], 1u);
        atomicMax(top, (unsigned)x[i]);
    }
}

extern "C" __global__ void mixed(long long *out, long long base, short step, unsigned char k, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = base + (long long)step * i + (i % (k + 1));
}
"""

# On one xdist worker: the corpus fixture compiles every variant once a worker.
pytestmark = pytest.mark.xdist_group("ptx_corpus")

NVCC_VARIANTS = [(arch, flag) for arch in ("sm_80", "sm_90") for flag in ("-O3", "-lineinfo", "-G")]


def _nvcc(tmp: Path, arch: str, flag: str) -> bytes:
    if not NVCC.exists():
        pytest.skip(f"{NVCC} is not installed")
    src = tmp / "corpus.cu"
    src.write_text(SOURCE)
    out = tmp / f"corpus{arch}{flag}.ptx"
    cmd = [str(NVCC), "-ptx", f"-arch={arch}", flag, str(src), "-o", str(out)]
    subprocess.run(cmd, check=True, capture_output=True, timeout=300)
    return out.read_bytes()


def _nvrtc() -> bytes:
    pytest.importorskip("cuda.bindings.nvrtc", reason="pip install cuda-bindings")
    proc = subprocess.run(
        [sys.executable, "-c", COMPILE], input=SOURCE.encode(), capture_output=True, timeout=300
    )
    if proc.returncode != 0:
        pytest.skip(f"NVRTC is not usable here: {proc.stderr.decode()[-300:]}")
    return proc.stdout


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """Every variant compiled once per session; a missing tool is a skip later."""
    out: dict[str, bytes] = {}
    tmp = tmp_path_factory.mktemp("corpus")
    for arch, flag in NVCC_VARIANTS:
        if NVCC.exists():
            out[f"nvcc{arch}{flag}"] = _nvcc(tmp, arch, flag)
    return out


def _variant(corpus: dict[str, bytes], name: str) -> bytes:
    if name == "nvrtc":
        return _nvrtc()
    if name not in corpus:
        pytest.skip(f"{NVCC} is not installed")
    return corpus[name]


class Text(Kernels):
    def __init__(self, cu: Cuda, mod: Any) -> None:
        self.cu = cu
        self.mod = mod
        self.buffers: dict[int, np.ndarray] = {}


def _check_all(k: Text) -> None:
    rng = np.random.default_rng(7)
    grid, block = ((N + 127) // 128, 1, 1), (128, 1, 1)
    x = rng.standard_normal(N).astype(np.float32)
    y = rng.standard_normal(N).astype(np.float32)
    dx, dy = k.dev(x), k.dev(y)
    k.run("saxpy", grid, block, [("int", N), ("float", 2.5), (P, dx), (P, dy)])
    np.testing.assert_allclose(k.get(dy), np.float32(2.5) * x + y, rtol=1e-6)

    v = rng.integers(1, 1000, N).astype(np.uint32)
    dv, ds = k.dev(v), k.dev(np.zeros(N, np.uint32))
    k.run("collatz", grid, block, [(P, dv), (P, ds), ("int", N)])

    def steps(a: int) -> int:
        s = 0
        while a > 1:
            a, s = (3 * a + 1 if a & 1 else a // 2), s + 1
        return s

    assert k.get(ds).tolist() == [steps(int(a)) for a in v]

    xi = rng.integers(-1000, 1000, N).astype(np.int32)
    dxi, dsum = k.dev(xi), k.dev(np.zeros(1, np.int32))
    k.run("block_sum", grid, block, [(P, dxi), (P, dsum), ("int", N)])
    assert int(k.get(dsum)[0]) == int(xi.sum())

    xd = rng.standard_normal(N)
    dxd, dyd = k.dev(xd), k.dev(np.zeros(N))
    k.run("call_poly", grid, block, [(P, dxd), (P, dyd), ("double", 0.75), ("int", N)])
    fused = [float(Fraction(float(a)) ** 2 + Fraction(0.75)) for a in xd]  # rounded once
    assert k.get(dyd).tolist() == fused

    xb = rng.integers(0, 256, N).astype(np.uint8)
    dxb, dbins, dtop = k.dev(xb), k.dev(np.zeros(16, np.uint32)), k.dev(np.zeros(1, np.uint32))
    k.run("histogram", grid, block, [(P, dxb), (P, dbins), (P, dtop), ("int", N)])
    assert k.get(dbins).tolist() == np.bincount(xb & 15, minlength=16).tolist()
    assert int(k.get(dtop)[0]) == int(xb.max())

    dout = k.dev(np.zeros(N, np.int64))
    args = [(P, dout), ("long long", -(1 << 40)), ("short", -3), ("unsigned char", 6), ("int", N)]
    k.run("mixed", grid, block, args)
    i = np.arange(N, dtype=np.int64)
    assert k.get(dout).tolist() == (-(1 << 40) - 3 * i + i % 7).tolist()


@pytest.mark.parametrize("variant", [f"nvcc{a}{f}" for a, f in NVCC_VARIANTS] + ["nvrtc"])
def test_corpus_runs_right_or_is_refused_by_name(
    cu: Cuda, corpus: dict[str, bytes], variant: str
) -> None:
    rc, mod, log = load_ex(cu, _variant(corpus, variant))
    if rc != CUDA_SUCCESS:
        # a refusal is allowed only as INVALID_PTX naming the line and construct
        assert rc == CUDA_ERROR_INVALID_PTX and log.startswith("ptx line "), (rc, log)
        pytest.xfail(f"{variant} refused: {log}")
    _check_all(Text(cu, mod))
