"""Device, shared and host USM allocations."""

from __future__ import annotations

from typing import Any

from .._sim_mappings import mappings_hint
from ._base import _LevelZeroBase
from ._constants import _ALIGNMENT, _ST_DEVICE_MEM_ALLOC_DESC, _ST_HOST_MEM_ALLOC_DESC
from ._errors import ZE_RESULT_SUCCESS
from ._ffi import ffi


class _MemoryOps(_LevelZeroBase):
    def _device_desc(self) -> Any:
        desc = ffi.new("ze_device_mem_alloc_desc_t*")
        desc.stype = _ST_DEVICE_MEM_ALLOC_DESC
        return desc

    def _host_desc(self) -> Any:
        desc = ffi.new("ze_host_mem_alloc_desc_t*")
        desc.stype = _ST_HOST_MEM_ALLOC_DESC
        return desc

    def _request(self, nbytes: int) -> str:
        """The detail an allocation's error carries: the request and what is free,
        or the limit it is over (a shared allocation reaches the driver unchecked)."""
        most = self._limits.max_allocation
        if nbytes > most:
            return f"{nbytes} bytes requested, over {most} bytes ({self._limits.allocation_hint})"
        free, total = self.mem_get_info()
        hint = mappings_hint(self.backend_name)
        return f"{nbytes} bytes requested, {free} of {total} free{hint}"

    def _track(self, address: int, nbytes: int) -> int:
        with self._lock:
            self._sizes[address] = nbytes
            self._used += nbytes
        return address

    def mem_alloc(self, nbytes: int) -> int:
        out = ffi.new("void**")
        rc = self._lib.zeMemAllocDevice(
            self._context, self._device_desc(), nbytes, _ALIGNMENT, self._device, out
        )
        if rc != ZE_RESULT_SUCCESS:  # the detail only for an error: it may read /proc
            self._check(rc, "zeMemAllocDevice", self._request(nbytes))
        return self._track(int(ffi.cast("uintptr_t", out[0])), nbytes)

    def mem_alloc_managed(self, nbytes: int) -> int:
        out = ffi.new("void**")
        rc = self._lib.zeMemAllocShared(
            self._context,
            self._device_desc(),
            self._host_desc(),
            nbytes,
            _ALIGNMENT,
            self._device,
            out,
        )
        if rc != ZE_RESULT_SUCCESS:
            self._check(rc, "zeMemAllocShared", self._request(nbytes))
        return self._track(int(ffi.cast("uintptr_t", out[0])), nbytes)

    def mem_free(self, address: int) -> None:
        # Off the books before the driver has the address back: once zeMemFree
        # returns, another thread may be given the same address and book it,
        # and popping after that would take its entry instead of this one.
        with self._lock:
            nbytes = self._sizes.pop(address, 0)
            self._used -= nbytes
        rc = self._lib.zeMemFree(self._context, ffi.cast("void*", address))
        if rc != ZE_RESULT_SUCCESS and nbytes:
            # Not freed: still this caller's allocation, which nobody else can hold.
            self._track(address, nbytes)
        self._check(rc, "zeMemFree")

    def host_alloc(self, nbytes: int) -> tuple[int, memoryview]:
        out = ffi.new("void**")
        self._check(
            self._lib.zeMemAllocHost(self._context, self._host_desc(), nbytes, _ALIGNMENT, out),
            "zeMemAllocHost",
            f"{nbytes} bytes of host memory requested",
        )
        address = int(ffi.cast("uintptr_t", out[0]))
        return address, memoryview(ffi.buffer(out[0], nbytes)).cast("B")

    def host_free(self, address: int) -> None:
        self._check(self._lib.zeMemFree(self._context, ffi.cast("void*", address)), "zeMemFree")

    def host_device_address(self, host_address: int) -> int:
        # USM host allocations are device-accessible at the same address.
        return host_address
