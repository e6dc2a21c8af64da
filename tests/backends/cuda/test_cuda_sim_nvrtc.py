"""A user's own kernel, compiled by NVRTC or by nvcc to PTX, runs on cuda-sim.

The kernels use what real kernels use (static and dynamic shared memory,
``__syncthreads``, warp shuffles, atomics on shared and global memory, 2-D
grids and blocks) and every result is compared with numpy's.  They run
through aruntime's ``load_module`` here, and through cuda-bindings and
cuda.core beside aruntime in a subprocess (cuda.core keeps the primary
context retained for the life of its process, which this suite's
context-teardown tests must not inherit).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import aruntime as ar

ROOT = Path(__file__).resolve().parents[3]
NVCC = shutil.which("nvcc") or (
    "/usr/local/cuda/bin/nvcc" if Path("/usr/local/cuda/bin/nvcc").exists() else None
)

pytestmark = pytest.mark.skipif(
    not (ROOT / "ffi" / "cuda" / "sim").is_dir(), reason="no software CUDA driver in this checkout"
)

STATS = r"""
extern "C" __global__ void block_stats(const int *x, unsigned n, unsigned long long *sum,
                                       int *maximum, unsigned *histogram)
{
    extern __shared__ int warp_sums[];
    __shared__ unsigned bins[16];
    unsigned tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    if (tid < 16)
        bins[tid] = 0;
    __syncthreads();
    unsigned i = blockIdx.x * blockDim.x + tid;
    int value = i < n ? x[i] : 0;
    int top = i < n ? value : -2147483647 - 1;
    if (i < n)
        atomicAdd(&bins[value & 15], 1u);
    for (int offset = 16; offset > 0; offset /= 2) {
        value += __shfl_down_sync(0xffffffffu, value, offset);
        top = max(top, __shfl_down_sync(0xffffffffu, top, offset));
    }
    if (lane == 0) {
        warp_sums[warp] = value;
        atomicMax(maximum, top);
    }
    __syncthreads();
    if (warp == 0) {
        int total = lane < blockDim.x / 32 ? warp_sums[lane] : 0;
        for (int offset = 16; offset > 0; offset /= 2)
            total += __shfl_xor_sync(0xffffffffu, total, offset);
        if (lane == 0)
            atomicAdd(sum, (unsigned long long)(long long)total);
    }
    if (tid < 16 && bins[tid])
        atomicAdd(&histogram[tid], bins[tid]);
}

/* A 2-D grid of 2-D blocks: each block transposes a 16x16 tile through
 * shared memory (padded a column against bank conflicts) and counts, with a
 * float atomic, the sum of what it moved. */
