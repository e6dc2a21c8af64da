"""cuda-sim: devices, contexts, memory and copies."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import numpy as np
from _cudasim_support import (
    CUDA_ERROR_INVALID_CONTEXT,
    CUDA_ERROR_INVALID_HANDLE,
    CUDA_ERROR_INVALID_VALUE,
    CUDA_ERROR_NOT_INITIALIZED,
    CUDA_ERROR_OUT_OF_MEMORY,
    CUDA_SUCCESS,
    Cuda,
    ffi,
    sim_library_path,
)


def _ptr(a: np.ndarray) -> object:
    return ffi.cast("void *", a.ctypes.data)


def test_device_properties(cu: Cuda) -> None:
    lib = cu.lib
    n = ffi.new("int *")
    cu.check(lib.cuDeviceGetCount(n))
    assert n[0] >= 1
    name = ffi.new("char[64]")
    cu.check(lib.cuDeviceGetName(name, 64, 0))
    assert b"cuda-sim" in ffi.string(name)
    total = ffi.new("size_t *")
    cu.check(lib.cuDeviceTotalMem_v2(total, 0))
    assert total[0] == 4096 << 20
    attr = ffi.new("int *")
    cu.check(lib.cuDeviceGetAttribute(attr, 16, 0))  # MULTIPROCESSOR_COUNT
    assert attr[0] > 0
    cu.check(lib.cuDeviceGetAttribute(attr, 75, 0))  # COMPUTE_CAPABILITY_MAJOR
    assert attr[0] == 8
    dev = ffi.new("CUdevice *")
    assert lib.cuDeviceGet(dev, 99) == 101  # CUDA_ERROR_INVALID_DEVICE
    ver = ffi.new("int *")
    cu.check(lib.cuDriverGetVersion(ver))
    assert ver[0] >= 12000


def test_round_trip_and_memset(cu: Cuda) -> None:
    lib = cu.lib
    src = np.arange(1000, dtype=np.uint32)
    d = cu.alloc(src.nbytes)
    cu.check(lib.cuMemcpyHtoD_v2(d, _ptr(src), src.nbytes))
    d2 = cu.alloc(src.nbytes)
    cu.check(lib.cuMemcpyDtoD_v2(d2, d, src.nbytes))
    out = np.zeros_like(src)
    cu.check(lib.cuMemcpyDtoH_v2(_ptr(out), d2, src.nbytes))
    assert np.array_equal(out, src)
    cu.check(lib.cuMemsetD8_v2(d2 + 4, 0xAB, 8))
    cu.check(lib.cuMemcpyDtoH_v2(_ptr(out), d2, src.nbytes))
    assert out.view(np.uint8)[4:12].tolist() == [0xAB] * 8
    assert out[0] == 0 and out[3] == 3
    free, total = ffi.new("size_t *"), ffi.new("size_t *")
    cu.check(lib.cuMemGetInfo_v2(free, total))
    assert total[0] - free[0] >= 2 * src.nbytes
    cu.check(lib.cuMemFree_v2(d))
    cu.check(lib.cuMemFree_v2(d2))


def test_bad_pointers_are_rejected(cu: Cuda) -> None:
    lib = cu.lib
    d = cu.alloc(64)
    host = np.zeros(128, np.uint8)
    # Past the end of the allocation, and memory the driver never handed out.
    assert lib.cuMemcpyHtoD_v2(d, _ptr(host), 128) == CUDA_ERROR_INVALID_VALUE
    assert lib.cuMemcpyDtoH_v2(_ptr(host), host.ctypes.data, 16) == CUDA_ERROR_INVALID_VALUE
    assert lib.cuMemFree_v2(d + 8) == CUDA_ERROR_INVALID_VALUE
    cu.check(lib.cuMemFree_v2(d))
    assert lib.cuMemFree_v2(d) == CUDA_ERROR_INVALID_VALUE  # double free


def test_memory_limit_gives_out_of_memory(cu: Cuda) -> None:
    p = ffi.new("CUdeviceptr *")
    assert cu.lib.cuMemAlloc_v2(p, 5 << 30) == CUDA_ERROR_OUT_OF_MEMORY
    assert cu.lib.cuMemAlloc_v2(p, 0) == CUDA_ERROR_INVALID_VALUE


def test_pinned_and_managed_memory(cu: Cuda) -> None:
    lib = cu.lib
    pp = ffi.new("void **")
    cu.check(lib.cuMemHostAlloc(pp, 256, 0x2))  # DEVICEMAP
    dp = ffi.new("CUdeviceptr *")
    cu.check(lib.cuMemHostGetDevicePointer_v2(dp, pp[0], 0))
    assert dp[0] == int(ffi.cast("uintptr_t", pp[0]))
    mtype = ffi.new("unsigned int *")
    cu.check(lib.cuPointerGetAttribute(mtype, 2, dp[0]))  # MEMORY_TYPE
    assert mtype[0] == 1  # HOST
    m = ffi.new("CUdeviceptr *")
    cu.check(lib.cuMemAllocManaged(m, 128, 1))
    ismanaged = ffi.new("int *")
    cu.check(lib.cuPointerGetAttribute(ismanaged, 8, m[0]))
    assert ismanaged[0] == 1
    ctx = ffi.new("CUcontext *")
    cu.check(lib.cuPointerGetAttribute(ctx, 1, m[0]))
    assert ctx[0] == cu.ctx[0]
    # Managed memory is host-visible.
    ffi.cast("unsigned char *", m[0])[0] = 7
    out = np.zeros(1, np.uint8)
    cu.check(lib.cuMemcpyDtoH_v2(_ptr(out), m[0], 1))
    assert out[0] == 7
    cu.check(lib.cuMemFree_v2(m[0]))
    assert lib.cuMemFree_v2(int(ffi.cast("uintptr_t", pp[0]))) == CUDA_ERROR_INVALID_VALUE
    cu.check(lib.cuMemFreeHost(pp[0]))


def test_2d_copy(cu: Cuda) -> None:
    lib = cu.lib
    rows, width, pitch = 5, 12, 32
    src = np.arange(rows * pitch, dtype=np.uint8)
    d = cu.alloc(rows * pitch)
    cu.check(lib.cuMemsetD8_v2(d, 0, rows * pitch))
    c = ffi.new("CUDA_MEMCPY2D *")
    c.srcMemoryType, c.srcHost, c.srcPitch = 1, _ptr(src), pitch
    c.dstMemoryType, c.dstDevice, c.dstPitch = 2, d, pitch
    c.srcXInBytes, c.dstXInBytes = 4, 4
    c.WidthInBytes, c.Height = width, rows
    cu.check(lib.cuMemcpy2DAsync_v2(c, ffi.NULL))
    out = np.zeros(rows * pitch, np.uint8)
    cu.check(lib.cuMemcpyDtoH_v2(_ptr(out), d, out.nbytes))
    expect = np.zeros_like(out)
    for r in range(rows):
        expect[r * pitch + 4 : r * pitch + 4 + width] = src[r * pitch + 4 : r * pitch + 4 + width]
    assert np.array_equal(out, expect)


def test_no_current_context(cu: Cuda) -> None:
    results: list[int] = []

    def other_thread() -> None:
        p = ffi.new("CUdeviceptr *")
        results.append(cu.lib.cuMemAlloc_v2(p, 16))
        results.append(cu.lib.cuCtxSynchronize())

    t = threading.Thread(target=other_thread)
    t.start()
    t.join()
    assert results == [CUDA_ERROR_INVALID_CONTEXT, CUDA_ERROR_INVALID_CONTEXT]


def test_context_stack_and_destroyed_context(cu: Cuda) -> None:
    lib = cu.lib
    ctx = ffi.new("CUcontext *")
    cu.check(lib.cuCtxCreate_v2(ctx, 0, 0))
    cur = ffi.new("CUcontext *")
    cu.check(lib.cuCtxGetCurrent(cur))
    assert cur[0] == ctx[0]
    d = cu.alloc(32)  # owned by the new context
    cu.check(lib.cuCtxDestroy_v2(ctx[0]))
    assert lib.cuCtxSetCurrent(ctx[0]) == CUDA_ERROR_INVALID_CONTEXT
    assert lib.cuCtxDestroy_v2(ctx[0]) == CUDA_ERROR_INVALID_CONTEXT
    assert lib.cuMemFree_v2(d) == CUDA_ERROR_INVALID_VALUE  # went with its context
    cu.check(lib.cuCtxSetCurrent(cu.ctx[0]))


def test_destroyed_handles_are_rejected(cu: Cuda) -> None:
    lib = cu.lib
    s = cu.stream()
    e = cu.event()
    cu.check(lib.cuStreamDestroy_v2(s))
    cu.check(lib.cuEventDestroy_v2(e))
    assert lib.cuStreamSynchronize(s) == CUDA_ERROR_INVALID_HANDLE
    assert lib.cuStreamQuery(s) == CUDA_ERROR_INVALID_HANDLE
    assert lib.cuStreamDestroy_v2(s) == CUDA_ERROR_INVALID_HANDLE
    assert lib.cuEventRecord(e, ffi.NULL) == CUDA_ERROR_INVALID_HANDLE
    assert lib.cuEventQuery(e) == CUDA_ERROR_INVALID_HANDLE
    assert lib.cuEventDestroy_v2(e) == CUDA_ERROR_INVALID_HANDLE
    # A handle value that never existed.
    bogus = ffi.cast("CUstream", 0xDEAD0000)
    assert lib.cuStreamSynchronize(bogus) == CUDA_ERROR_INVALID_HANDLE
    # A new stream never reuses a destroyed handle value.
    s2 = cu.stream()
    assert s2 != s
    cu.check(lib.cuStreamDestroy_v2(s2))


def test_error_names(cu: Cuda) -> None:
    name, text = ffi.new("const char **"), ffi.new("const char **")
    cu.check(cu.lib.cuGetErrorName(700, name))
    cu.check(cu.lib.cuGetErrorString(700, text))
    assert ffi.string(name[0]) == b"CUDA_ERROR_ILLEGAL_ADDRESS"
    assert b"illegal memory access" in ffi.string(text[0])
    assert cu.lib.cuGetErrorName(12345, name) == CUDA_ERROR_INVALID_VALUE


def test_not_initialized_before_cuinit() -> None:
    script = f"""
