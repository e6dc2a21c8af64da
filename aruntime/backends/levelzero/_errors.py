"""The one table that turns a ``ze_result_t`` into aruntime's error tree.

Only :mod:`._driver` raises through it.  Each message names the Level Zero
function, the result code's name and its value::

    zeMemAllocDevice failed: ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY (0x70000003)
"""

from __future__ import annotations

from typing import NoReturn

from ..._exceptions import (
    DeviceLostError,
    DriverError,
    NotSupportedError,
    OutOfMemoryError,
)
from .._sim_faults import fault_report, readonly_error

__all__ = ["RESULTS", "ZE_RESULT_NOT_READY", "ZE_RESULT_SUCCESS", "error_for", "raise_result"]

ZE_RESULT_SUCCESS = 0
ZE_RESULT_NOT_READY = 1
#: levelzero-sim's own result (ffi/sim/engine.h, ARSIM_READONLY_WRITE_RESULT).
_SIM_READONLY_WRITE = 0x41520001

#: value -> (name, exception class).  Codes absent here raise plain DriverError.
RESULTS: dict[int, tuple[str, type[DriverError]]] = {
    0x70000001: ("ZE_RESULT_ERROR_DEVICE_LOST", DeviceLostError),
    0x70000002: ("ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY", OutOfMemoryError),
    0x70000003: ("ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY", OutOfMemoryError),
    0x70000004: ("ZE_RESULT_ERROR_MODULE_BUILD_FAILURE", DriverError),
    0x70000005: ("ZE_RESULT_ERROR_MODULE_LINK_FAILURE", DriverError),
    # The device must be reset before it can be used again: as sticky as a loss.
    0x70000006: ("ZE_RESULT_ERROR_DEVICE_REQUIRES_RESET", DeviceLostError),
    0x70000007: ("ZE_RESULT_ERROR_DEVICE_IN_LOW_POWER_STATE", DriverError),
    0x7FF00001: ("ZE_RESULT_EXP_ERROR_DEVICE_IS_NOT_VERTEX", DriverError),
    0x7FF00002: ("ZE_RESULT_EXP_ERROR_VERTEX_IS_NOT_DEVICE", DriverError),
    0x7FF00003: ("ZE_RESULT_EXP_ERROR_REMOTE_DEVICE", DriverError),
    0x70010000: ("ZE_RESULT_ERROR_INSUFFICIENT_PERMISSIONS", DriverError),
    0x70010001: ("ZE_RESULT_ERROR_NOT_AVAILABLE", NotSupportedError),
    0x70020000: ("ZE_RESULT_ERROR_DEPENDENCY_UNAVAILABLE", NotSupportedError),
    0x70020001: ("ZE_RESULT_WARNING_DROPPED_DATA", DriverError),
    0x78000001: ("ZE_RESULT_ERROR_UNINITIALIZED", DriverError),
    0x78000002: ("ZE_RESULT_ERROR_UNSUPPORTED_VERSION", NotSupportedError),
    0x78000003: ("ZE_RESULT_ERROR_UNSUPPORTED_FEATURE", NotSupportedError),
    0x78000004: ("ZE_RESULT_ERROR_INVALID_ARGUMENT", DriverError),
    0x78000005: ("ZE_RESULT_ERROR_INVALID_NULL_HANDLE", DriverError),
    0x78000006: ("ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE", DriverError),
    0x78000007: ("ZE_RESULT_ERROR_INVALID_NULL_POINTER", DriverError),
    0x78000008: ("ZE_RESULT_ERROR_INVALID_SIZE", DriverError),
    0x78000009: ("ZE_RESULT_ERROR_UNSUPPORTED_SIZE", NotSupportedError),
    0x7800000A: ("ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT", NotSupportedError),
    0x7800000B: ("ZE_RESULT_ERROR_INVALID_SYNCHRONIZATION_OBJECT", DriverError),
    0x7800000C: ("ZE_RESULT_ERROR_INVALID_ENUMERATION", DriverError),
    0x7800000D: ("ZE_RESULT_ERROR_UNSUPPORTED_ENUMERATION", NotSupportedError),
    0x7800000E: ("ZE_RESULT_ERROR_UNSUPPORTED_IMAGE_FORMAT", NotSupportedError),
    0x7800000F: ("ZE_RESULT_ERROR_INVALID_NATIVE_BINARY", DriverError),
    0x78000010: ("ZE_RESULT_ERROR_INVALID_GLOBAL_NAME", DriverError),
    0x78000011: ("ZE_RESULT_ERROR_INVALID_KERNEL_NAME", DriverError),
    0x78000012: ("ZE_RESULT_ERROR_INVALID_FUNCTION_NAME", DriverError),
    0x78000013: ("ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION", DriverError),
    0x78000014: ("ZE_RESULT_ERROR_INVALID_GLOBAL_WIDTH_DIMENSION", DriverError),
    0x78000015: ("ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_INDEX", DriverError),
    0x78000016: ("ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE", DriverError),
    0x78000017: ("ZE_RESULT_ERROR_INVALID_KERNEL_ATTRIBUTE_VALUE", DriverError),
    0x78000018: ("ZE_RESULT_ERROR_INVALID_MODULE_UNLINKED", DriverError),
    0x78000019: ("ZE_RESULT_ERROR_INVALID_COMMAND_LIST_TYPE", DriverError),
    0x7800001A: ("ZE_RESULT_ERROR_OVERLAPPING_REGIONS", DriverError),
    0x7800001B: ("ZE_RESULT_WARNING_ACTION_REQUIRED", DriverError),
    0x7FFFFFFE: ("ZE_RESULT_ERROR_UNKNOWN", DriverError),
}


def result_name(code: int) -> str:
    """The symbolic name of a result code (``"ZE_RESULT_NOT_READY"``...)."""
    if code == ZE_RESULT_SUCCESS:
        return "ZE_RESULT_SUCCESS"
    if code == ZE_RESULT_NOT_READY:
        return "ZE_RESULT_NOT_READY"
    entry = RESULTS.get(code)
    return entry[0] if entry else f"unknown ze_result_t {code:#x}"


def error_for(code: int, function: str, backend: str, detail: str = "") -> DriverError:
    """The exception (not raised) for a failed call.

    levelzero-sim's own code for a kernel it stopped at a store into memory
    its launch declared read-only (``launch(reads=...)`` under race
    checking) is a :class:`StoreHazardError`.
    """
    if code == _SIM_READONLY_WRITE:
        return readonly_error(backend, code, "ARSIM_READONLY_WRITE_RESULT", function)
    name, cls = RESULTS.get(code, (result_name(code), DriverError))
    message = f"{function} failed: {name} ({code:#x})"
    if detail:
        message = f"{message}: {detail}"
    if code == 0x70000001 and (report := fault_report(backend)):
        message = f"{message} ({report})"
    return cls(message, backend=backend, code=code, name=name, function=function)


def raise_result(code: int, function: str, backend: str, detail: str = "") -> NoReturn:
    raise error_for(code, function, backend, detail)
