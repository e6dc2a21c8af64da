"""Device discovery without a context: count, names, attributes."""

from __future__ import annotations

from ..._driver import DeviceInfo, DeviceLimits, cuda_shared_mem_hint
from . import _errors
from ._constants import (
    _CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
    _CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
    _CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
    _CU_DEVICE_ATTRIBUTES_LIMITS,
)
from ._library import CudaLibrary

#: cuMemAlloc's alignment: CUDA guarantees 256 bytes (the programming guide's
#: "Device Memory Accesses"); kernels written for both backends rely on it.
_CUDA_ALIGNMENT = 256


def _device_count(library: CudaLibrary) -> int:
    count = library.ffi.new("int *")
    _check(library, library.lib.cuDeviceGetCount(count), "cuDeviceGetCount")
    return int(count[0])


def _check(library: CudaLibrary, code: int, function: str) -> None:
    if code != 0:
        raise _errors.error_for(
            code, function, backend=library.backend_name, describe=library.describe
        )


def _attributes(library: CudaLibrary, device: int, attrs: tuple[int, ...]) -> list[int]:
    """``cuDeviceGetAttribute`` of each of ``attrs``, in order."""
    value = library.ffi.new("int *")
    out = []
    for attr in attrs:
        _check(
            library, library.lib.cuDeviceGetAttribute(value, attr, device), "cuDeviceGetAttribute"
        )
        out.append(int(value[0]))
    return out


def _device_limits(library: CudaLibrary, device: int, total_memory: int) -> DeviceLimits:
    """The limits the device's attributes state (the largest allocation is its memory)."""
    limits = _attributes(library, device, _CU_DEVICE_ATTRIBUTES_LIMITS)
    threads, bx, by, bz, gx, gy, gz, shared, optin = limits
    optin = max(optin, shared)  # 0 from a driver that predates the attribute
    return DeviceLimits(
        max_block_threads=threads,
        max_block=(bx, by, bz),
        max_grid=(gx, gy, gz),
        max_shared_mem=shared,
        max_shared_mem_optin=optin,
        max_allocation=total_memory,
        alloc_alignment=_CUDA_ALIGNMENT,
        shared_mem_hint=cuda_shared_mem_hint(shared, optin),
        allocation_hint=(
            "the device's memory (cuDeviceTotalMem), which no cuMemAlloc can exceed; "
            "alloc_managed may oversubscribe it where the device pages managed memory"
        ),
    )


def _device_info(library: CudaLibrary, ordinal: int) -> tuple[int, DeviceInfo]:
    lib = library.lib

    def check(code: int, function: str) -> None:
        _check(library, code, function)

    dev = library.ffi.new("CUdevice *")
    check(lib.cuDeviceGet(dev, ordinal), "cuDeviceGet")
    device = int(dev[0])
    name = library.ffi.new("char[256]")
    check(lib.cuDeviceGetName(name, 256, device), "cuDeviceGetName")
    total = library.ffi.new("size_t *")
    check(lib.cuDeviceTotalMem_v2(total, device), "cuDeviceTotalMem_v2")
    sms, major, minor = _attributes(
        library,
        device,
        (
            _CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
            _CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
            _CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
        ),
    )
    version = library.ffi.new("int *")
    check(lib.cuDriverGetVersion(version), "cuDriverGetVersion")
    v = int(version[0])
    info = DeviceInfo(
        name=library.ffi.string(name).decode(errors="replace"),
        total_memory=int(total[0]),
        compute_units=sms,
        extra=(
            ("compute_capability", f"{major}.{minor}"),
            ("driver_version", f"{v // 1000}.{(v % 1000) // 10}"),
            ("ordinal", str(ordinal)),
            ("library", library.path),
        ),
    )
    return device, info


def list_devices(library: CudaLibrary) -> list[DeviceInfo]:
    """What every visible device says about itself (no context is created)."""
    return [_device_info(library, i)[1] for i in range(_device_count(library))]
