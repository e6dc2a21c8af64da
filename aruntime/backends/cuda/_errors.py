"""CUresult codes mapped onto aruntime's error tree, in one table.

Every ``CUresult`` a driver call returns goes through :func:`error_for`.  The
message names the function and carries the driver's own ``cuGetErrorName``
and ``cuGetErrorString``; the table only chooses the exception class:

* out of memory -> :class:`OutOfMemoryError`;
* not supported (and a symbol the loaded driver lacks) -> :class:`NotSupportedError`;
* sticky errors, after which the context is unusable until the process
  ends -> :class:`DeviceLostError`;
* everything else -> :class:`DriverError`.
"""

from __future__ import annotations

from collections.abc import Callable

from ..._exceptions import (
    DeviceLostError,
    DriverError,
    NotSupportedError,
    OutOfMemoryError,
)
from .._sim_faults import fault_report, readonly_error

__all__ = [
    "CUDA_ERROR_DEINITIALIZED",
    "CUSIM_ERROR_READONLY_WRITE",
    "CUDA_ERROR_INVALID_DEVICE",
    "CUDA_ERROR_INVALID_VALUE",
    "CUDA_ERROR_NOT_FOUND",
    "CUDA_ERROR_NOT_READY",
    "CUDA_ERROR_OUT_OF_MEMORY",
    "CUDA_ERROR_NOT_SUPPORTED",
    "CUDA_ERROR_NO_DEVICE",
    "CUDA_ERROR_STUB_LIBRARY",
    "CUDA_SUCCESS",
    "ERROR_CLASSES",
    "KNOWN_NAMES",
    "error_for",
    "is_sticky",
    "missing_symbol_error",
]

CUDA_SUCCESS = 0
CUDA_ERROR_INVALID_VALUE = 1
#: cuda-sim's own code for a launch stopped at a store into memory its
#: ``reads=`` declared read-only (ffi/sim/engine.h, ARSIM_READONLY_WRITE_RESULT).
CUSIM_ERROR_READONLY_WRITE = 0x41520001
CUDA_ERROR_DEINITIALIZED = 4
CUDA_ERROR_OUT_OF_MEMORY = 2
CUDA_ERROR_STUB_LIBRARY = 34
CUDA_ERROR_NO_DEVICE = 100
CUDA_ERROR_INVALID_DEVICE = 101
CUDA_ERROR_NOT_FOUND = 500
CUDA_ERROR_NOT_READY = 600
CUDA_ERROR_NOT_SUPPORTED = 801

#: Names of the codes the table or the backend relies on, used when the
#: library cannot name a code itself (a stub, or a code newer than it).
KNOWN_NAMES: dict[int, str] = {
    0: "CUDA_SUCCESS",
    1: "CUDA_ERROR_INVALID_VALUE",
    2: "CUDA_ERROR_OUT_OF_MEMORY",
    3: "CUDA_ERROR_NOT_INITIALIZED",
    4: "CUDA_ERROR_DEINITIALIZED",
    34: "CUDA_ERROR_STUB_LIBRARY",
    100: "CUDA_ERROR_NO_DEVICE",
    101: "CUDA_ERROR_INVALID_DEVICE",
    200: "CUDA_ERROR_INVALID_IMAGE",
    201: "CUDA_ERROR_INVALID_CONTEXT",
    209: "CUDA_ERROR_NO_BINARY_FOR_GPU",
    214: "CUDA_ERROR_ECC_UNCORRECTABLE",
    222: "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
    400: "CUDA_ERROR_INVALID_HANDLE",
    500: "CUDA_ERROR_NOT_FOUND",
    600: "CUDA_ERROR_NOT_READY",
    700: "CUDA_ERROR_ILLEGAL_ADDRESS",
    701: "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
    702: "CUDA_ERROR_LAUNCH_TIMEOUT",
    709: "CUDA_ERROR_CONTEXT_IS_DESTROYED",
    710: "CUDA_ERROR_ASSERT",
    714: "CUDA_ERROR_HARDWARE_STACK_ERROR",
    715: "CUDA_ERROR_ILLEGAL_INSTRUCTION",
    716: "CUDA_ERROR_MISALIGNED_ADDRESS",
    717: "CUDA_ERROR_INVALID_ADDRESS_SPACE",
    718: "CUDA_ERROR_INVALID_PC",
    719: "CUDA_ERROR_LAUNCH_FAILED",
    801: "CUDA_ERROR_NOT_SUPPORTED",
    804: "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE",
    999: "CUDA_ERROR_UNKNOWN",
}

