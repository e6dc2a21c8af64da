"""Helpers for the software CUDA driver's tests: cffi ABI mode over the built
``libcuda.so.1`` with just the declarations these tests use."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import cffi
import pytest

from aruntime._native import native_library_path

CDEF = """
typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef unsigned long long cuuint64_t;
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphNode_st *CUgraphNode;
typedef struct CUgraphExec_st *CUgraphExec;
typedef struct CUarray_st *CUarray;
typedef void (*CUhostFn)(void *userData);
typedef struct CUDA_MEMCPY2D_st {
    size_t srcXInBytes; size_t srcY; int srcMemoryType; const void *srcHost;
    CUdeviceptr srcDevice; CUarray srcArray; size_t srcPitch;
    size_t dstXInBytes; size_t dstY; int dstMemoryType; void *dstHost;
    CUdeviceptr dstDevice; CUarray dstArray; size_t dstPitch;
    size_t WidthInBytes; size_t Height;
} CUDA_MEMCPY2D;

CUresult cuInit(unsigned int);
CUresult cuDriverGetVersion(int *);
CUresult cuGetErrorName(CUresult, const char **);
CUresult cuGetErrorString(CUresult, const char **);
CUresult cuDeviceGet(CUdevice *, int);
CUresult cuDeviceGetCount(int *);
CUresult cuDeviceGetName(char *, int, CUdevice);
CUresult cuDeviceTotalMem_v2(size_t *, CUdevice);
CUresult cuDeviceGetAttribute(int *, int, CUdevice);
CUresult cuDevicePrimaryCtxRetain(CUcontext *, CUdevice);
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice);
CUresult cuDevicePrimaryCtxReset_v2(CUdevice);
CUresult cuCtxCreate_v2(CUcontext *, unsigned int, CUdevice);
CUresult cuCtxCreate_v4(CUcontext *, void *, unsigned int, CUdevice);
CUresult cuCtxDestroy_v2(CUcontext);
CUresult cuGetProcAddress(const char *, void **, int, cuuint64_t);
CUresult cuMemsetD32Async(CUdeviceptr, unsigned int, size_t, CUstream);
CUresult cuMemsetD32_v2(CUdeviceptr, unsigned int, size_t);
CUresult cuCtxSetCurrent(CUcontext);
CUresult cuCtxGetCurrent(CUcontext *);
CUresult cuCtxPushCurrent_v2(CUcontext);
CUresult cuCtxPopCurrent_v2(CUcontext *);
CUresult cuCtxGetDevice(CUdevice *);
CUresult cuCtxSynchronize(void);
CUresult cuCtxGetStreamPriorityRange(int *, int *);
CUresult cuCtxSetLimit(int, size_t);
CUresult cuCtxGetLimit(size_t *, int);
CUresult cuProfilerStart(void);
CUresult cuProfilerStop(void);
CUresult cuMemGetInfo_v2(size_t *, size_t *);
CUresult cuMemAlloc_v2(CUdeviceptr *, size_t);
CUresult cuMemFree_v2(CUdeviceptr);
CUresult cuMemAllocManaged(CUdeviceptr *, size_t, unsigned int);
CUresult cuMemHostAlloc(void **, size_t, unsigned int);
CUresult cuMemAllocHost_v2(void **, size_t);
CUresult cuMemFreeHost(void *);
CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *, void *, unsigned int);
CUresult cuPointerGetAttribute(void *, int, CUdeviceptr);
CUresult cuMemcpyHtoD_v2(CUdeviceptr, const void *, size_t);
CUresult cuMemcpyDtoH_v2(void *, CUdeviceptr, size_t);
CUresult cuMemcpyDtoD_v2(CUdeviceptr, CUdeviceptr, size_t);
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr, const void *, size_t, CUstream);
CUresult cuMemcpyDtoHAsync_v2(void *, CUdeviceptr, size_t, CUstream);
CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr, CUdeviceptr, size_t, CUstream);
CUresult cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D *, CUstream);
CUresult cuMemsetD8_v2(CUdeviceptr, unsigned char, size_t);
CUresult cuMemsetD8Async(CUdeviceptr, unsigned char, size_t, CUstream);
CUresult cuStreamCreate(CUstream *, unsigned int);
CUresult cuStreamCreateWithPriority(CUstream *, unsigned int, int);
CUresult cuStreamDestroy_v2(CUstream);
CUresult cuStreamSynchronize(CUstream);
CUresult cuStreamQuery(CUstream);
CUresult cuStreamWaitEvent(CUstream, CUevent, unsigned int);
CUresult cuStreamGetPriority(CUstream, int *);
CUresult cuStreamBeginCapture_v2(CUstream, int);
CUresult cuStreamEndCapture(CUstream, CUgraph *);
CUresult cuStreamIsCapturing(CUstream, int *);
CUresult cuStreamGetCaptureInfo_v2(CUstream, int *, cuuint64_t *, CUgraph *,
                                   const CUgraphNode **, size_t *);
