"""Many small allocations on a software driver, through its C API (run in a child).

    python sim_small_allocs_child.py DRIVER SCENARIO COUNT [KIND,...]

DRIVER is ``cuda-sim`` or ``levelzero-sim`` (opened directly, no loader);
SCENARIO ``million`` or ``reuse``; the kinds default to all the driver has
(device, managed or shared, host).  Prints one JSON object with what the
scenario saw.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from typing import Any

import cffi

# Run as a script: its folder (tests/ffi) is first on sys.path.
from _cudasim_support import ffi as cu_ffi
from _cudasim_support import sim_library_path

from aruntime._native import native_library_path

ZE_CDEF = """
typedef int ze_result_t;
typedef void *ze_handle;
typedef struct { uint32_t stype; const void *pNext; uint32_t flags; } ze_flags_desc_t;
typedef struct { uint32_t stype; const void *pNext; uint32_t flags; uint32_t ordinal; }
    ze_device_mem_alloc_desc_t;
ze_result_t zeInit(uint32_t);
ze_result_t zeDriverGet(uint32_t *, ze_handle *);
ze_result_t zeDeviceGet(ze_handle, uint32_t *, ze_handle *);
ze_result_t zeContextCreate(ze_handle, const ze_flags_desc_t *, ze_handle *);
ze_result_t zeMemAllocDevice(ze_handle, const ze_device_mem_alloc_desc_t *, size_t, size_t,
    ze_handle, void **);
ze_result_t zeMemAllocHost(ze_handle, const ze_flags_desc_t *, size_t, size_t, void **);
ze_result_t zeMemAllocShared(ze_handle, const ze_device_mem_alloc_desc_t *,
    const ze_flags_desc_t *, size_t, size_t, ze_handle, void **);
ze_result_t zeMemFree(ze_handle, void *);
"""
ST_CONTEXT_DESC, ST_DEVICE_MEM, ST_HOST_MEM = 0xD, 0x15, 0x16
SIM_MEMORY = 4096 << 20  # ARUNTIME_SIM_MEMORY_MB's default


class Sim:
    """alloc(kind, size) -> address or None (out of memory); free(address)."""

    kinds: tuple[str, ...]
    alloc: Callable[[str, int], int | None]
    free: Callable[[int], None]

    def used(self) -> int | None:
        """Device memory in use as the driver reports it (None: no such query)."""
        return None


class CudaSim(Sim):
    kinds = ("device", "managed", "host")

    def __init__(self) -> None:
        lib = self.lib = cu_ffi.dlopen(str(sim_library_path()))
        assert lib.cuInit(0) == 0
        ctx = cu_ffi.new("CUcontext *")
        assert lib.cuDevicePrimaryCtxRetain(ctx, 0) == 0
        assert lib.cuCtxSetCurrent(ctx[0]) == 0
        self._dp, self._hp = cu_ffi.new("CUdeviceptr *"), cu_ffi.new("void **")
        self._host: set[int] = set()

    def alloc(self, kind: str, size: int) -> int | None:
        lib = self.lib
        if kind == "host":
            rc = lib.cuMemAllocHost_v2(self._hp, size)
            address = int(cu_ffi.cast("uintptr_t", self._hp[0]))
            self._host.add(address)
        elif kind == "managed":
            rc, address = lib.cuMemAllocManaged(self._dp, size, 1), self._dp[0]
        else:
            rc, address = lib.cuMemAlloc_v2(self._dp, size), self._dp[0]
        assert rc in (0, 2), rc  # CUDA_ERROR_OUT_OF_MEMORY
        return int(address) if rc == 0 else None

    def free(self, address: int) -> None:
        if address in self._host:
            self._host.discard(address)
            assert self.lib.cuMemFreeHost(cu_ffi.cast("void *", address)) == 0
        else:
            assert self.lib.cuMemFree_v2(address) == 0

    def used(self) -> int:
        free, total = cu_ffi.new("size_t *"), cu_ffi.new("size_t *")
        assert self.lib.cuMemGetInfo_v2(free, total) == 0
        return int(total[0] - free[0])


class ZeSim(Sim):
    kinds = ("device", "shared", "host")

    def __init__(self) -> None:
        ffi = self.ffi = cffi.FFI()
        ffi.cdef(ZE_CDEF)
        ze = self.ze = ffi.dlopen(str(native_library_path("libze_aruntime_sim.so")))
        assert ze.zeInit(0) == 0
        n = ffi.new("uint32_t *", 1)
        drv, dev, ctx = ffi.new("ze_handle *"), ffi.new("ze_handle *"), ffi.new("ze_handle *")
        assert ze.zeDriverGet(n, drv) == 0 and ze.zeDeviceGet(drv[0], n, dev) == 0
        desc = ffi.new("ze_flags_desc_t *", {"stype": ST_CONTEXT_DESC})
        assert ze.zeContextCreate(drv[0], desc, ctx) == 0
        self.ctx, self.dev = ctx[0], dev[0]
        self._ddesc = ffi.new("ze_device_mem_alloc_desc_t *", {"stype": ST_DEVICE_MEM})
        self._hdesc = ffi.new("ze_flags_desc_t *", {"stype": ST_HOST_MEM})
        self._out = ffi.new("void **")

    def alloc(self, kind: str, size: int) -> int | None:
        ze, out = self.ze, self._out
        if kind == "host":
            rc = ze.zeMemAllocHost(self.ctx, self._hdesc, size, 0, out)
        elif kind == "shared":
            rc = ze.zeMemAllocShared(self.ctx, self._ddesc, self._hdesc, size, 0, self.dev, out)
        else:
            rc = ze.zeMemAllocDevice(self.ctx, self._ddesc, size, 0, self.dev, out)
        assert rc in (0, 0x70000003), hex(rc)  # ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY
        return int(self.ffi.cast("uintptr_t", out[0])) if rc == 0 else None

    def free(self, address: int) -> None:
        assert self.ze.zeMemFree(self.ctx, self.ffi.cast("void *", address)) == 0


def mappings() -> int:
    with open("/proc/self/maps") as f:
        return sum(1 for _ in f)


def whole_memory_free(sim: Sim) -> bool:
    """Whether one allocation of the device's whole memory succeeds (then freed)."""
    p = sim.alloc("device", SIM_MEMORY)
    if p is not None:
        sim.free(p)
    return p is not None


