"""Finding and opening backends by name."""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass
from typing import Any, cast

from ._backend import Backend
from ._backend_package import BackendPackage
from ._driver import DeviceInfo
from ._exceptions import BackendUnavailableError, DriverError, InvalidArgumentError
from ._fork import parent_pid
from ._racecheck import checking_requested

__all__ = [
    "BACKEND_NAMES",
    "BackendStatus",
    "available_backends",
    "device_count",
    "open_backend",
    "probe_backends",
    "resolve_kind",
]

#: Public name -> (package under aruntime.backends, bound to the software driver?)
_BACKENDS: dict[str, tuple[str, bool]] = {
    "mock": ("mock", False),
    "cuda": ("cuda", False),
    "cuda-sim": ("cuda", True),
    "levelzero": ("levelzero", False),
    "levelzero-sim": ("levelzero", True),
}
#: Every backend name :func:`open_backend` accepts besides ``"auto"``.
BACKEND_NAMES = tuple(_BACKENDS)
_AUTO_ORDER = ("cuda", "levelzero", "mock")


@dataclass(frozen=True)
class BackendStatus:
    """Whether a backend can be opened here, its devices, or why not."""

    #: The backend's name, as :func:`open_backend` takes it (``"cuda-sim"``...).
    name: str
    #: Whether :func:`open_backend` can open it here.
    available: bool
    #: Its devices, one :class:`DeviceInfo` each (empty when unavailable).
    devices: tuple[DeviceInfo, ...]
    #: Why it is unavailable: every library tried and why each failed ("" when available).
    reason: str = ""


def _package(name: str) -> tuple[BackendPackage, bool]:
    try:
        package, sim = _BACKENDS[name]
    except KeyError:
        raise InvalidArgumentError(
            f"open_backend: unknown backend {name!r}; choose one of "
            f"{', '.join(('auto', *BACKEND_NAMES))}"
        ) from None
    try:
        module = importlib.import_module(f"aruntime.backends.{package}")
    except ImportError as exc:
        raise BackendUnavailableError(
            f"{name}: the backend is not part of this build ({exc})"
        ) from exc
    return cast(BackendPackage, module), sim


def resolve_auto() -> str:
    """The backend ``open_backend("auto")`` opens, without opening it (docs/backends.md)."""
    forced = os.environ.get("ARUNTIME_BACKEND")
    if forced:
        if forced == "auto" or forced not in _BACKENDS:
            raise InvalidArgumentError(
                f"ARUNTIME_BACKEND={forced!r} is not a backend; choose one of "
                f"{', '.join(BACKEND_NAMES)}"
            )
        return forced
    for name in _AUTO_ORDER:
        if name == "mock":
            return name
        try:
            module, sim = _package(name)
            if module.list_devices(sim=sim):
                return name
        except BackendUnavailableError:
            continue
    return "mock"


def open_backend(
    name: str = "auto", device: int = 0, *, check_hazards: bool | None = None, **options: Any
) -> Backend:
    """Open a backend on one device.

    ``"auto"`` means ``ARUNTIME_BACKEND`` if set, else a real CUDA device, else a
    real Level Zero device, else the mock.  ``check_hazards=True`` turns on
    stream-race checking (:class:`HazardError`, docs/testing.md); None (the
    default) turns it on when ``ARUNTIME_CHECK_HAZARDS=1``.  ``options`` go to the backend
    (the mock takes ``device_name``, ``total_memory``, ``compute_units`` and
    ``latency``; the others take none).  An option the backend does not take
    raises TypeError naming it and the ones it does take.
    """
    if not isinstance(name, str):
        raise TypeError(f"open_backend: name must be a str, got {type(name).__name__}")
    if isinstance(device, bool) or not isinstance(device, int):
        raise TypeError(f"open_backend: device must be an int, got {type(device).__name__}")
    if device < 0:
        raise InvalidArgumentError(f"open_backend: device must be >= 0, got {device}")
    checking = checking_requested(check_hazards)
    if name == "auto":
        name = resolve_auto()
    module, sim = _package(name)
    try:
        driver = module.open_driver(device, sim=sim, **options)
    except (BackendUnavailableError, DriverError) as exc:
        parent = parent_pid()
        if parent is None or name == "mock":
            raise
        # NVIDIA's driver, and the sims, refuse a child forked after init.
        raise BackendUnavailableError(
            f"open_backend({name!r}): {exc}; this process is a fork of process {parent}: "
            "a driver initialized before fork() cannot be used in the child (CUDA answers "
            "CUDA_ERROR_NOT_INITIALIZED); open backends only after the fork, or start the "
            "child with the 'spawn' or 'forkserver' method"
        ) from exc
    return Backend(driver, check_hazards=checking)


def resolve_kind(name: str) -> str:
    """``name``, or what ``"auto"`` stands for here; InvalidArgumentError if unknown."""
    if name == "auto":
        return resolve_auto()
    _package(name)
    return name


def device_count(name: str) -> int:
    """How many devices backend ``name`` has here (BackendUnavailableError if none)."""
    module, sim = _package(name)
    devices = module.list_devices(sim=sim)
    if not devices:
        raise BackendUnavailableError(f"{name}: no devices")
    return len(devices)


def probe_backends() -> list[BackendStatus]:
    """Every known backend, whether it can be opened here, and why not."""
    out = []
    for name in BACKEND_NAMES:
        try:
            module, sim = _package(name)
            devices = tuple(module.list_devices(sim=sim))
        except BackendUnavailableError as exc:
            out.append(BackendStatus(name, False, (), str(exc)))
            continue
        if devices:
            out.append(BackendStatus(name, True, devices))
        else:
            out.append(BackendStatus(name, False, (), "no devices"))
    return out


def available_backends() -> dict[str, list[DeviceInfo]]:
    """The backends that can be opened here, each with its devices."""
    return {s.name: list(s.devices) for s in probe_backends() if s.available}
