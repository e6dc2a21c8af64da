"""The ``cuda`` and ``cuda-sim`` backends: the CUDA driver API through cffi.

``cuda`` binds NVIDIA's ``libcuda.so.1`` (or ``ARUNTIME_CUDA_LIBRARY``);
``cuda-sim`` binds aruntime's software driver, the same code over a
different library.  Nothing is loaded at import: the library is found and
initialised on the first :func:`open_driver` or :func:`list_devices`.

Modules: ``_ffi`` (declarations, typed library), ``_library`` (lookup and
``cuInit``), ``_errors`` (the CUresult table), ``_driver`` (every other call).
"""

from __future__ import annotations

from ..._driver import DeviceInfo, Driver

__all__ = ["list_devices", "open_driver"]


def open_driver(device: int, *, sim: bool, **options: object) -> Driver:
    """Open CUDA device ``device`` (an ordinal) through its primary context.

    Raises:
        BackendUnavailableError: no usable library, or no such device.
        TypeError: an option was passed (the CUDA backend takes none).
    """
    if options:
        raise TypeError(
            f"open_backend: the {'cuda-sim' if sim else 'cuda'} backend takes no options, "
            f"got {', '.join(sorted(options))}"
        )
    from ._driver import CudaDriver
    from ._library import load_library

    return CudaDriver(load_library(sim=sim), device)


def list_devices(*, sim: bool) -> list[DeviceInfo]:
    """Every visible device; :class:`BackendUnavailableError` when there is none."""
    from ..._exceptions import BackendUnavailableError, DriverError
    from ._driver import device_infos
    from ._library import load_library

    library = load_library(sim=sim)
    try:
        devices = device_infos(library)
    except DriverError as error:
        raise BackendUnavailableError(
            f"{library.backend_name}: {library.path} cannot list its devices: {error}"
        ) from error
    if not devices:
        raise BackendUnavailableError(
            f"{library.backend_name}: {library.path} reports no CUDA device"
        )
    return devices
