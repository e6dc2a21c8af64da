"""A kernel compiled by NVRTC 13 (pip nvidia-cuda-nvrtc) runs on cuda-sim's
PTX executor: shared memory, a barrier, warp shuffles and a float atomic,
checked against numpy.  NVRTC runs in a child process, so this test does not
depend on how libnvrtc and the sim share a process (test_cuda_sim_export.py
covers that)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from _cudasim_support import Cuda, ffi
from test_ptx_exec import load_ex

SOURCE = r"""
extern "C" __global__ void block_sums(const float *x, float *out, int *count, int n)
{
    __shared__ float warp_sums[32];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = i < n ? x[i] : 0.0f;
    for (int off = 16; off > 0; off >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, off);
    if ((threadIdx.x & 31) == 0)
        warp_sums[threadIdx.x / 32] = v;
    __syncthreads();
    if (threadIdx.x == 0) {
        float s = 0.0f;
        for (int w = 0; w < blockDim.x / 32; w++)
            s += warp_sums[w];
        atomicAdd(out, s);
        atomicAdd(count, 1);
    }
}
"""

COMPILE = """
import sys
from cuda.bindings import nvrtc
src = sys.stdin.buffer.read()
err, prog = nvrtc.nvrtcCreateProgram(src, b"k.cu", 0, [], [])
opts = [b"--gpu-architecture=compute_80"]
(err,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
    sys.exit(f"nvrtc: {err}")
err, size = nvrtc.nvrtcGetPTXSize(prog)
buf = b" " * size
nvrtc.nvrtcGetPTX(prog, buf)
sys.stdout.buffer.write(buf.rstrip(b"\\0"))
"""


def _nvrtc_ptx() -> bytes:
    pytest.importorskip("cuda.bindings.nvrtc", reason="pip install cuda-bindings")
    proc = subprocess.run(
        [sys.executable, "-c", COMPILE], input=SOURCE.encode(), capture_output=True, timeout=120
    )
    if proc.returncode != 0:
        pytest.skip(f"NVRTC is not usable here: {proc.stderr.decode()[-300:]}")
    return proc.stdout


def test_nvrtc_kernel_with_shared_memory_barrier_shuffles_atomics(cu: Cuda) -> None:
    ptx = _nvrtc_ptx()
    assert b".version" in ptx
    rc, mod, log = load_ex(cu, ptx)
    assert rc == 0, log
    fn = ffi.new("CUfunction *")
    cu.check(cu.lib.cuModuleGetFunction(fn, mod, b"block_sums"))
    n = 5000
    x = np.random.default_rng(8).integers(-50, 50, n).astype(np.float32)  # exact sums
    dx, dout, dcount = cu.alloc(x.nbytes), cu.alloc(4), cu.alloc(4)
    cu.check(cu.lib.cuMemcpyHtoD_v2(dx, ffi.cast("void *", x.ctypes.data), x.nbytes))
    cu.check(cu.lib.cuMemsetD8_v2(dout, 0, 4))
    cu.check(cu.lib.cuMemsetD8_v2(dcount, 0, 4))
    keep = [
        ffi.new("unsigned long long *", dx),
        ffi.new("unsigned long long *", dout),
        ffi.new("unsigned long long *", dcount),
        ffi.new("int *", n),
    ]
    argv = ffi.new("void *[]", [ffi.cast("void *", k) for k in keep])
    blocks = (n + 255) // 256
    cu.check(cu.lib.cuLaunchKernel(fn[0], blocks, 1, 1, 256, 1, 1, 0, ffi.NULL, argv, ffi.NULL))
    out, count = np.zeros(1, np.float32), np.zeros(1, np.int32)
    cu.check(cu.lib.cuMemcpyDtoH_v2(ffi.cast("void *", out.ctypes.data), dout, 4))
    cu.check(cu.lib.cuMemcpyDtoH_v2(ffi.cast("void *", count.ctypes.data), dcount, 4))
    assert out[0] == x.sum() and count[0] == blocks
    cu.check(cu.lib.cuModuleUnload(mod))
