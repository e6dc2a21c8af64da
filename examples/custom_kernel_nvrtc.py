"""Custom kernel: compile your own CUDA C with NVRTC and launch it three ways.

``block_stats`` sums n ints, finds their maximum and counts a 16-bin
histogram of their low four bits in one pass.  It uses what real kernels use:
static and dynamic (``extern __shared__``) shared memory, ``__syncthreads``,
warp shuffles, and atomics on shared and global memory in 32 and 64 bits.
NVRTC (through cuda.core's ``Program``) compiles it to PTX at run time, and
the same PTX then runs on the same device memory three ways:

1. aruntime: ``gpu.load_module`` and ``gpu.launch``, awaited;
2. NVIDIA's cuda-bindings: ``cuModuleLoadData`` and ``cuLaunchKernel`` on
   aruntime's stream (its ``__cuda_stream__`` handle), awaited through aruntime;
3. cuda.core: ``ObjectCode.from_ptx`` and ``launch`` on a cuda.core stream
   that wraps aruntime's.

Each result is checked against numpy.  It needs a CUDA backend: a GPU
(``cuda``) or aruntime's software driver (``cuda-sim``, which executes the
PTX), and ``pip install cuda-core nvidia-cuda-nvrtc`` (aruntime's test extra).

    python examples/custom_kernel_nvrtc.py [--backend cuda|cuda-sim] [--trio]
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import os
import sys
from typing import Any

import anyio
import numpy as np

import aruntime as ar

SOURCE = r"""
extern "C" __global__ void block_stats(const int *x, unsigned n, unsigned long long *sum,
                                       int *maximum, unsigned *histogram)
{
    extern __shared__ int warp_sums[]; /* one per warp, sized at launch */
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
"""
BLOCK = 256
SHARED = BLOCK // 32 * 4  # warp_sums: one int per warp
# The results, in one 80-byte buffer: int64 sum, int32 maximum, pad, 16 uint32 bins.
RESULT_WORDS = 20


def compile_ptx(arch: str) -> bytes:
    """NVRTC, through cuda.core: CUDA C to PTX for this device's architecture."""
    from cuda.core import Program, ProgramOptions

    program = Program(SOURCE, code_type="c++", options=ProgramOptions(arch=f"sm_{arch}"))
    try:
        return bytes(program.compile("ptx").code)
    finally:
        program.close()


def initial_results() -> np.ndarray:
    words = np.zeros(RESULT_WORDS, dtype=np.int32)
    words[2] = np.iinfo(np.int32).min  # the maximum starts below every value
    return words


def unpack(words: np.ndarray) -> tuple[int, int, np.ndarray]:
    return int(words[:2].view(np.int64)[0]), int(words[2]), words[4:].view(np.uint32)


def expected(x: np.ndarray) -> tuple[int, int, np.ndarray]:
    bins = np.bincount(x & 15, minlength=16).astype(np.uint32)
    return int(x.sum(dtype=np.int64)), int(x.max()), bins


def launch_with_cuda_bindings(ptx: bytes, stream_handle: int, grid: int, args: list[int]) -> Any:
    """The same launch through cuda-bindings; returns the module to unload later."""
    from cuda.bindings import driver

    def check(result: tuple[Any, ...]) -> Any:
        if result[0] != driver.CUresult.CUDA_SUCCESS:
            raise RuntimeError(f"cuda-bindings: {result[0]!r}")
        return result[1] if len(result) > 1 else None

    module = check(driver.cuModuleLoadData(ptx))
    function = check(driver.cuModuleGetFunction(module, b"block_stats"))
    types = (ctypes.c_void_p, ctypes.c_uint, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
    stream = driver.CUstream(stream_handle)
    check(
        driver.cuLaunchKernel(
            function, grid, 1, 1, BLOCK, 1, 1, SHARED, stream, (tuple(args), types), 0
        )
    )
    return module


async def main(backend: str, n: int = 1_000_003) -> None:
    x = np.random.default_rng(7).integers(-1000, 1001, n, dtype=np.int32)
    grid = (n + BLOCK - 1) // BLOCK
    want = expected(x)
    async with ar.open_backend(backend) as gpu, contextlib.AsyncExitStack() as stack:
        if not gpu.name.startswith("cuda"):
            raise SystemExit(f"{gpu.name}: this example needs a CUDA backend (cuda or cuda-sim)")
        # cuda.core and cuda-bindings load libcuda.so.1 on first use: after
        # open_backend, so that on cuda-sim they find the sim aruntime loaded.
        from cuda.core import Buffer, Device, LaunchConfig, ObjectCode, launch

        device = Device(0)
        device.set_current()  # the primary context, which aruntime uses too
        ptx = compile_ptx(device.arch)

        stream = stack.enter_context(gpu.create_stream())
        data = gpu.alloc(x.nbytes)
        stack.callback(gpu.free, data)
        results = gpu.alloc(RESULT_WORDS * 4)
        stack.callback(gpu.free, results)
        gpu.copy_h2d_async(x, data, stream=stream)
        total, top, bins = results, results.offset(8), results.offset(16)

        async def run(launch_it: Any) -> tuple[int, int, np.ndarray]:
            gpu.copy_h2d_async(initial_results(), results, stream=stream)
            launch_it()
            words = np.empty(RESULT_WORDS, dtype=np.int32)
            return unpack(await gpu.copy_d2h_async(results, words, stream=stream))

        got = {}
        kernel = gpu.kernel(gpu.load_module("block_stats", ptx), "block_stats")
        args = [data, np.uint32(n), total, top, bins]
        got["aruntime"] = await run(
            lambda: gpu.launch(kernel, grid, BLOCK, args, shared_mem=SHARED, stream=stream)
        )

        handle = stream.__cuda_stream__()[1]
        addresses = [int(data), n, int(total), int(top), int(bins)]
        modules: list[Any] = []
        got["cuda-bindings"] = await run(
            lambda: modules.append(launch_with_cuda_bindings(ptx, handle, grid, addresses))
        )
        from cuda.bindings import driver

        stack.callback(driver.cuModuleUnload, modules[0])

        core_stream = device.create_stream(stream)  # wraps aruntime's stream
        stack.callback(core_stream.close)
        core_kernel = ObjectCode.from_ptx(ptx).get_kernel("block_stats")
        config = LaunchConfig(grid=grid, block=BLOCK, shmem_size=SHARED)
        buffers = [Buffer.from_handle(int(p), p.nbytes) for p in (data, total, top, bins)]
        core_args = [buffers[0], np.uint32(n), *buffers[1:]]
        got["cuda.core"] = await run(lambda: launch(core_stream, config, core_kernel, *core_args))

        for how, (got_sum, got_max, got_bins) in got.items():
            assert got_sum == want[0], (how, got_sum, want[0])
            assert got_max == want[1], (how, got_max, want[1])
            np.testing.assert_array_equal(got_bins, want[2], err_msg=how)
        print(
            f"{gpu.name} ({gpu.device.name}): block_stats over {n} ints via "
            f"{', '.join(got)}: sum {want[0]}, max {want[1]}, histogram checked"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default=os.environ.get("ARUNTIME_BACKEND", "cuda-sim"))
    parser.add_argument("--trio", action="store_true")
    options = parser.parse_args(sys.argv[1:])
    loop = "trio" if options.trio else os.environ.get("ARUNTIME_LOOP", "asyncio")
    anyio.run(main, options.backend, backend=loop)
