"""cuda-sim refuses interprocess handles: its memory and events live in one
process.  The devices say so, and each call checks its arguments first."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import cffi
import pytest
from _cudasim_support import (
    CUDA_ERROR_INVALID_VALUE,
    CUDA_SUCCESS,
    Cuda,
    cu,  # noqa: F401  (fixture)
    sim_library_path,
)

CUDA_ERROR_INVALID_HANDLE = 400
CUDA_ERROR_NOT_SUPPORTED = 801
DISABLE_TIMING, INTERPROCESS = 0x2, 0x4

ffi = cffi.FFI()
ffi.cdef(
    """
typedef int CUresult;
typedef unsigned long long CUdeviceptr;
typedef struct CUevent_st *CUevent;
typedef struct CUmemPool_st *CUmemoryPool;
typedef struct { char reserved[64]; } CUipcEventHandle;
typedef struct { char reserved[64]; } CUipcMemHandle;
typedef struct { unsigned char reserved[64]; } CUmemPoolPtrExportData;
CUresult cuDeviceGetAttribute(int *, int, int);
CUresult cuDeviceGetMemPool(CUmemoryPool *, int);
CUresult cuEventCreate(CUevent *, unsigned int);
CUresult cuEventDestroy_v2(CUevent);
CUresult cuMemAlloc_v2(CUdeviceptr *, size_t);
CUresult cuMemFree_v2(CUdeviceptr);
CUresult cuIpcGetEventHandle(CUipcEventHandle *, CUevent);
CUresult cuIpcOpenEventHandle(CUevent *, CUipcEventHandle);
CUresult cuIpcGetMemHandle(CUipcMemHandle *, CUdeviceptr);
CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *, CUipcMemHandle, unsigned int);
CUresult cuIpcCloseMemHandle(CUdeviceptr);
CUresult cuMemPoolExportToShareableHandle(void *, CUmemoryPool, int, unsigned long long);
CUresult cuMemPoolImportFromShareableHandle(CUmemoryPool *, void *, int, unsigned long long);
CUresult cuMemPoolExportPointer(CUmemPoolPtrExportData *, CUdeviceptr);
CUresult cuMemPoolImportPointer(CUdeviceptr *, CUmemoryPool, CUmemPoolPtrExportData *);
CUresult cuGetProcAddress(const char *, void **, int, unsigned long long);
"""
)


@pytest.fixture
def lib(cu: Cuda) -> Iterator[Any]:  # noqa: F811  (cu: the context fixture)
    yield ffi.dlopen(str(sim_library_path()))


def _ok(rc: int) -> None:
    assert rc == CUDA_SUCCESS, rc


def test_devices_report_no_ipc(lib: Any) -> None:
    value = ffi.new("int *")
    # POSIX fd handles, mempool handle types, IPC events.
    for attr in (103, 119, 125):
        _ok(lib.cuDeviceGetAttribute(value, attr, 0))
        assert value[0] == 0


def test_event_handles_are_refused(lib: Any) -> None:
    handle = ffi.new("CUipcEventHandle *")
    plain, shared = ffi.new("CUevent *"), ffi.new("CUevent *")
    _ok(lib.cuEventCreate(plain, DISABLE_TIMING))
    _ok(lib.cuEventCreate(shared, DISABLE_TIMING | INTERPROCESS))
    assert lib.cuIpcGetEventHandle(handle, plain[0]) == CUDA_ERROR_INVALID_VALUE
    assert lib.cuIpcGetEventHandle(handle, shared[0]) == CUDA_ERROR_NOT_SUPPORTED
    bogus = ffi.cast("CUevent", 0x1234)
    assert lib.cuIpcGetEventHandle(handle, bogus) == CUDA_ERROR_INVALID_HANDLE
    assert lib.cuIpcOpenEventHandle(plain, handle[0]) == CUDA_ERROR_NOT_SUPPORTED
    for e in (plain[0], shared[0]):
        _ok(lib.cuEventDestroy_v2(e))


def test_memory_and_pool_handles_are_refused(lib: Any) -> None:
    d = ffi.new("CUdeviceptr *")
    _ok(lib.cuMemAlloc_v2(d, 256))
    mem = ffi.new("CUipcMemHandle *")
    assert lib.cuIpcGetMemHandle(mem, d[0]) == CUDA_ERROR_NOT_SUPPORTED
    host = ffi.new("char[16]")
    assert lib.cuIpcGetMemHandle(mem, int(ffi.cast("uintptr_t", host))) == (
        CUDA_ERROR_INVALID_VALUE
    )
    assert lib.cuIpcOpenMemHandle_v2(d, mem[0], 1) == CUDA_ERROR_NOT_SUPPORTED
    assert lib.cuIpcCloseMemHandle(d[0]) == CUDA_ERROR_INVALID_VALUE
    pool = ffi.new("CUmemoryPool *")
    _ok(lib.cuDeviceGetMemPool(pool, 0))
    fd = ffi.new("int *")
    # No pool is made shareable, so none has a handle type to export.
    assert lib.cuMemPoolExportToShareableHandle(fd, pool[0], 1, 0) == CUDA_ERROR_INVALID_VALUE
    assert lib.cuMemPoolImportFromShareableHandle(pool, fd, 1, 0) == CUDA_ERROR_NOT_SUPPORTED
    data = ffi.new("CUmemPoolPtrExportData *")
    assert lib.cuMemPoolExportPointer(data, d[0]) == CUDA_ERROR_INVALID_VALUE
    assert lib.cuMemPoolImportPointer(d, pool[0], data) == CUDA_ERROR_NOT_SUPPORTED
    _ok(lib.cuMemFree_v2(d[0]))


@pytest.mark.parametrize(
    ("name", "version"),
    [
        ("cuIpcGetEventHandle", 4010),
        ("cuIpcOpenMemHandle", 11000),
        ("cuMemPoolImportPointer", 11020),
    ],
)
def test_get_proc_address_finds_them(lib: Any, name: str, version: int) -> None:
    fn = ffi.new("void **")
    _ok(lib.cuGetProcAddress(name.encode(), fn, version, 0))
    assert fn[0] != ffi.NULL
