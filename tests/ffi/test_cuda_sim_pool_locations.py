"""cuda-sim: pools of pinned host and managed memory (each location's default
and current pool, CUDA 13's cuMemGetMemPool/cuMemSetMemPool)."""

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

CUDA_ERROR_INVALID_DEVICE = 101
CUDA_ERROR_NOT_SUPPORTED = 801

ffi = cffi.FFI()
ffi.cdef(
    """
typedef int CUresult;
typedef unsigned long long CUdeviceptr;
typedef struct CUstream_st *CUstream;
typedef struct CUmemPool_st *CUmemoryPool;
typedef struct { int type; int id; } CUmemLocation;
typedef struct {
    int allocType; int handleTypes; CUmemLocation location; void *win32SecurityAttributes;
    size_t maxSize; unsigned short usage; unsigned char reserved[54];
} CUmemPoolProps;
CUresult cuDeviceGetAttribute(int *, int, int);
CUresult cuStreamCreate(CUstream *, unsigned int);
CUresult cuStreamDestroy_v2(CUstream);
CUresult cuStreamSynchronize(CUstream);
CUresult cuMemAlloc_v2(CUdeviceptr *, size_t);
CUresult cuMemAllocManaged(CUdeviceptr *, size_t, unsigned int);
CUresult cuMemFree_v2(CUdeviceptr);
CUresult cuMemFreeHost(void *);
CUresult cuMemAllocFromPoolAsync(CUdeviceptr *, size_t, CUmemoryPool, CUstream);
CUresult cuMemFreeAsync(CUdeviceptr, CUstream);
CUresult cuPointerGetAttribute(void *, int, CUdeviceptr);
CUresult cuDeviceGetMemPool(CUmemoryPool *, int);
CUresult cuDeviceSetMemPool(int, CUmemoryPool);
CUresult cuMemGetMemPool(CUmemoryPool *, CUmemLocation *, int);
CUresult cuMemGetDefaultMemPool(CUmemoryPool *, CUmemLocation *, int);
CUresult cuMemSetMemPool(CUmemLocation *, int, CUmemoryPool);
CUresult cuMemPoolCreate(CUmemoryPool *, const CUmemPoolProps *);
CUresult cuMemPoolDestroy(CUmemoryPool);
CUresult cuMemAdvise_v2(CUdeviceptr, size_t, int, CUmemLocation);
CUresult cuMemPrefetchAsync_v2(CUdeviceptr, size_t, CUmemLocation, unsigned int, CUstream);
CUresult cuMemPrefetchBatchAsync(CUdeviceptr *, size_t *, size_t, CUmemLocation *, size_t *,
                                 size_t, unsigned long long, CUstream);
CUresult cuMemDiscardBatchAsync(CUdeviceptr *, size_t *, size_t, unsigned long long, CUstream);
CUresult cuMemRangeGetAttribute(void *, size_t, int, CUdeviceptr, size_t);
CUresult cuMemRangeGetAttributes(void **, size_t *, int *, size_t, CUdeviceptr, size_t);
CUresult cuGetProcAddress(const char *, void **, int, unsigned long long);
"""
)

PINNED, MANAGED = 1, 2
NONE, DEVICE, HOST, HOST_NUMA, HOST_NUMA_CURRENT = 0, 1, 2, 3, 4
MEMORY_TYPE, IS_MANAGED, MEMPOOL_HANDLE = 2, 8, 17
MEMORYTYPE_HOST, MEMORYTYPE_DEVICE = 1, 2
SET_READ_MOSTLY, SET_PREFERRED, UNSET_PREFERRED, SET_ACCESSED_BY = 1, 3, 4, 5
READ_MOSTLY, PREFERRED, ACCESSED_BY, LAST_PREFETCH = 1, 2, 3, 4
PREFERRED_TYPE, PREFERRED_ID, LAST_PREFETCH_TYPE = 5, 6, 7
CPU, INVALID = -1, -2
PAGE = 4096


@pytest.fixture
def lib(cu: Cuda) -> Iterator[Any]:  # noqa: F811  (cu: the context fixture)
    yield ffi.dlopen(str(sim_library_path()))