#: The one table: code -> exception class.  Codes not listed are DriverError.
ERROR_CLASSES: dict[int, type[DriverError]] = {
    2: OutOfMemoryError,  # OUT_OF_MEMORY
    801: NotSupportedError,  # NOT_SUPPORTED
    804: NotSupportedError,  # COMPAT_NOT_SUPPORTED_ON_DEVICE
    209: NotSupportedError,  # NO_BINARY_FOR_GPU: the image has no code for this device
    222: NotSupportedError,  # UNSUPPORTED_PTX_VERSION: PTX newer than the driver
    # Sticky: the CUDA context is corrupt and every later call fails, so the
    # device is as good as lost for this process.
    4: DeviceLostError,  # DEINITIALIZED: the driver is shutting down
    214: DeviceLostError,  # ECC_UNCORRECTABLE
    700: DeviceLostError,  # ILLEGAL_ADDRESS
    702: DeviceLostError,  # LAUNCH_TIMEOUT
    710: DeviceLostError,  # ASSERT: a device-side assert() failed
    709: DeviceLostError,  # CONTEXT_IS_DESTROYED
    714: DeviceLostError,  # HARDWARE_STACK_ERROR
    715: DeviceLostError,  # ILLEGAL_INSTRUCTION
    716: DeviceLostError,  # MISALIGNED_ADDRESS
    717: DeviceLostError,  # INVALID_ADDRESS_SPACE
    718: DeviceLostError,  # INVALID_PC
    719: DeviceLostError,  # LAUNCH_FAILED
}

#: Asks the library for ``(name, description)`` of a code; None where it cannot.
Describer = Callable[[int], "tuple[str, str] | None"]


def is_sticky(code: int) -> bool:
    """Whether the table calls ``code`` sticky (the context is lost)."""
    return ERROR_CLASSES.get(code) is DeviceLostError


def error_for(
    code: int,
    function: str,
    *,
    backend: str,
    describe: Describer | None = None,
    sticky: bool = True,
    detail: str = "",
) -> DriverError:
    """The exception for ``code`` returned by ``function`` (not raised).

    ``detail`` is what the driver said beyond the code (a module load's JIT
    error log); it ends the message.

    ``sticky=False`` says the caller checked that the context survived a
    code the table calls sticky (the sim's injected launch failure does):
    the error is then a plain :class:`DriverError`.  cuda-sim's own
    ``CUSIM_ERROR_READONLY_WRITE`` (a kernel stopped at a store into memory
    its launch declared read-only) is a :class:`StoreHazardError`.
    """
    described = describe(code) if describe is not None else None
    if described is None:
        name = KNOWN_NAMES.get(code, f"CUresult {code}")
        text = "no description (the driver did not name this code)"
    else:
        name, text = described
    if code == CUSIM_ERROR_READONLY_WRITE:
        return readonly_error(backend, code, "CUSIM_ERROR_READONLY_WRITE", function)
    cls = ERROR_CLASSES.get(code, DriverError)
    if cls is DeviceLostError and not sticky:
        cls = DriverError
    message = f"{function} failed with {name} ({code}): {text}"
    if detail:
        message += f"; {detail}"
    if cls is DeviceLostError:
        message += "; the CUDA context is unusable for the rest of this process"
        if code in (700, 716) and (report := fault_report(backend)):
            message += f" ({report})"
    return cls(message, backend=backend, code=code, name=name, function=function)


def missing_symbol_error(symbol: str, library: str, *, backend: str) -> NotSupportedError:
    """The loaded driver does not export ``symbol`` (it is older than the feature)."""
    return NotSupportedError(
        f"{symbol}: the loaded CUDA driver ({library}) does not export it; "
        "this feature needs a newer driver",
        backend=backend,
        code=CUDA_ERROR_NOT_SUPPORTED,
        name="CUDA_ERROR_NOT_SUPPORTED",
        function=symbol,
    )
