"""The ``levelzero`` and ``levelzero-sim`` backends: Intel's Level Zero over cffi.

``levelzero`` opens a real device through the system loader
(``libze_loader.so.1``) or ``ARUNTIME_LEVELZERO_LIBRARY``; ``levelzero-sim``
opens the project's software Level Zero driver, through the same system
loader when it is installed.  See :mod:`._library` for the lookup and its
one-loader-per-process rule, and :mod:`._driver` for how streams, events,
graphs and modules map onto Level Zero.

Not covered, and why:

* Only the Level Zero 1.4 API (the ``ze_api.h`` Debian's 1.8 loader ships and
  routes): no in-order list flag, ``zeCommandListHostSynchronize`` or
  appending regular lists to immediate ones, so ordering uses barriers and
  graph replays go through a command queue and a fence.
* ``shared_mem`` (dynamic shared memory) raises ``InvalidArgumentError``
  (``gpu.limits.max_shared_mem`` is 0): Level Zero passes local memory as a
  kernel argument, not per launch.
* An allocation over the device's ``maxMemAllocSize`` raises
  ``InvalidArgumentError`` naming it: aruntime does not chain the
  relaxed-allocation-limits descriptor that would lift it.
* Launching a graph inside a capture raises ``NotSupportedError`` (1.4 cannot
  nest command lists).
* ``device_free_memory()`` is the device's total less what this process
  allocated: the core API has no free-memory query (Sysman has, but must be
  enabled before ``zeInit``).
* Copy regions are 32-bit (``ze_copy_region_t``): larger 2D copies raise
  ``NotSupportedError``.
* Three queue priorities (-1 low, 0 normal, 1 high).
* Re-recording an event resets it on the host, so a stream still waiting on
  the previous record waits for the new one instead.
* Images, samplers, IPC, sub-devices, peer access, virtual memory, module
  specialisation constants and build flags, cooperative kernels, metrics and
  Sysman are not used.

Pageable host buffers over 64 KiB are staged through pinned ``zeMemAllocHost``
buffers by a worker thread per stream, so the enqueueing thread never copies
them (see :mod:`._staged`); smaller ones, and every copy inside a capture,
are handed to the driver as they are.
"""

from __future__ import annotations

from ..._backend_package import check_options
from ..._driver import DeviceInfo, Driver
from . import _driver, _library, _platform

__all__ = ["OPTIONS", "list_devices", "open_driver"]

#: The Level Zero backend takes no options: its settings come from the environment.
OPTIONS: frozenset[str] = frozenset()


def _name(sim: bool) -> str:
    return "levelzero-sim" if sim else "levelzero"


def _load_library(sim: bool) -> _library.ZeLibrary:
    return _library.load_library(sim=sim, probe=_platform.probe)


def open_driver(device: int, *, sim: bool, **options: object) -> Driver:
    """Open one device; raises :class:`BackendUnavailableError` when none can be reached."""
    check_options(_name(sim), options, OPTIONS)
    return _driver.open_driver(_load_library(sim), device, _name(sim))


def list_devices(*, sim: bool) -> list[DeviceInfo]:
    """Every device the backend can open; raises :class:`BackendUnavailableError` otherwise."""
    return _platform.list_devices(_load_library(sim))