@pytest.fixture
def stream(lib: Any) -> Iterator[Any]:
    s = ffi.new("CUstream *")
    assert lib.cuStreamCreate(s, 0) == CUDA_SUCCESS
    yield s[0]
    lib.cuStreamDestroy_v2(s[0])


def _ok(rc: int) -> None:
    assert rc == CUDA_SUCCESS, rc


def _loc(kind: int, ident: int = 0) -> Any:
    return ffi.new("CUmemLocation *", {"type": kind, "id": ident})


def _pool(lib: Any, alloc_type: int, loc: int, ident: int = 0) -> tuple[int, Any]:
    out = ffi.new("CUmemoryPool *")
    return lib.cuMemGetMemPool(out, _loc(loc, ident), alloc_type), out[0]


def _attr(lib: Any, attr: int, ptr: int, ctype: str = "int *") -> Any:
    out = ffi.new(ctype)
    _ok(lib.cuPointerGetAttribute(out, attr, ptr))
    return out[0]


def test_every_location_has_a_default_pool(lib: Any) -> None:
    seen = set()
    for alloc_type, loc, ident in [
        (PINNED, HOST, 0),
        (PINNED, HOST, 7),  # a host location's id is ignored
        (PINNED, HOST_NUMA, 0),
        (MANAGED, NONE, 0),
        (MANAGED, DEVICE, 0),
        (MANAGED, HOST, 0),
        (MANAGED, HOST_NUMA, 0),
    ]:
        rc, pool = _pool(lib, alloc_type, loc, ident)
        _ok(rc)
        default = ffi.new("CUmemoryPool *")
        _ok(lib.cuMemGetDefaultMemPool(default, _loc(loc, ident), alloc_type))
        assert default[0] == pool
        seen.add(int(ffi.cast("uintptr_t", pool)))
    assert len(seen) == 6  # one per location and type; both host ids share one
    device = ffi.new("CUmemoryPool *")
    _ok(lib.cuDeviceGetMemPool(device, 0))
    assert int(ffi.cast("uintptr_t", device[0])) not in seen


@pytest.mark.parametrize(
    ("alloc_type", "loc", "ident"),
    [
        (PINNED, NONE, 0),  # only managed memory may have no location
        (PINNED, HOST_NUMA, 1),  # the sim's host has one NUMA node
        (PINNED, HOST_NUMA_CURRENT, 0),
        (PINNED, DEVICE, 99),
        (MANAGED, 9, 0),
        (3, DEVICE, 0),
    ],
)
def test_unknown_locations_are_refused(lib: Any, alloc_type: int, loc: int, ident: int) -> None:
    assert _pool(lib, alloc_type, loc, ident)[0] == CUDA_ERROR_INVALID_VALUE


def test_devices_report_host_pools(lib: Any) -> None:
    value = ffi.new("int *")
    for attr in (142, 144):  # HOST_NUMA_MEMORY_POOLS_SUPPORTED, HOST_MEMORY_POOLS_SUPPORTED
        _ok(lib.cuDeviceGetAttribute(value, attr, 0))
        assert value[0] == 1


def test_host_pool_memory_is_pinned_host_memory(lib: Any, stream: Any) -> None:
    rc, pool = _pool(lib, PINNED, HOST)
    _ok(rc)
    d = ffi.new("CUdeviceptr *")
    _ok(lib.cuMemAllocFromPoolAsync(d, 64, pool, stream))
    _ok(lib.cuStreamSynchronize(stream))
    assert _attr(lib, MEMORY_TYPE, d[0], "unsigned int *") == MEMORYTYPE_HOST
    assert _attr(lib, MEMPOOL_HANDLE, d[0], "void **") == ffi.cast("void *", pool)
    host = ffi.cast("unsigned char *", d[0])
    host[63] = 7  # the host reads and writes it in place
    assert host[63] == 7
    # Pool memory is not cuMemAllocHost's: cuMemFreeHost refuses it.
    assert lib.cuMemFreeHost(ffi.cast("void *", d[0])) == CUDA_ERROR_INVALID_VALUE
    _ok(lib.cuMemFreeAsync(d[0], stream))
    _ok(lib.cuStreamSynchronize(stream))
    _ok(lib.cuMemAllocFromPoolAsync(d, 64, pool, stream))
    _ok(lib.cuStreamSynchronize(stream))
    _ok(lib.cuMemFree_v2(d[0]))  # cuMemFree takes any pool's memory


