"""cuda-sim: pools of pinned host and managed memory (each location's default
and current pool, CUDA 13's cuMemGetMemPool/cuMemSetMemPool), and the
managed-memory calls: cuMemAdvise, prefetches, batched discards and
cuMemRangeGetAttribute(s)."""

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


def _managed(lib: Any, nbytes: int) -> int:
    d = ffi.new("CUdeviceptr *")
    _ok(lib.cuMemAllocManaged(d, nbytes, 1))
    return int(d[0])


def _range_int(lib: Any, attr: int, ptr: int, count: int) -> int:
    out = ffi.new("int *")
    _ok(lib.cuMemRangeGetAttribute(out, 4, attr, ptr, count))
    return int(out[0])


def test_advice_is_reported_where_the_whole_range_agrees(lib: Any) -> None:
    ptr = _managed(lib, 4 * PAGE)
    try:
        assert _range_int(lib, READ_MOSTLY, ptr, 4 * PAGE) == 0
        _ok(lib.cuMemAdvise_v2(ptr, PAGE, SET_READ_MOSTLY, _loc(NONE)[0]))
        assert _range_int(lib, READ_MOSTLY, ptr, PAGE) == 1
        assert _range_int(lib, READ_MOSTLY, ptr, 2 * PAGE) == 0
        # A range is widened to whole pages: one byte of page 1 advises all of it.
        _ok(lib.cuMemAdvise_v2(ptr + PAGE + 5, 1, SET_PREFERRED, _loc(DEVICE, 0)[0]))
        assert _range_int(lib, PREFERRED, ptr + PAGE, PAGE) == 0
        assert _range_int(lib, PREFERRED_TYPE, ptr + PAGE, PAGE) == DEVICE
        assert _range_int(lib, PREFERRED, ptr, 2 * PAGE) == INVALID
        _ok(lib.cuMemAdvise_v2(ptr, 4 * PAGE, SET_PREFERRED, _loc(HOST_NUMA, 0)[0]))
        assert _range_int(lib, PREFERRED, ptr, 4 * PAGE) == CPU
        assert _range_int(lib, PREFERRED_TYPE, ptr, 4 * PAGE) == HOST_NUMA
        assert _range_int(lib, PREFERRED_ID, ptr, 4 * PAGE) == 0
        _ok(lib.cuMemAdvise_v2(ptr, 4 * PAGE, UNSET_PREFERRED, _loc(NONE)[0]))
        assert _range_int(lib, PREFERRED_TYPE, ptr, 4 * PAGE) == NONE
        _ok(lib.cuMemAdvise_v2(ptr, 2 * PAGE, SET_ACCESSED_BY, _loc(DEVICE, 0)[0]))
        _ok(lib.cuMemAdvise_v2(ptr, 4 * PAGE, SET_ACCESSED_BY, _loc(HOST)[0]))
        who = ffi.new("int[3]")
        _ok(lib.cuMemRangeGetAttribute(who, 12, ACCESSED_BY, ptr, 2 * PAGE))
        assert list(who) == [0, CPU, INVALID]
        _ok(lib.cuMemRangeGetAttribute(who, 12, ACCESSED_BY, ptr, 4 * PAGE))
        assert list(who) == [CPU, INVALID, INVALID]
        # Several at once.
        a, b = ffi.new("int *"), ffi.new("int *")
        data = ffi.new("void *[2]", [a, b])
        sizes = ffi.new("size_t[2]", [4, 4])
        attrs = ffi.new("int[2]", [READ_MOSTLY, PREFERRED])
        _ok(lib.cuMemRangeGetAttributes(data, sizes, attrs, 2, ptr, PAGE))
        assert (a[0], b[0]) == (1, INVALID)
    finally:
        _ok(lib.cuMemFree_v2(ptr))


def test_a_new_allocation_at_a_freed_address_has_no_advice(lib: Any) -> None:
    ptr = _managed(lib, 4 * PAGE)
    _ok(lib.cuMemAdvise_v2(ptr, PAGE, SET_READ_MOSTLY, _loc(NONE)[0]))
    _ok(lib.cuMemFree_v2(ptr))
    held: list[int] = []
    try:
        # The kernel hands a freed mapping's range out again for one the same size.
        while len(held) < 8 and ptr not in held:
            held.append(_managed(lib, 4 * PAGE))
        assert ptr in held
        assert _range_int(lib, READ_MOSTLY, ptr, PAGE) == 0
    finally:
        for p in held:
            _ok(lib.cuMemFree_v2(p))


