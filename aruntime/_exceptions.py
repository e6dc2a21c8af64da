"""Every exception aruntime raises, in one tree::

    AruntimeError
    ├── BackendUnavailableError          no driver, no device, stub library
    ├── InvalidArgumentError(ValueError)  rejected before reaching a driver
    ├── DriverError                      .backend .code .name .function
    │   ├── OutOfMemoryError(MemoryError)
    │   ├── NotSupportedError            incl. a symbol the driver lacks
    │   └── DeviceLostError              sticky errors, device lost
    ├── CaptureError
    ├── HazardError                      a stream race (check_hazards)
    │   └── StoreHazardError(DriverError) a sim saw a store reads= ruled out
    └── ClosedResourceError

Wrong Python types raise the built-in :class:`TypeError`.  Messages name the
function, the offending value and the limit it broke.
"""

from __future__ import annotations

__all__ = [
    "AruntimeError",
    "BackendUnavailableError",
    "CaptureError",
    "ClosedResourceError",
    "DeviceLostError",
    "DriverError",
    "HazardError",
    "InvalidArgumentError",
    "NotSupportedError",
    "OutOfMemoryError",
    "StoreHazardError",
]

# Every class below sets ``__module__ = "aruntime"``: tracebacks, pytest's
# summary and ``repr`` then name the public spelling (``aruntime.HazardError``),
# and pickle finds each class there.


class AruntimeError(Exception):
    """Base class of every error aruntime raises (except :class:`TypeError`)."""

    __module__ = "aruntime"


class BackendUnavailableError(AruntimeError):
    """A backend cannot be opened: no library, no device, or a stub library.

    The message lists every library path tried and why each one failed.
    """

    __module__ = "aruntime"


class InvalidArgumentError(AruntimeError, ValueError):
    """An argument was rejected before anything reached the driver.

    Bad sizes, out-of-bounds ranges, freed or foreign pointers, read-only or
    non-contiguous host buffers, and handles of another backend land here.
    """

    __module__ = "aruntime"


class DriverError(AruntimeError):
    """The driver reported a failure.

    Attributes:
        backend: the backend's name (``"cuda"``, ``"levelzero-sim"``...).
        code: the driver's numeric result code.
        name: the driver's symbolic name for it (``"CUDA_ERROR_INVALID_VALUE"``).
        function: the driver function (or aruntime op) that failed.
    """

    __module__ = "aruntime"

    def __init__(
        self,
        message: str,
        *,
        backend: str = "",
        code: int = 0,
        name: str = "",
        function: str = "",
    ) -> None:
        super().__init__(message)
        self.backend = backend
        self.code = code
        self.name = name
        self.function = function

    def __reduce__(self) -> tuple[object, ...]:
        return (
            _rebuild_driver_error,
            (type(self), str(self), self.backend, self.code, self.name, self.function),
        )


def _rebuild_driver_error(
    cls: type[DriverError], message: str, backend: str, code: int, name: str, function: str
) -> DriverError:
    return cls(message, backend=backend, code=code, name=name, function=function)


class OutOfMemoryError(DriverError, MemoryError):
    """The device (or pinned host memory) is exhausted."""

    __module__ = "aruntime"


class NotSupportedError(DriverError):
    """The driver or device does not support the request.

    Also raised when the loaded driver lacks a symbol a feature needs; the
    message names the symbol.
    """

    __module__ = "aruntime"


class DeviceLostError(DriverError):
    """A sticky error: the device or its context is unusable until reopened."""

    __module__ = "aruntime"


class CaptureError(AruntimeError):
    """A graph-capture rule was broken (awaiting a captured op, nested capture...)."""

    __module__ = "aruntime"


class HazardError(AruntimeError):
    """A stream race found by ``check_hazards``: two unordered ops on overlapping bytes.

    Raised by the call that would complete the race, before anything is
    enqueued.  The message names both ops, both streams, the overlapping
    byte range and both call sites.
    """

    __module__ = "aruntime"


class StoreHazardError(HazardError, DriverError):
    """A software driver stopped a kernel at a store into memory its launch declared read-only.

    Under ``check_hazards`` a pointer listed only in ``launch(reads=...)``
    may be read by other streams at the same time; cuda-sim and
    levelzero-sim see every store a kernel makes, so they hold the launch to
    that declaration.  Awaiting the launch raises this: a
    :class:`HazardError` for what it means, and a :class:`DriverError` for
    how it arrives (the driver failed the op; the device stays usable).  The
    message names the kernel, its launch site and the store.
    """

    __module__ = "aruntime"


class ClosedResourceError(AruntimeError):
    """The backend, stream, event or graph was closed by this program."""

    __module__ = "aruntime"
