"""Process-wide platform state: zeInit, device discovery and properties."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from ..._driver import DeviceInfo, DeviceLimits
from ..._exceptions import BackendUnavailableError
from . import _errors
from ._constants import (
    _DEVICE_TYPE_VPU,
    _ST_DEVICE_COMPUTE_PROPERTIES,
    _ST_DEVICE_MEMORY_PROPERTIES,
    _ST_DEVICE_PROPERTIES,
    _ST_DRIVER_PROPERTIES,
)
from ._errors import ZE_RESULT_SUCCESS
from ._ffi import ffi
from ._library import ZeLibrary

# -- process-wide platform state ----------------------------------------------


@dataclass
class _Platform:
    """The devices one loaded library exposes, found once after zeInit."""

    zl: ZeLibrary
    #: (driver handle, device handle) in device-index order.
    devices: list[tuple[Any, Any]]


_platforms: dict[int, _Platform] = {}
_platform_lock = threading.Lock()


def probe(zl: ZeLibrary) -> str | None:
    """zeInit(0) and device discovery; None when usable, else why not."""
    with _platform_lock:
        if id(zl.lib) in _platforms:
            return None
        lib = zl.lib
        try:
            init = lib.zeInit
        except AttributeError:
            return "it does not export zeInit (not a Level Zero library)"
        rc = init(0)
        if rc != ZE_RESULT_SUCCESS:
            cached = " (the loader keeps this result for the whole process)" if zl.is_loader else ""
            return f"zeInit(0) returned {_errors.result_name(rc)} ({rc:#x}){cached}"
        count = ffi.new("uint32_t*", 0)
        rc = lib.zeDriverGet(count, ffi.NULL)
        if rc != ZE_RESULT_SUCCESS:
            return f"zeDriverGet returned {_errors.result_name(rc)} ({rc:#x})"
        if count[0] == 0:
            return "zeInit succeeded but no Level Zero driver was found"
        drivers = ffi.new("ze_driver_handle_t[]", count[0])
        rc = lib.zeDriverGet(count, drivers)
        if rc != ZE_RESULT_SUCCESS:
            return f"zeDriverGet returned {_errors.result_name(rc)} ({rc:#x})"
        found: list[tuple[Any, Any]] = []
        for i in range(count[0]):
            ndev = ffi.new("uint32_t*", 0)
            if lib.zeDeviceGet(drivers[i], ndev, ffi.NULL) != ZE_RESULT_SUCCESS or not ndev[0]:
                continue
            devices = ffi.new("ze_device_handle_t[]", ndev[0])
            if lib.zeDeviceGet(drivers[i], ndev, devices) != ZE_RESULT_SUCCESS:
                continue
            for j in range(ndev[0]):
                props = _device_properties(lib, devices[j])
                # NPUs (VPU) speak Level Zero too but run no general kernels.
                if props is not None and props.type != _DEVICE_TYPE_VPU:
                    found.append((drivers[i], devices[j]))
        if not found:
            return "zeInit succeeded but no Level Zero GPU device was found"
        _platforms[id(zl.lib)] = _Platform(zl, found)
        return None


def _platform(zl: ZeLibrary) -> _Platform:
    with _platform_lock:
        return _platforms[id(zl.lib)]


def _device_properties(lib: Any, device: Any) -> Any:
    props = ffi.new("ze_device_properties_t*")
    props.stype = _ST_DEVICE_PROPERTIES
    if lib.zeDeviceGetProperties(device, props) != ZE_RESULT_SUCCESS:
        return None
    return props


def _device_info(zl: ZeLibrary, driver: Any, device: Any) -> DeviceInfo:
    lib = zl.lib
    props = _device_properties(lib, device)
    if props is None:
        raise BackendUnavailableError("zeDeviceGetProperties failed")
    total = _total_memory(lib, device) or int(props.maxMemAllocSize)
    units = int(props.numSlices * props.numSubslicesPerSlice * props.numEUsPerSubslice)
    dprops = ffi.new("ze_driver_properties_t*")
    dprops.stype = _ST_DRIVER_PROPERTIES
    version = ffi.new("ze_api_version_t*")
    extra = [
        ("vendor_id", f"{props.vendorId:#06x}"),
        ("device_id", f"{props.deviceId:#06x}"),
        ("library", zl.describe()),
    ]
    if lib.zeDriverGetProperties(driver, dprops) == ZE_RESULT_SUCCESS:
        extra.append(("driver_version", str(dprops.driverVersion)))
    if lib.zeDriverGetApiVersion(driver, version) == ZE_RESULT_SUCCESS:
        extra.append(("api_version", f"{int(version[0]) >> 16}.{int(version[0]) & 0xFFFF}"))
    return DeviceInfo(
        name=ffi.string(props.name).decode(errors="replace"),
        total_memory=total,
        compute_units=max(units, 1),
        extra=tuple(extra),
    )


#: How to go past maxMemAllocSize, quoted in an allocation's message.
RELAXED_LIMITS_HINT = (
    "maxMemAllocSize; a ze_relaxed_allocation_limits_exp_desc_t with "
    "ZE_RELAXED_ALLOCATION_LIMITS_EXP_FLAG_MAX_SIZE chained to the allocation's "
    "descriptor lifts it where the driver has ZE_relaxed_allocation_limits, and "
    "aruntime does not chain one"
)


def _device_limits(lib: Any, device: Any, props: Any, alignment: int) -> DeviceLimits:
    """The limits zeDeviceGetComputeProperties and the device's properties state."""
    compute = ffi.new("ze_device_compute_properties_t*")
    compute.stype = _ST_DEVICE_COMPUTE_PROPERTIES
    if lib.zeDeviceGetComputeProperties(device, compute) != ZE_RESULT_SUCCESS:
        raise BackendUnavailableError("zeDeviceGetComputeProperties failed")
    local = int(compute.maxSharedLocalMemory)
    return DeviceLimits(
        max_block_threads=int(compute.maxTotalGroupSize),
        max_block=(
            int(compute.maxGroupSizeX),
            int(compute.maxGroupSizeY),
            int(compute.maxGroupSizeZ),
        ),
        max_grid=(
            int(compute.maxGroupCountX),
            int(compute.maxGroupCountY),
            int(compute.maxGroupCountZ),
        ),
        max_shared_mem=0,
        max_shared_mem_optin=local,
        max_allocation=int(props.maxMemAllocSize),
        alloc_alignment=alignment,
        shared_mem_hint=(
            "Level Zero has no per-launch dynamic shared memory; declare local memory in "
            f"the kernel or pass a __local argument (maxSharedLocalMemory: {local} bytes)"
        ),
        allocation_hint=RELAXED_LIMITS_HINT,
    )