extern "C" __global__ void transpose(const float *in, float *out, unsigned rows, unsigned cols,
                                     float *moved)
{
    __shared__ float tile[16][17];
    unsigned x = blockIdx.x * 16 + threadIdx.x, y = blockIdx.y * 16 + threadIdx.y;
    float v = (x < cols && y < rows) ? in[y * cols + x] : 0.0f;
    tile[threadIdx.y][threadIdx.x] = v;
    __syncthreads();
    unsigned tx = blockIdx.y * 16 + threadIdx.x, ty = blockIdx.x * 16 + threadIdx.y;
    if (tx < rows && ty < cols)
        out[ty * rows + tx] = tile[threadIdx.x][threadIdx.y];
    atomicAdd(moved, v);
}
"""
BLOCK = 256
SHARED = BLOCK // 32 * 4


def nvrtc_ptx(source: str = STATS, arch: str = "sm_80") -> bytes:
    nvrtc = pytest.importorskip("cuda.bindings.nvrtc", reason="pip install cuda-bindings")
    try:
        err, prog = nvrtc.nvrtcCreateProgram(source.encode(), b"user.cu", 0, [], [])
    except Exception as error:  # the binding raises when libnvrtc is missing
        pytest.skip(f"libnvrtc is not installed (pip install nvidia-cuda-nvrtc): {error}")
    assert err == nvrtc.nvrtcResult.NVRTC_SUCCESS
    try:
        (status,) = nvrtc.nvrtcCompileProgram(prog, 1, [f"-arch={arch}".encode()])
        _, size = nvrtc.nvrtcGetProgramLogSize(prog)
        log = bytearray(size)
        nvrtc.nvrtcGetProgramLog(prog, log)
        assert status == nvrtc.nvrtcResult.NVRTC_SUCCESS, log.decode(errors="replace")
        _, size = nvrtc.nvrtcGetPTXSize(prog)
        ptx = bytearray(size)
        nvrtc.nvrtcGetPTX(prog, ptx)
        return bytes(ptx)
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


def nvcc_ptx(tmp_path: Path, source: str = STATS) -> bytes:
    if NVCC is None:
        pytest.skip("no nvcc here (the CUDA toolkit writes PTX with it)")
    src = tmp_path / "user.cu"
    src.write_text(source)
    out = tmp_path / "user.ptx"
    subprocess.run([NVCC, "-ptx", "-arch=sm_80", str(src), "-o", str(out)], check=True)
    return out.read_bytes() + b"\0"


COMPILERS: dict[str, Callable[[Path], bytes]] = {
    "nvrtc": lambda _tmp: nvrtc_ptx(),
    "nvcc": nvcc_ptx,
}


def stats_expected(x: np.ndarray) -> tuple[int, int, list[int]]:
    bins = np.bincount(x & 15, minlength=16)
    return int(x.sum(dtype=np.int64)), int(x.max()), [int(b) for b in bins]


def stats_initial() -> np.ndarray:
    words = np.zeros(20, dtype=np.int32)  # int64 sum, int32 max, pad, 16 bins
    words[2] = np.iinfo(np.int32).min
    return words


def stats_unpack(words: np.ndarray) -> tuple[int, int, list[int]]:
    bins = words[4:].view(np.uint32)
    return int(words[:2].view(np.int64)[0]), int(words[2]), [int(b) for b in bins]


@pytest.mark.anyio
@pytest.mark.parametrize(
    "compiler",
    # nvcc's compile takes seconds: the default run keeps NVRTC's, CI's slow step runs both.
    [pytest.param(c, marks=pytest.mark.slow) if c == "nvcc" else c for c in sorted(COMPILERS)],
)
async def test_user_kernel_through_load_module(compiler: str, tmp_path: Path) -> None:
    ptx = COMPILERS[compiler](tmp_path)
    n = 100_003  # not a whole number of blocks
    x = np.random.default_rng(3).integers(-1000, 1001, n, dtype=np.int32)
    async with ar.open_backend("cuda-sim") as gpu:
        kernel = gpu.kernel(gpu.load_module("user", ptx), "block_stats")
        with gpu.create_stream() as stream:
            data, out = gpu.alloc(x.nbytes), gpu.alloc(80)
            gpu.copy_h2d_async(x, data, stream=stream)
            gpu.copy_h2d_async(stats_initial(), out, stream=stream)
            args = [data, np.uint32(n), out, out.offset(8), out.offset(16)]
            grid = (n + BLOCK - 1) // BLOCK
            gpu.launch(kernel, grid, BLOCK, args, shared_mem=SHARED, stream=stream)
            words = await gpu.copy_d2h_async(out, np.empty(20, np.int32), stream=stream)
            gpu.free(data), gpu.free(out)
    assert stats_unpack(words) == stats_expected(x)


@pytest.mark.anyio
async def test_two_dimensional_grid_and_float_atomics(tmp_path: Path) -> None:
    ptx = nvrtc_ptx()
    rows, cols = 45, 70  # partial tiles on both edges
    a = np.random.default_rng(5).standard_normal((rows, cols)).astype(np.float32)
    async with ar.open_backend("cuda-sim") as gpu:
        kernel = gpu.kernel(gpu.load_module("user", ptx), "transpose")
        with gpu.create_stream() as stream:
            src, dst, moved = gpu.alloc(a.nbytes), gpu.alloc(a.nbytes), gpu.alloc(4)
            gpu.copy_h2d_async(a, src, stream=stream)
            gpu.memset_async(moved, 0, 4, stream=stream)
            args = [src, dst, np.uint32(rows), np.uint32(cols), moved]
            grid = ((cols + 15) // 16, (rows + 15) // 16)
            gpu.launch(kernel, grid, (16, 16), args, stream=stream)
            out = await gpu.copy_d2h_async(dst, np.empty((cols, rows), np.float32), stream=stream)
            total = await gpu.copy_d2h_async(moved, np.empty(1, np.float32), stream=stream)
            for ptr in (src, dst, moved):
                gpu.free(ptr)
    np.testing.assert_array_equal(out, a.T)
    # Float atomics add in no fixed order: compare with a bound on reordering.
    assert abs(float(total[0]) - float(a.sum(dtype=np.float64))) < 1e-3 * a.size


SCRIPT = """
import json, sys
import numpy as np
import aruntime as ar

