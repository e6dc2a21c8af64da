"""The one cffi FFI of the CUDA backend, and the typed view of the C library.

The declarations live in ``ffi/cuda/decl/*.h`` (copied to ``aruntime/_lib/decl/cuda``
by the install command), joined in file-name order.  They use the symbols the
driver really exports, the versioned ones that ``cuda.h``'s macros map to
(``cuMemAlloc_v2``, ``cuStreamBeginCapture_v2``...): in ABI mode there are no
header macros, and the unversioned names in ``libcuda.so.1`` are the legacy
ABIs (32-bit sizes, older argument lists).  ``tests/ffi/test_cuda_decl.py``
compiles every declaration against the real ``cuda.h``.

:class:`CudaLib` lists the functions with their real signatures and is
``cast`` onto the library object, so mypy checks every call site.
Handles (``CUstream``...) are cffi pointers; they stay ``CData`` to Python.

Two ways to call, one set of declarations and one ``ffi`` either way:

* API mode (the default where the install could build it): the extension
  ``_aruntime_cuda_api`` generated from these declarations by
  ``ffi/cuda/api/generate.py``; each call is a C wrapper through a function
  pointer that ``dlsym`` filled, about 3x cheaper than libffi.
* ABI mode (``ARUNTIME_CUDA_ABI=1``, or no Python headers at install): the
  declarations parsed at first use and called through libffi.
"""

from __future__ import annotations

import importlib.util
import os
import re
import sysconfig
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol

from cffi import FFI

from ..._exceptions import BackendUnavailableError
from ..._native import native_library_path

__all__ = [
    "COMPILED",
    "COMPILED_FFI",
    "FUNCTION_NAMES",
    "CData",
    "CudaLib",
    "HelperLib",
    "abi_ffi",
    "declarations_dir",
    "probe_ffi",
]

#: A cffi object (pointer, array, handle).  cffi ships no type information.
CData = Any

_PACKAGE_DIR = Path(__file__).resolve().parents[2]


def declarations_dir() -> Path:
    """Where the ``.h`` declarations are: the source tree first, then the installed copy."""
    source = _PACKAGE_DIR.parent / "ffi" / "cuda" / "decl"
    if source.is_dir():
        return source
    return _PACKAGE_DIR / "_lib" / "decl" / "cuda"


def _function_names() -> tuple[str, ...]:
    text = "\n".join(p.read_text() for p in sorted(declarations_dir().glob("*.h")))
    return tuple(re.findall(r"^CUresult\s+(cu\w+)\(", text, flags=re.M))


def _load_cdefs() -> Any:
    """ABI mode: parse the declarations (no compiler needed, ~200 ns a call)."""
    decl = declarations_dir()
    headers = sorted(decl.glob("*.h"))
    if not headers:
        raise ImportError(f"the CUDA declarations are missing from {decl}; reinstall aruntime")
    # One cdef call: pycparser's fixed cost is paid once, not per file.
    text = "\n".join(header.read_text() for header in headers) + _SYSTEM_CDEF
    result = FFI()
    result.cdef(text)
    return result


def _load_compiled() -> ModuleType | None:
    """API mode: the extension built from the same declarations (ffi/cuda/api).

    None where it is not built (no Python headers, no compiler) or when
    ``ARUNTIME_CUDA_ABI=1`` asks for ABI mode.
    """
    if os.environ.get("ARUNTIME_CUDA_ABI") == "1":
        return None
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    if not suffix:
        return None
    try:
        path = native_library_path(f"{COMPILED_MODULE}{suffix}")
    except BackendUnavailableError:
        return None
    spec = importlib.util.spec_from_file_location(COMPILED_MODULE, path)
    if spec is None or spec.loader is None:
        return None
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except ImportError:
        return None
    return module


# The C library's dladdr, to report which file a symbol really came from
# (two libraries share the soname libcuda.so.1: NVIDIA's and the sim).
_SYSTEM_CDEF = """
typedef struct { const char *dli_fname; void *dli_fbase; const char *dli_sname;
                 void *dli_saddr; } Dl_info;
int dladdr(const void *addr, Dl_info *info);
"""

COMPILED_MODULE = "_aruntime_cuda_api"
_compiled = _load_compiled()
#: The compiled extension's ``ffi`` and library (every declared function as a
#: C wrapper, plus the host functions), or None in ABI mode.  It binds to one
#: library per process (the first opened); cffi objects of one ``ffi`` cannot
#: be passed to another's functions, so each CudaLibrary carries its own.
COMPILED_FFI: Any = _compiled.ffi if _compiled is not None else None
COMPILED: Any = _compiled.lib if _compiled is not None else None
#: Every CUDA function declared, in declaration order.
FUNCTION_NAMES: tuple[str, ...] = _function_names()