CUresult cuLaunchHostFunc(CUstream, CUhostFn, void *);
CUresult cuEventCreate(CUevent *, unsigned int);
CUresult cuEventDestroy_v2(CUevent);
CUresult cuEventRecord(CUevent, CUstream);
CUresult cuEventQuery(CUevent);
CUresult cuEventSynchronize(CUevent);
CUresult cuEventElapsedTime(float *, CUevent, CUevent);
CUresult cuEventElapsedTime_v2(float *, CUevent, CUevent);
CUresult cuModuleLoadData(CUmodule *, const void *);
CUresult cuModuleLoadDataEx(CUmodule *, const void *, unsigned int, int *, void **);
CUresult cuModuleLoad(CUmodule *, const char *);
CUresult cuModuleUnload(CUmodule);
CUresult cuModuleGetFunction(CUfunction *, CUmodule, const char *);
CUresult cuFuncGetParamInfo(CUfunction, size_t, size_t *, size_t *);
CUresult cuLaunchKernel(CUfunction, unsigned int, unsigned int, unsigned int,
                        unsigned int, unsigned int, unsigned int, unsigned int,
                        CUstream, void **, void **);
CUresult cuGraphGetNodes(CUgraph, CUgraphNode *, size_t *);
CUresult cuGraphInstantiateWithFlags(CUgraphExec *, CUgraph, unsigned long long);
CUresult cuGraphLaunch(CUgraphExec, CUstream);
CUresult cuGraphExecDestroy(CUgraphExec);
CUresult cuGraphDestroy(CUgraph);
CUresult cuMemsetD8Async_ptsz(CUdeviceptr, unsigned char, size_t, CUstream);
CUresult cuStreamQuery_ptsz(CUstream);
CUresult cuMemcpyDtoH_v2_ptds(void *, CUdeviceptr, size_t);
CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr, const void *, size_t, CUstream);
CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr, const void *, size_t);
CUresult cuLaunchKernel_ptsz(CUfunction, unsigned int, unsigned int, unsigned int,
                             unsigned int, unsigned int, unsigned int, unsigned int,
                             CUstream, void **, void **);
CUresult cuStreamBeginCapture_v2_ptsz(CUstream, int);
CUresult cuGetProcAddress_v2(const char *, void **, int, cuuint64_t, int *);

