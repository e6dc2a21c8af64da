"""The ``levelzero`` and ``levelzero-sim`` backends: Intel's Level Zero over cffi.

``levelzero`` opens a real device through the system loader
(``libze_loader.so.1``) or ``ARUNTIME_LEVELZERO_LIBRARY``; ``levelzero-sim``
opens the project's software Level Zero driver, through the same system
loader when it is installed.  See :mod:`._library` for the lookup and its
one-loader-per-process rule, and :mod:`._driver` for how streams, events,
graphs and modules map onto Level Zero.
"""

from __future__ import annotations

from ..._driver import DeviceInfo, Driver
from . import _driver, _library

__all__ = ["list_devices", "open_driver"]


def _name(sim: bool) -> str:
    return "levelzero-sim" if sim else "levelzero"


def open_driver(device: int, *, sim: bool) -> Driver:
    """Open one device; raises :class:`BackendUnavailableError` when none can be reached."""
    zl = _library.load(sim=sim, probe=_driver.probe)
    return _driver.open_driver(zl, device, _name(sim))


def list_devices(*, sim: bool) -> list[DeviceInfo]:
    """Every device the backend can open; raises :class:`BackendUnavailableError` otherwise."""
    zl = _library.load(sim=sim, probe=_driver.probe)
    return _driver.list_devices(zl)