def _total_memory(lib: Any, device: Any) -> int:
    count = ffi.new("uint32_t*", 0)
    if lib.zeDeviceGetMemoryProperties(device, count, ffi.NULL) != ZE_RESULT_SUCCESS:
        return 0
    if count[0] == 0:
        return 0
    props = ffi.new("ze_device_memory_properties_t[]", count[0])
    for i in range(count[0]):
        props[i].stype = _ST_DEVICE_MEMORY_PROPERTIES
    if lib.zeDeviceGetMemoryProperties(device, count, props) != ZE_RESULT_SUCCESS:
        return 0
    return sum(int(props[i].totalSize) for i in range(count[0]))


def list_devices(zl: ZeLibrary) -> list[DeviceInfo]:
    platform = _platform(zl)
    return [_device_info(zl, drv, dev) for drv, dev in platform.devices]


def loader_components(zl: ZeLibrary) -> dict[str, str]:
    """The loader's component versions (``"loader"``, ``"validation layer"``...).

    Empty for a directly loaded driver, which has no loader.
    """
    if not zl.is_loader:
        return {}
    count = ffi.new("size_t*", 0)
    if zl.lib.zelLoaderGetVersions(count, ffi.NULL) != ZE_RESULT_SUCCESS or not count[0]:
        return {}
    versions = ffi.new("zel_component_version_t[]", count[0])
    if zl.lib.zelLoaderGetVersions(count, versions) != ZE_RESULT_SUCCESS:
        return {}
    out: dict[str, str] = {}
    for i in range(count[0]):
        v = versions[i].component_lib_version
        out[ffi.string(versions[i].component_name).decode()] = f"{v.major}.{v.minor}.{v.patch}"
    return out