void arsim_set_timing(double copy_gbps, double op_latency_us);
void arsim_get_timing(double *copy_gbps, double *op_latency_us);
int arsim_inject_fault(int device, int kind, int count);
void arsim_clear_faults(void);
int arsim_live_queues(void);
int arsim_engine_threads(void);
void arsim_set_engine_idle_ms(int);
void arsim_set_inline_bytes(int64_t);
"""

CUDA_SUCCESS = 0
CUDA_ERROR_INVALID_VALUE = 1
CUDA_ERROR_OUT_OF_MEMORY = 2
CUDA_ERROR_NOT_INITIALIZED = 3
CUDA_ERROR_INVALID_CONTEXT = 201
CUDA_ERROR_INVALID_HANDLE = 400
CUDA_ERROR_ILLEGAL_STATE = 401
CUDA_ERROR_NOT_FOUND = 500
CUDA_ERROR_NOT_READY = 600
CUDA_ERROR_ILLEGAL_ADDRESS = 700
CUDA_ERROR_LAUNCH_FAILED = 719
CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED = 900
CUDA_ERROR_STREAM_CAPTURE_INVALIDATED = 901
CUDA_ERROR_STREAM_CAPTURE_ISOLATION = 905
CUDA_ERROR_STREAM_CAPTURE_IMPLICIT = 906
CUDA_ERROR_CAPTURED_EVENT = 907

FAULT_OUT_OF_MEMORY = 1
FAULT_LAUNCH_FAILED = 2
FAULT_ILLEGAL_ADDRESS = 3

CU_EVENT_BLOCKING_SYNC = 0x1
CU_EVENT_DISABLE_TIMING = 0x2
CU_STREAM_NON_BLOCKING = 0x1
CU_STREAM_LEGACY = 0x1
CU_STREAM_PER_THREAD = 0x2

ffi = cffi.FFI()
ffi.cdef(CDEF)

_lib_lock = threading.Lock()
_lib: Any = None


def sim_library_path() -> Path:
    return native_library_path("libcuda.so.1")


def host_kernels_path() -> Path:
    return native_library_path("libarkernels_host.so")


def load_sim() -> Any:
    global _lib
    with _lib_lock:
        if _lib is None:
            _lib = ffi.dlopen(str(sim_library_path()))
            assert _lib.cuInit(0) == CUDA_SUCCESS
        return _lib


class Cuda:
    """The driver plus a retained primary context, current on this thread."""

    def __init__(self, lib: Any) -> None:
        self.lib = lib
        self.ffi = ffi
        self.gates: list[Gate] = []
        self.ctx = ffi.new("CUcontext *")
        self.check(lib.cuDevicePrimaryCtxRetain(self.ctx, 0))
        self.check(lib.cuCtxSetCurrent(self.ctx[0]))

    def check(self, rc: int) -> None:
        if rc != CUDA_SUCCESS:
            name = ffi.new("const char **")
            self.lib.cuGetErrorName(rc, name)
            text = ffi.string(name[0]).decode() if name[0] != ffi.NULL else "?"
            raise AssertionError(f"CUDA call failed: {rc} {text}")

    def alloc(self, n: int) -> int:
        p = ffi.new("CUdeviceptr *")
        self.check(self.lib.cuMemAlloc_v2(p, n))
        return int(p[0])

    def stream(self, flags: int = 0, priority: int = 0) -> Any:
        s = ffi.new("CUstream *")
        self.check(self.lib.cuStreamCreateWithPriority(s, flags, priority))
        return s[0]

    def event(self, flags: int = 0) -> Any:
        e = ffi.new("CUevent *")
        self.check(self.lib.cuEventCreate(e, flags))
        return e[0]

    def elapsed_ms(self, a: Any, b: Any) -> float:
        ms = ffi.new("float *")
        self.check(self.lib.cuEventElapsedTime_v2(ms, a, b))
        return float(ms[0])


class Gate:
    """Holds a stream with a host function until released: deterministic
    "work is still pending" states without timing assumptions."""

    def __init__(self, cu: Cuda, stream: Any) -> None:
        self._event = threading.Event()

        @ffi.callback("void(void *)")
        def hold(_user: Any) -> None:
            self._event.wait()

        self._hold = hold  # keep the callback alive
        cu.gates.append(self)  # released at teardown even if the test fails
        cu.check(cu.lib.cuLaunchHostFunc(stream, hold, ffi.NULL))

    def release(self) -> None:
        self._event.set()


@contextlib.contextmanager
def open_cuda() -> Iterator[Cuda]:
    """The driver with the timing model off and no faults, cleaned up after."""
    lib = load_sim()
    lib.arsim_set_timing(0.0, 0.0)
    lib.arsim_clear_faults()
    c = Cuda(lib)
    try:
        yield c
    finally:
        for gate in c.gates:
            gate.release()
        lib.arsim_set_timing(0.0, 0.0)
        lib.arsim_clear_faults()
        # The last release tears the primary context down: its streams,
        # memory and any sticky error go, so each test starts clean.
        assert lib.cuDevicePrimaryCtxRelease_v2(0) == CUDA_SUCCESS
        lib.cuCtxSetCurrent(ffi.NULL)


@pytest.fixture
def cu() -> Iterator[Cuda]:
    with open_cuda() as c:
        yield c


_ALONE = """
import importlib.util
import sys

sys.path.insert(0, {here!r})
import _cudasim_support as support

spec = importlib.util.spec_from_file_location("_scenarios", {module!r})
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
with support.open_cuda() as cu:
    getattr(module, {name!r})(cu)
"""


def run_alone(module_file: str, name: str, env: dict[str, str] | None = None) -> None:
    """Run ``name(cu)``, a function of ``module_file``, in a fresh interpreter.

    For checks on the sim's process-wide counts (live queues, engine threads)
    and on the process's threads: in the test process, the streams and
    backends of earlier tests go away on other threads (release workers, the
    garbage collector) at any moment, so those counts move under a test.
    Alone in a process, every count is the scenario's own.
    """
    here = Path(__file__).resolve().parent
    code = _ALONE.format(here=str(here), module=str(Path(module_file).resolve()), name=name)
    path = os.pathsep.join(p for p in (str(here.parents[1]), os.environ.get("PYTHONPATH")) if p)
    run = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, **(env or {}), "PYTHONPATH": path},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, f"{name} failed alone:\n{run.stdout}{run.stderr}"