def test_advice_and_queries_are_checked(lib: Any) -> None:
    ptr = _managed(lib, PAGE)
    plain = ffi.new("CUdeviceptr *")
    _ok(lib.cuMemAlloc_v2(plain, PAGE))
    try:
        out = ffi.new("int *")
        # Only managed memory, inside its allocation.
        assert lib.cuMemAdvise_v2(plain[0], 4, SET_READ_MOSTLY, _loc(NONE)[0]) == (
            CUDA_ERROR_INVALID_VALUE
        )
        assert lib.cuMemAdvise_v2(ptr, PAGE + 1, SET_READ_MOSTLY, _loc(NONE)[0]) == (
            CUDA_ERROR_INVALID_VALUE
        )
        assert lib.cuMemRangeGetAttribute(out, 4, READ_MOSTLY, plain[0], 4) == (
            CUDA_ERROR_INVALID_VALUE
        )
        assert lib.cuMemAdvise_v2(ptr, PAGE, 9, _loc(NONE)[0]) == CUDA_ERROR_INVALID_VALUE
        assert lib.cuMemAdvise_v2(ptr, PAGE, SET_PREFERRED, _loc(DEVICE, 42)[0]) == (
            CUDA_ERROR_INVALID_DEVICE
        )
        # Accessed-by takes a device or the host only.
        assert lib.cuMemAdvise_v2(ptr, PAGE, SET_ACCESSED_BY, _loc(HOST_NUMA, 0)[0]) == (
            CUDA_ERROR_INVALID_VALUE
        )
        assert lib.cuMemRangeGetAttribute(out, 8, READ_MOSTLY, ptr, PAGE) == (
            CUDA_ERROR_INVALID_VALUE
        )
        assert lib.cuMemRangeGetAttribute(out, 6, ACCESSED_BY, ptr, PAGE) == (
            CUDA_ERROR_INVALID_VALUE
        )
        assert lib.cuMemRangeGetAttribute(out, 4, 99, ptr, PAGE) == CUDA_ERROR_INVALID_VALUE
    finally:
        _ok(lib.cuMemFree_v2(plain[0]))
        _ok(lib.cuMemFree_v2(ptr))


def test_prefetches_record_the_last_location_asked_for(lib: Any, stream: Any) -> None:
    ptr = _managed(lib, 2 * PAGE)
    try:
        assert _range_int(lib, LAST_PREFETCH, ptr, 2 * PAGE) == INVALID
        _ok(lib.cuMemPrefetchAsync_v2(ptr, PAGE, _loc(DEVICE, 0)[0], 0, stream))
        assert _range_int(lib, LAST_PREFETCH, ptr, PAGE) == 0
        assert _range_int(lib, LAST_PREFETCH, ptr, 2 * PAGE) == INVALID
        assert lib.cuMemPrefetchAsync_v2(ptr, PAGE, _loc(DEVICE, 0)[0], 1, stream) == (
            CUDA_ERROR_INVALID_VALUE
        )
        ptrs = ffi.new("CUdeviceptr[2]", [ptr, ptr + PAGE])
        sizes = ffi.new("size_t[2]", [PAGE, PAGE])
        locs = ffi.new("CUmemLocation[2]", [{"type": HOST, "id": 0}, {"type": DEVICE, "id": 0}])
        idxs = ffi.new("size_t[2]", [0, 1])
        _ok(lib.cuMemPrefetchBatchAsync(ptrs, sizes, 2, locs, idxs, 2, 0, stream))
        assert _range_int(lib, LAST_PREFETCH, ptr, PAGE) == CPU
        assert _range_int(lib, LAST_PREFETCH_TYPE, ptr, PAGE) == HOST
        assert _range_int(lib, LAST_PREFETCH, ptr + PAGE, PAGE) == 0
        # The indices start at 0 and rise; the legacy stream is refused.
        bad = ffi.new("size_t[2]", [0, 0])
        assert lib.cuMemPrefetchBatchAsync(ptrs, sizes, 2, locs, bad, 2, 0, stream) == (
            CUDA_ERROR_INVALID_VALUE
        )
        legacy = ffi.cast("CUstream", 1)
        assert lib.cuMemPrefetchBatchAsync(ptrs, sizes, 2, locs, idxs, 2, 0, legacy) == (
            CUDA_ERROR_INVALID_VALUE
        )
        assert lib.cuMemDiscardBatchAsync(ptrs, sizes, 2, 0, ffi.NULL) == CUDA_ERROR_INVALID_VALUE
        _ok(lib.cuMemDiscardBatchAsync(ptrs, sizes, 2, 0, stream))
        _ok(lib.cuStreamSynchronize(stream))
    finally:
        _ok(lib.cuMemFree_v2(ptr))


@pytest.mark.parametrize(
    ("name", "version"),
    [
        ("cuMemGetDefaultMemPool", 13000),
        ("cuMemSetMemPool", 13000),
        ("cuMemAdvise", 12020),
        ("cuMemPrefetchAsync", 12020),
        ("cuMemPrefetchBatchAsync", 13000),
        ("cuMemDiscardBatchAsync", 13000),
        ("cuMemDiscardAndPrefetchBatchAsync", 13000),
        ("cuMemRangeGetAttribute", 8000),
        ("cuMemRangeGetAttributes", 8000),
    ],
)
def test_get_proc_address_finds_them(lib: Any, name: str, version: int) -> None:
    fn = ffi.new("void **")
    _ok(lib.cuGetProcAddress(name.encode(), fn, version, 0))
    assert fn[0] != ffi.NULL
