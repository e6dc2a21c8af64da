"""Device discovery without a context: count, names, attributes."""

from __future__ import annotations

from ..._driver import DeviceInfo
from . import _errors
from ._constants import (
    _CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
    _CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
    _CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
)
from ._library import CudaLibrary


def _device_count(library: CudaLibrary) -> int:
    count = library.ffi.new("int *")
    code = library.lib.cuDeviceGetCount(count)
    if code != 0:
        raise _errors.error_for(
            code, "cuDeviceGetCount", backend=library.backend_name, describe=library.describe
        )
    return int(count[0])


def _device_info(library: CudaLibrary, ordinal: int) -> tuple[int, DeviceInfo]:
    lib = library.lib

    def check(code: int, function: str) -> None:
        if code != 0:
            raise _errors.error_for(
                code, function, backend=library.backend_name, describe=library.describe
            )

    dev = library.ffi.new("CUdevice *")
    check(lib.cuDeviceGet(dev, ordinal), "cuDeviceGet")
    device = int(dev[0])
    name = library.ffi.new("char[256]")
    check(lib.cuDeviceGetName(name, 256, device), "cuDeviceGetName")
    total = library.ffi.new("size_t *")
    check(lib.cuDeviceTotalMem_v2(total, device), "cuDeviceTotalMem_v2")
    value = library.ffi.new("int *")

    def attribute(attr: int) -> int:
        check(lib.cuDeviceGetAttribute(value, attr, device), "cuDeviceGetAttribute")
        return int(value[0])

    sms = attribute(_CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
    major = attribute(_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)
    minor = attribute(_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)
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
