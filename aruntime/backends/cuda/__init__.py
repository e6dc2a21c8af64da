"""The ``cuda`` and ``cuda-sim`` backends: the CUDA driver API through cffi.

``cuda`` binds NVIDIA's ``libcuda.so.1`` (or ``ARUNTIME_CUDA_LIBRARY``);
``cuda-sim`` binds aruntime's software driver, the same code over a
different library.  Nothing is loaded at import: the library is found and
initialised on the first :func:`open_driver` or :func:`list_devices`.

Modules: ``_ffi`` (declarations, typed library), ``_library`` (lookup and
``cuInit``), ``_errors`` (the CUresult table), ``_platform`` (devices, no context) and
``_driver`` (the driver, one module per subsystem).
"""

from __future__ import annotations

from ..._backend_package import check_options
from ..._driver import DeviceInfo, Driver

__all__ = ["OPTIONS", "list_devices", "open_driver"]

#: The CUDA backend takes no options: its settings come from the environment.
OPTIONS: frozenset[str] = frozenset()


def _name(sim: bool) -> str:
    return "cuda-sim" if sim else "cuda"


def open_driver(device: int, *, sim: bool, **options: object) -> Driver:
    """Open CUDA device ``device`` (an ordinal) through its primary context.

    Raises:
        BackendUnavailableError: no usable library, or no such device.
        TypeError: an option was passed (the CUDA backend takes none).
    """
    check_options(_name(sim), options, OPTIONS)
    from ._driver import open_driver as open_device
    from ._library import load_library

    return open_device(load_library(sim=sim), device)


def list_devices(*, sim: bool) -> list[DeviceInfo]:
    """Every visible device; :class:`BackendUnavailableError` when there is none."""
    from ..._exceptions import BackendUnavailableError, DriverError
    from ._library import load_library
    from ._platform import list_devices as library_devices

    library = load_library(sim=sim)
    try:
        devices = library_devices(library)
    except DriverError as error:
        raise BackendUnavailableError(
            f"{library.backend_name}: {library.path} cannot list its devices: {error}"
        ) from error
    if not devices:
        raise BackendUnavailableError(
            f"{library.backend_name}: {library.path} reports no CUDA device"
        )
    return devices