import cffi
ffi = cffi.FFI()
ffi.cdef("int cuDeviceGetCount(int *); int cuInit(unsigned int); int cuCtxSynchronize(void);")
lib = ffi.dlopen({str(sim_library_path())!r})
n = ffi.new("int *")
print(lib.cuDeviceGetCount(n), lib.cuInit(0), lib.cuDeviceGetCount(n), n[0],
      lib.cuCtxSynchronize())
"""
    env = dict(os.environ, ARUNTIME_SIM_DEVICES="3")
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True
    ).stdout.split()
    assert out == [
        str(CUDA_ERROR_NOT_INITIALIZED),
        str(CUDA_SUCCESS),
        str(CUDA_SUCCESS),
        "3",
        str(CUDA_ERROR_INVALID_CONTEXT),
    ]


def test_several_devices_and_knobs_from_the_environment() -> None:
    script = f"""
import cffi
ffi = cffi.FFI()
ffi.cdef('''
int cuInit(unsigned); int cuDeviceGetCount(int *);
int cuDevicePrimaryCtxRetain(void **, int); int cuCtxSetCurrent(void *);
int cuMemAlloc_v2(unsigned long long *, size_t); int cuMemGetInfo_v2(size_t *, size_t *);
int cuCtxGetDevice(int *); void arsim_get_timing(double *, double *);
''')
lib = ffi.dlopen({str(sim_library_path())!r})
n, p = ffi.new("int *"), ffi.new("unsigned long long *")
ctx = [ffi.new("void **"), ffi.new("void **")]
out = [lib.cuInit(0), lib.cuDeviceGetCount(n), n[0]]
for dev in (0, 1):
    out.append(lib.cuDevicePrimaryCtxRetain(ctx[dev], dev))