def test_managed_pool_memory_is_managed(lib: Any, stream: Any) -> None:
    rc, pool = _pool(lib, MANAGED, NONE)
    _ok(rc)
    d = ffi.new("CUdeviceptr *")
    _ok(lib.cuMemAllocFromPoolAsync(d, 256, pool, stream))
    assert _attr(lib, IS_MANAGED, d[0]) == 1
    assert _attr(lib, MEMORY_TYPE, d[0], "unsigned int *") == MEMORYTYPE_DEVICE
    _ok(lib.cuMemFreeAsync(d[0], stream))
    _ok(lib.cuStreamSynchronize(stream))


def _props(alloc_type: int, loc: int, ident: int = 0) -> Any:
    props = ffi.new("CUmemPoolProps *")
    props.allocType = alloc_type
    props.location.type = loc
    props.location.id = ident
    return props


def test_pool_create_checks_each_location(lib: Any) -> None:
    out = ffi.new("CUmemoryPool *")
    for props in (_props(PINNED, HOST), _props(PINNED, HOST_NUMA), _props(MANAGED, NONE)):
        _ok(lib.cuMemPoolCreate(out, props))
        _ok(lib.cuMemPoolDestroy(out[0]))
    bad = _props(MANAGED, DEVICE)
    bad.maxSize = 1 << 20  # managed pools take no size limit
    assert lib.cuMemPoolCreate(out, bad) == CUDA_ERROR_INVALID_VALUE
    bad = _props(PINNED, HOST)
    bad.handleTypes = 1  # host pools are never shared
    assert lib.cuMemPoolCreate(out, bad) == CUDA_ERROR_INVALID_VALUE
    bad = _props(MANAGED, NONE)
    bad.handleTypes = 1
    assert lib.cuMemPoolCreate(out, bad) == CUDA_ERROR_INVALID_VALUE
    for props in (_props(PINNED, HOST_NUMA_CURRENT), _props(PINNED, NONE), _props(PINNED, 3, 2)):
        assert lib.cuMemPoolCreate(out, props) == CUDA_ERROR_INVALID_VALUE


def test_set_mem_pool_takes_only_a_pool_of_that_location(lib: Any, stream: Any) -> None:
    out = ffi.new("CUmemoryPool *")
    _ok(lib.cuMemPoolCreate(out, _props(PINNED, HOST)))
    mine = out[0]
    default = _pool(lib, PINNED, HOST)[1]
    assert lib.cuMemSetMemPool(_loc(DEVICE, 0), PINNED, mine) == CUDA_ERROR_INVALID_VALUE
    assert lib.cuDeviceSetMemPool(0, mine) == CUDA_ERROR_INVALID_VALUE
    assert lib.cuMemSetMemPool(_loc(HOST), MANAGED, mine) == CUDA_ERROR_INVALID_VALUE
    _ok(lib.cuMemSetMemPool(_loc(HOST, 3), PINNED, mine))
    assert _pool(lib, PINNED, HOST) == (CUDA_SUCCESS, mine)
    # Destroyed, it is no longer current: the default serves again.
    _ok(lib.cuMemPoolDestroy(mine))
    assert _pool(lib, PINNED, HOST) == (CUDA_SUCCESS, default)


@pytest.mark.parametrize(
    ("name", "version"),
    [
        ("cuMemGetDefaultMemPool", 13000),
        ("cuMemSetMemPool", 13000),
    ],
)
def test_get_proc_address_finds_them(lib: Any, name: str, version: int) -> None:
    fn = ffi.new("void **")
    _ok(lib.cuGetProcAddress(name.encode(), fn, version, 0))
    assert fn[0] != ffi.NULL