gpu = ar.open_backend("cuda-sim")  # first: cuda-bindings then finds the sim as libcuda.so.1
from cuda.bindings import driver
from cuda.core import Buffer, Device, LaunchConfig, ObjectCode, Program, ProgramOptions, launch

def check(result):
    assert result[0] == driver.CUresult.CUDA_SUCCESS, result
    return result[1] if len(result) > 1 else None

device = Device(0)
device.set_current()
source, via = sys.argv[1], sys.argv[2]
if source == "cuda.core":  # NVRTC through cuda.core's Program
    program = Program(open(sys.argv[3]).read(), "c++", ProgramOptions(arch="sm_" + device.arch))
    ptx = bytes(program.compile("ptx").code)
    program.close()
else:
    ptx = open(sys.argv[3], "rb").read()
x = np.array(json.loads(sys.argv[4]), dtype=np.int32)
n, block, shared = x.size, 256, 32
grid = (n + block - 1) // block
words = np.zeros(20, dtype=np.int32)
words[2] = np.iinfo(np.int32).min
data, out = gpu.alloc(x.nbytes), gpu.alloc(80)
gpu.copy_h2d(x, data)
gpu.copy_h2d(words, out)
pointers = [int(data), int(out), int(out) + 8, int(out) + 16]
if via == "cuda-bindings":
    import ctypes
    gpu.bind_to_thread()
    module = check(driver.cuModuleLoadData(ptx))
    function = check(driver.cuModuleGetFunction(module, b"block_stats"))
    values = (pointers[0], n, *pointers[1:])
    types = (ctypes.c_void_p, ctypes.c_uint, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
    check(driver.cuLaunchKernel(function, grid, 1, 1, block, 1, 1, shared, driver.CUstream(0),
                                (values, types), 0))
    check(driver.cuCtxSynchronize())
    check(driver.cuModuleUnload(module))
else:
    stream = device.create_stream()
    kernel = ObjectCode.from_ptx(ptx).get_kernel("block_stats")
    buffers = [Buffer.from_handle(p, 4) for p in pointers]
    config = LaunchConfig(grid=grid, block=block, shmem_size=shared)
    launch(stream, config, kernel, buffers[0], np.uint32(n), *buffers[1:])
    stream.sync()
    stream.close()
gpu.copy_d2h(out, words)
gpu.free(data), gpu.free(out)
gpu.close()
print(json.dumps([int(words[:2].view(np.int64)[0]), int(words[2]),
                  [int(b) for b in words[4:].view(np.uint32)]]))
"""


def _run(source: str, via: str, path: Path, x: np.ndarray) -> tuple[int, int, list[int]]:
    pytest.importorskip("cuda.core", reason="pip install cuda-core")
    # -W error: a warning (cuda.core's "driver older than NVRTC" among them)
    # fails the run.
    argv = [sys.executable, "-W", "error", "-c", textwrap.dedent(SCRIPT), source, via]
    proc = subprocess.run(
        [*argv, str(path), json.dumps(x.tolist())],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        cwd=ROOT,
        timeout=120,
    )
    assert proc.returncode == 0, f"rc={proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    total, top, bins = json.loads(proc.stdout.splitlines()[-1])
    return total, top, bins


@pytest.mark.parametrize("via", ["cuda-bindings", "cuda.core"])
@pytest.mark.parametrize("compiler", ["nvrtc", "nvcc", "cuda.core"])
def test_user_kernel_through_nvidias_bindings(via: str, compiler: str, tmp_path: Path) -> None:
    x = np.random.default_rng(11).integers(-1000, 1001, 5_000, dtype=np.int32)
    if compiler == "cuda.core":
        path = tmp_path / "user.cu"
        path.write_text(STATS)
    else:
        path = tmp_path / "user.ptx"
        path.write_bytes(COMPILERS[compiler](tmp_path))
    assert _run(compiler if compiler == "cuda.core" else "file", via, path, x) == stats_expected(x)


CORE_PATH = """
import sys
import numpy as np
import aruntime as ar

gpu = ar.open_backend("cuda-sim")  # first: cuda-bindings then finds the sim as libcuda.so.1
from cuda.bindings import driver
from cuda.core import Device, LaunchConfig, ObjectCode, Program, ProgramOptions, launch

device = Device(0)
device.set_current()
# NVRTC through cuda.core, with no warning that the driver is older than NVRTC.
program = Program('extern "C" __global__ void k(int *p) { *p = 1; }', "c++",
                  ProgramOptions(arch="sm_" + device.arch))
assert b".entry k" in bytes(program.compile("ptx").code)
program.close()
# ObjectCode -> Kernel -> launch (cuLibraryLoadData, cuLibraryGetKernel,
# cuKernelGetAttribute, cuKernelGetParamInfo, the occupancy calculator,
# cuLaunchKernelEx) on the project's own PTX, in memory from cuda.core's
# default memory resource.
kernel = ObjectCode.from_ptx(open(sys.argv[1], "rb").read()).get_kernel("scale_f32")
assert kernel.num_arguments == 3
assert kernel.attributes.max_threads_per_block == 1024
assert kernel.occupancy.max_active_blocks_per_multiprocessor(256, 0) == 8
stream = device.create_stream()
host = np.arange(1000, dtype=np.float32)
buffer = device.allocate(host.nbytes, stream=stream)
stream.sync()
assert driver.cuMemcpyHtoD(int(buffer.handle), host.ctypes.data, host.nbytes)[0] == 0
launch(stream, LaunchConfig(grid=4, block=256), kernel, np.uint32(1000), np.float32(3), buffer)
stream.sync()
out = np.empty_like(host)
assert driver.cuMemcpyDtoH(out.ctypes.data, int(buffer.handle), out.nbytes)[0] == 0
assert np.array_equal(out, 3 * host), out[:8]
buffer.close(stream)
stream.close()
gpu.close()
print("ok")
"""


def test_cuda_core_program_object_code_and_launch() -> None:
    """cuda.core's own path over cuda-sim, on PTX the sim runs today."""
    pytest.importorskip("cuda.core", reason="pip install cuda-core")
    nvrtc_ptx()  # skips where libnvrtc is missing
    ptx = ROOT / "aruntime" / "kernels" / "vector_ops.ptx"
    proc = subprocess.run(
        [sys.executable, "-W", "error", "-c", textwrap.dedent(CORE_PATH), str(ptx)],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        cwd=ROOT,
        timeout=120,
    )
    assert proc.returncode == 0, f"rc={proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    assert proc.stdout.split() == ["ok"]