def million(sim: Sim, count: int, kinds: tuple[str, ...]) -> dict[str, Any]:
    """count live 256-byte allocations of each kind, then all freed."""
    seen: dict[str, Any] = {"used_before": sim.used(), "maps_before": mappings()}
    for kind in kinds:
        start = time.perf_counter()
        live = []
        for _ in range(count):
            p = sim.alloc(kind, 256)
            if p is None:
                break
            live.append(p)
        seen[kind] = {
            "live": len(live),
            "distinct": len(set(live)),
            "misaligned": sum(1 for p in live if p % 256),
            "maps_added": mappings() - seen["maps_before"],
            "used": sim.used(),
            "whole_memory_free": kind == "host" or whole_memory_free(sim),
        }
        for p in live:
            sim.free(p)
        seen[kind]["seconds"] = time.perf_counter() - start
    seen["used_after"] = sim.used()
    seen["whole_memory_free_after"] = whole_memory_free(sim)
    seen["maps_after"] = mappings()
    return seen


def reuse(sim: Sim, count: int, kinds: tuple[str, ...]) -> dict[str, Any]:
    """A freed address is handed out again: at once, and after others come and go."""
    seen: dict[str, Any] = {}
    for kind in kinds:
        a, b = sim.alloc(kind, 256), sim.alloc(kind, 256)
        assert a is not None and b is not None
        sim.free(a)
        again = sim.alloc(kind, 200)  # another size of the same class
        batch = [sim.alloc(kind, 256) for _ in range(count)]
        for p in batch:
            assert p is not None
            sim.free(p)
        later = [sim.alloc(kind, 256) for _ in range(count)]
        seen[kind] = {"again": again == a, "batch_reused": sorted(later) == sorted(batch)}
        for p in (again, b, *later):
            assert p is not None
            sim.free(p)
    return seen


def main() -> None:
    driver, scenario, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    sim: Sim = CudaSim() if driver == "cuda-sim" else ZeSim()
    kinds = tuple(sys.argv[4].split(",")) if len(sys.argv) > 4 else sim.kinds
    run = {"million": million, "reuse": reuse}[scenario]
    print(json.dumps(run(sim, count, kinds)))


if __name__ == "__main__":
    main()