_abi_ffi: Any = None


def abi_ffi() -> Any:
    """The ABI-mode FFI (parsed on first use, then shared)."""
    global _abi_ffi
    if _abi_ffi is None:
        _abi_ffi = _load_cdefs()
    return _abi_ffi


#: A few handle-free declarations to load and initialise a candidate library
#: (and name its errors) before choosing how to bind it.
probe_ffi: Any = FFI()
probe_ffi.cdef(
    """
    unsigned int cuInit(unsigned int Flags);
    unsigned int cuGetErrorName(unsigned int error, const char **pStr);
    unsigned int cuGetErrorString(unsigned int error, const char **pStr);
    """
    + _SYSTEM_CDEF
)


class CudaLib(Protocol):
    """The CUDA driver functions aruntime calls; every one returns a ``CUresult``."""

    # init, devices, primary context
    def cuInit(self, Flags: int, /) -> int: ...
    def cuDriverGetVersion(self, driverVersion: CData, /) -> int: ...
    def cuDeviceGet(self, device: CData, ordinal: int, /) -> int: ...
    def cuDeviceGetCount(self, count: CData, /) -> int: ...
    def cuDeviceGetName(self, name: CData, len: int, dev: int, /) -> int: ...
    def cuDeviceTotalMem_v2(self, bytes: CData, dev: int, /) -> int: ...
    def cuDeviceGetAttribute(self, pi: CData, attrib: int, dev: int, /) -> int: ...
    def cuDevicePrimaryCtxRetain(self, pctx: CData, dev: int, /) -> int: ...
    def cuDevicePrimaryCtxRelease_v2(self, dev: int, /) -> int: ...
    def cuCtxSetCurrent(self, ctx: CData, /) -> int: ...
    def cuCtxGetCurrent(self, pctx: CData, /) -> int: ...
    def cuCtxGetDevice(self, device: CData, /) -> int: ...
    def cuCtxSynchronize(self, /) -> int: ...
    def cuCtxGetStreamPriorityRange(self, least: CData, greatest: CData, /) -> int: ...
    def cuDeviceCanAccessPeer(self, can: CData, dev: int, peerDev: int, /) -> int: ...
    def cuCtxEnablePeerAccess(self, peerContext: CData, Flags: int, /) -> int: ...
    def cuGetProcAddress_v2(
        self, symbol: bytes, pfn: CData, cudaVersion: int, flags: int, status: CData, /
    ) -> int: ...

    # memory
    def cuMemGetInfo_v2(self, free: CData, total: CData, /) -> int: ...
    def cuMemAlloc_v2(self, dptr: CData, bytesize: int, /) -> int: ...
    def cuMemAllocManaged(self, dptr: CData, bytesize: int, flags: int, /) -> int: ...
    def cuMemFree_v2(self, dptr: int, /) -> int: ...
    def cuMemHostAlloc(self, pp: CData, bytesize: int, Flags: int, /) -> int: ...
    def cuMemFreeHost(self, p: CData, /) -> int: ...
    def cuMemHostGetDevicePointer_v2(self, pdptr: CData, p: CData, Flags: int, /) -> int: ...
    def cuPointerGetAttribute(self, data: CData, attribute: int, ptr: int, /) -> int: ...
    def cuMemcpyHtoD_v2(self, dst: int, src: CData, n: int, /) -> int: ...
    def cuMemcpyDtoH_v2(self, dst: CData, src: int, n: int, /) -> int: ...
    def cuMemcpyHtoDAsync_v2(self, dst: int, src: CData, n: int, stream: CData, /) -> int: ...
    def cuMemcpyDtoHAsync_v2(self, dst: CData, src: int, n: int, stream: CData, /) -> int: ...
    def cuMemcpyDtoDAsync_v2(self, dst: int, src: int, n: int, stream: CData, /) -> int: ...
    def cuMemcpyPeerAsync(
        self, dst: int, dstCtx: CData, src: int, srcCtx: CData, n: int, stream: CData, /
    ) -> int: ...
    def cuMemcpy2DAsync_v2(self, pCopy: CData, stream: CData, /) -> int: ...
    def cuMemsetD8Async(self, dst: int, uc: int, n: int, stream: CData, /) -> int: ...

    # stream-ordered allocation (memory pools)
    def cuDeviceGetDefaultMemPool(self, pool_out: CData, dev: int, /) -> int: ...
    def cuDeviceGetMemPool(self, pool: CData, dev: int, /) -> int: ...
    def cuDeviceSetMemPool(self, dev: int, pool: CData, /) -> int: ...
    def cuMemPoolCreate(self, pool: CData, props: CData, /) -> int: ...
    def cuMemPoolDestroy(self, pool: CData, /) -> int: ...
    def cuMemPoolSetAttribute(self, pool: CData, attr: int, value: CData, /) -> int: ...
    def cuMemPoolGetAttribute(self, pool: CData, attr: int, value: CData, /) -> int: ...
    def cuMemPoolTrimTo(self, pool: CData, minBytesToKeep: int, /) -> int: ...
    def cuMemAllocFromPoolAsync(
        self, dptr: CData, bytesize: int, pool: CData, stream: CData, /
    ) -> int: ...
    def cuMemAllocAsync(self, dptr: CData, bytesize: int, stream: CData, /) -> int: ...
    def cuMemFreeAsync(self, dptr: int, stream: CData, /) -> int: ...

    # streams, events, host functions
    def cuStreamCreateWithPriority(self, ph: CData, flags: int, priority: int, /) -> int: ...
    def cuStreamDestroy_v2(self, stream: CData, /) -> int: ...
    def cuStreamQuery(self, stream: CData, /) -> int: ...
    def cuStreamSynchronize(self, stream: CData, /) -> int: ...
    def cuStreamWaitEvent(self, stream: CData, event: CData, Flags: int, /) -> int: ...
    def cuEventCreate(self, ph: CData, Flags: int, /) -> int: ...
    def cuEventDestroy_v2(self, event: CData, /) -> int: ...
    def cuEventRecord(self, event: CData, stream: CData, /) -> int: ...
    def cuEventQuery(self, event: CData, /) -> int: ...
    def cuEventSynchronize(self, event: CData, /) -> int: ...
    def cuEventElapsedTime(self, ms: CData, start: CData, end: CData, /) -> int: ...
    def cuEventElapsedTime_v2(self, ms: CData, start: CData, end: CData, /) -> int: ...
    def cuLaunchHostFunc(self, stream: CData, fn: CData, userData: CData, /) -> int: ...

    # modules and launches
    def cuModuleLoadData(self, module: CData, image: CData, /) -> int: ...
    def cuModuleUnload(self, hmod: CData, /) -> int: ...
    def cuModuleGetFunction(self, hfunc: CData, hmod: CData, name: bytes, /) -> int: ...
    def cuFuncGetParamInfo(
        self, func: CData, paramIndex: int, paramOffset: CData, paramSize: CData, /
    ) -> int: ...
    def cuLaunchKernel(
        self,
        f: CData,
        gridDimX: int,
        gridDimY: int,
        gridDimZ: int,
        blockDimX: int,
        blockDimY: int,
        blockDimZ: int,
        sharedMemBytes: int,
        hStream: CData,
        kernelParams: CData,
        extra: CData,
        /,
    ) -> int: ...

    # capture and graphs
    def cuStreamBeginCapture_v2(self, stream: CData, mode: int, /) -> int: ...
    def cuStreamEndCapture(self, stream: CData, phGraph: CData, /) -> int: ...
    def cuStreamIsCapturing(self, stream: CData, status: CData, /) -> int: ...
    def cuGraphInstantiateWithFlags(self, phExec: CData, graph: CData, flags: int, /) -> int: ...
    def cuGraphDestroy(self, graph: CData, /) -> int: ...
    def cuGraphLaunch(self, graphExec: CData, stream: CData, /) -> int: ...
    def cuGraphExecDestroy(self, graphExec: CData, /) -> int: ...

    # errors
    def cuGetErrorName(self, error: int, pStr: CData, /) -> int: ...
    def cuGetErrorString(self, error: int, pStr: CData, /) -> int: ...


class HelperLib(Protocol):
    """``libaruntime_cuda_helpers.so``: native host functions (no Python on driver threads)."""

    def ar_copy_job_new(self, dst: CData, src: CData, nbytes: int, free_after: int, /) -> CData: ...
    def ar_copy_job_free(self, job: CData, /) -> None: ...
    def ar_hostfn_copy(self, job: CData, /) -> None: ...
    def ar_helpers_shutdown(self, /) -> None: ...
    def ar_helpers_is_shutdown(self, /) -> int: ...
