"""Device, managed and pinned host memory."""

from __future__ import annotations

import bisect

from ._base import _CudaBase
from ._constants import _CU_MEM_ATTACH_GLOBAL


class _MemoryOps(_CudaBase):
    # -- memory --------------------------------------------------------------
    def mem_alloc(self, nbytes: int) -> int:
        self._enter("cuMemAlloc_v2")
        out = self._ffi.new("CUdeviceptr *")
        self._alloc_call("cuMemAlloc_v2", lambda: self._lib.cuMemAlloc_v2(out, nbytes))
        return int(out[0])

    def mem_alloc_managed(self, nbytes: int) -> int:
        self._enter("cuMemAllocManaged")
        out = self._ffi.new("CUdeviceptr *")
        self._alloc_call(
            "cuMemAllocManaged",
            lambda: self._lib.cuMemAllocManaged(out, nbytes, _CU_MEM_ATTACH_GLOBAL),
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
