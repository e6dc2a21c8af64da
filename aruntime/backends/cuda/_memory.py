"""Device, managed and pinned host memory, and stream-ordered memory from a pool."""

from __future__ import annotations

import bisect
from typing import Any

from . import _errors
from ._base import _CudaBase
from ._constants import (
    _CU_MEM_ALLOCATION_TYPE_PINNED,
    _CU_MEM_ATTACH_GLOBAL,
    _CU_MEM_LOCATION_TYPE_DEVICE,
    _CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
    POOL_KEEP_FRACTION,
)
from ._ffi import CData
from ._handles import _Stream


class _MemoryOps(_CudaBase):
    _pool: CData | None = None  # stream-ordered allocations' pool, made on first use

    # -- memory --------------------------------------------------------------
    def mem_alloc(self, nbytes: int) -> int:
        self._enter("cuMemAlloc_v2")
        out = self._ffi.new("CUdeviceptr *")
        self._alloc_call("cuMemAlloc_v2", lambda: self._lib.cuMemAlloc_v2(out, nbytes), nbytes)
        return int(out[0])

    def mem_alloc_managed(self, nbytes: int) -> int:
        self._enter("cuMemAllocManaged")
        out = self._ffi.new("CUdeviceptr *")
        self._alloc_call(
            "cuMemAllocManaged",
            lambda: self._lib.cuMemAllocManaged(out, nbytes, _CU_MEM_ATTACH_GLOBAL),
            nbytes,
        )
        return int(out[0])

    def mem_free(self, address: int) -> None:
        if not self._enter_release():
            return
        self._release_call("cuMemFree_v2", lambda: self._lib.cuMemFree_v2(address))

    def host_alloc(self, nbytes: int) -> tuple[int, memoryview]:
        self._enter("cuMemHostAlloc")
        pointer = self._host_alloc_raw(nbytes)
        address = int(self._ffi.cast("uintptr_t", pointer))
        with self._state_lock:
            bisect.insort(self._host_starts, address)
            self._host_sizes[address] = nbytes
        return address, memoryview(self._ffi.buffer(self._ffi.cast("char *", pointer), nbytes))

    def host_free(self, address: int) -> None:
        if not self._enter_release():
            return
        with self._state_lock:
            if self._host_sizes.pop(address, None) is not None:
                index = bisect.bisect_left(self._host_starts, address)
                del self._host_starts[index]
        pointer = self._ffi.cast("void *", address)
        self._release_call("cuMemFreeHost", lambda: self._lib.cuMemFreeHost(pointer))

    def host_device_address(self, host_address: int) -> int:
        self._enter("cuMemHostGetDevicePointer_v2")
        out = self._ffi.new("CUdeviceptr *")
        code = self._lib.cuMemHostGetDevicePointer_v2(
            out, self._ffi.cast("void *", host_address), 0
        )
        self._check(code, "cuMemHostGetDevicePointer_v2")
        return int(out[0])

    # -- stream-ordered memory -------------------------------------------------
    # aruntime's own pool, not the device's default one: other libraries in the
    # process (CuPy, PyTorch) tune the default pool for themselves.  Its release
    # threshold keeps freed memory for reuse instead of handing it back to the
    # device at every synchronisation, which is what makes per-request
    # allocation cheap.

    def _mem_pool(self) -> CData:
        pool = self._pool
        if pool is None:
            with self._state_lock:
                pool = self._pool
                if pool is None:
                    pool = self._pool = self._create_pool()
        return pool

    def _create_pool(self) -> CData:
        props = self._ffi.new("CUmemPoolProps *")
        props.allocType = _CU_MEM_ALLOCATION_TYPE_PINNED
        props.location.type = _CU_MEM_LOCATION_TYPE_DEVICE
        props.location.id = self._ordinal
        out = self._ffi.new("CUmemoryPool *")
        self._check(self._lib.cuMemPoolCreate(out, props), "cuMemPoolCreate")
        keep = self._ffi.new("cuuint64_t *", self._info.total_memory // POOL_KEEP_FRACTION)
        code = self._lib.cuMemPoolSetAttribute(out[0], _CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, keep)
        if code:
            self._lib.cuMemPoolDestroy(out[0])
            self._check(code, "cuMemPoolSetAttribute")
        return out[0]

    def mem_alloc_async(self, nbytes: int, stream: Any) -> int:
        assert isinstance(stream, _Stream)
        self._enter("cuMemAllocFromPoolAsync")
        out = self._ffi.new("CUdeviceptr *")
        code = self._lib.cuMemAllocFromPoolAsync(out, nbytes, self._mem_pool(), stream.handle)
        if code == _errors.CUDA_ERROR_OUT_OF_MEMORY:
            raise self._out_of_memory(code, "cuMemAllocFromPoolAsync", nbytes, device=True)
        self._check(code, "cuMemAllocFromPoolAsync")
        return int(out[0])

    def mem_free_async(self, address: int, stream: Any) -> None:
        assert isinstance(stream, _Stream)
        if not self._enter_release():
            return
        self._check(self._lib.cuMemFreeAsync(address, stream.handle), "cuMemFreeAsync")

    def _destroy_mem_pool(self) -> None:
        """At close, after the context drained: idle blocks go back to the device."""
        pool, self._pool = self._pool, None
        if pool is not None:
            self._lib.cuMemPoolDestroy(pool)