out.append(lib.cuCtxSetCurrent(ctx[0][0]))
out.append(lib.cuMemAlloc_v2(p, 48 << 20))
out.append(lib.cuMemAlloc_v2(p, 48 << 20))  # past device 0's 64 MiB
out.append(lib.cuCtxSetCurrent(ctx[1][0]))
out.append(lib.cuMemAlloc_v2(p, 48 << 20))  # device 1 has its own 64 MiB
free, total, dev = ffi.new("size_t *"), ffi.new("size_t *"), ffi.new("int *")
lib.cuMemGetInfo_v2(free, total)
lib.cuCtxGetDevice(dev)
out += [dev[0], total[0] >> 20, free[0] >> 20]
g, lat = ffi.new("double *"), ffi.new("double *")
lib.arsim_get_timing(g, lat)
out += [g[0], lat[0]]
print(*out)
"""
    env = dict(
        os.environ,
        ARUNTIME_SIM_DEVICES="2",
        ARUNTIME_SIM_MEMORY_MB="64",
        ARUNTIME_SIM_COPY_GBPS="12.5",
        ARUNTIME_SIM_OP_LATENCY_US="7",
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True
    ).stdout.split()
    assert out == ["0", "0", "2", "0", "0", "0", "0", "2", "0", "0", "1", "64", "16", "12.5", "7.0"]
