"""Finds and loads the Level Zero library for the ``levelzero`` and ``levelzero-sim`` backends.

Nothing here calls into Level Zero: :mod:`._driver` calls ``zeInit`` and the
rest.  This module only decides which shared object to ``dlopen`` and how.

``levelzero``
    ``ARUNTIME_LEVELZERO_LIBRARY`` first (a path to a loader or to a driver that
    exports the plain ``ze*`` entry points), then the system loader
    ``libze_loader.so.1``.
``levelzero-sim``
    The project's software driver.  When the system loader is installed, the
    loader is loaded with ``ZE_ENABLE_ALT_DRIVERS=<absolute path of the sim>``,
    so the real loader (and its validation layer, when
    ``ZE_ENABLE_VALIDATION_LAYER=1``) sit between aruntime and the sim.
    Without a loader, or with ``ARUNTIME_LEVELZERO_SIM_DIRECT=1``, the sim is
    loaded directly.

One loader per process: ``ZE_ENABLE_ALT_DRIVERS`` is read once, by the
loader's first ``zeInit``, which also fixes its layers and caches its result
for the whole process.  So a process that has initialised the loader for the
real drivers cannot then point it at the sim, nor the other way round: the
second request raises :class:`BackendUnavailableError` saying so.  (A directly
loaded sim is independent of the loader and can sit beside it.)  The variable
is set only around the loader's initialisation and then restored, so child
processes do not inherit it by accident.
"""

from __future__ import annotations

import ctypes.util
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from ..._exceptions import BackendUnavailableError
from ._ffi import ffi

__all__ = [
    "LOADER_NAME",
    "SIM_FILENAME",
    "ZeLibrary",
    "load_library",
]

#: The system loader's soname (Debian package libze1).
LOADER_NAME = "libze_loader.so.1"
#: The software driver's file name in aruntime/_lib (built from ffi/levelzero).
SIM_FILENAME = "libze_aruntime_sim.so"
#: Driver libraries the 1.8 loader looks for when ZE_ENABLE_ALT_DRIVERS is unset.
_LOADER_KNOWN_DRIVERS = ("ze_intel_gpu", "ze_intel_vpu")

_ENV_LIBRARY = "ARUNTIME_LEVELZERO_LIBRARY"
_ENV_SIM_DIRECT = "ARUNTIME_LEVELZERO_SIM_DIRECT"
_ENV_ALT = "ZE_ENABLE_ALT_DRIVERS"


@dataclass(frozen=True)
class ZeLibrary:
    """A loaded Level Zero library and how it was reached."""

    lib: Any
    #: What was dlopened (a path or a soname).
    path: str
    #: True when it is a loader (it exports zelLoaderGetVersions).
    is_loader: bool
    #: The driver the loader was pointed at with ZE_ENABLE_ALT_DRIVERS, if any.
    alt_driver: str | None

    def describe(self) -> str:
        if self.is_loader and self.alt_driver:
            return f"{self.path} with ZE_ENABLE_ALT_DRIVERS={self.alt_driver}"
        return self.path if not self.is_loader else f"{self.path} (system drivers)"


#: Probes a freshly opened library (zeInit, devices); returns None or why it is unusable.
Probe = Callable[[ZeLibrary], "str | None"]

_lock = threading.Lock()
#: The loader's mode once its zeInit ran: the alt driver path, or "" for the system drivers.
_loader_mode: str | None = None
_loader_probe: dict[str, str | None] = {}
_opened: dict[tuple[str, str | None], ZeLibrary] = {}


def _dlopen(path: str) -> Any:
    return ffi.dlopen(path)


def _exports(lib: Any, symbol: str) -> bool:
    try:
        getattr(lib, symbol)
    except AttributeError:
        return False
    return True


@contextmanager
def _alt_drivers(value: str | None) -> Iterator[None]:
    """Point the loader's first zeInit at ``value``, then restore the variable.

    ``None`` leaves the environment as the user set it (a user's own
    ``ZE_ENABLE_ALT_DRIVERS`` is honoured for the real backend).
    """
    if value is None:
        yield
        return
    previous = os.environ.get(_ENV_ALT)
    os.environ[_ENV_ALT] = value
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(_ENV_ALT, None)
        else:
            os.environ[_ENV_ALT] = previous


def _no_system_driver() -> str | None:
    """Why the loader would find no driver, judged without initialising it.

    The loader caches its first zeInit for the whole process, so probing the
    real drivers on a machine that has none would also make the sim
    unreachable through the loader afterwards.  When the user has not pointed
    the loader somewhere themselves and none of the libraries it looks for is
    installed, say so and leave the loader untouched.
    """
    if any(os.environ.get(v) for v in (_ENV_ALT, "ZE_ENABLE_NULL_DRIVER")):
        return None
    if any(ctypes.util.find_library(name) for name in _LOADER_KNOWN_DRIVERS):
        return None
    names = ", ".join(f"lib{n}.so.1" for n in _LOADER_KNOWN_DRIVERS)
    return f"no Level Zero driver is installed for it to load (looked for {names})"


def _open_loader(path: str, alt: str | None, probe: Probe, tried: list[str]) -> ZeLibrary | None:
    global _loader_mode
    mode = alt or ""
    if _loader_mode is not None and _loader_mode != mode:
        missing = _no_system_driver() if alt is None else None
        if missing is not None:  # the more useful reason: nothing to switch to anyway
            tried.append(f"{path}: {missing}")
            return None
        first = f"the sim {_loader_mode}" if _loader_mode else "the system's drivers"
        wanted = f"the sim {alt}" if alt else "the system's drivers"
        tried.append(
            f"{path}: this process already initialised the Level Zero loader for {first}; "
            f"ZE_ENABLE_ALT_DRIVERS is read once per process and zeInit's result is cached, "
            f"so it cannot be switched to {wanted}. Use a separate process"
            + ("" if alt is None else f", or set {_ENV_SIM_DIRECT}=1 to load the sim directly")
        )
        return None
    key = (path, alt)
    if key in _opened:
        why = _loader_probe.get(mode)
        if why is None:
            return _opened[key]
        tried.append(f"{path}: {why}")
        return None
    if alt is None and _loader_mode is None:
        why = _no_system_driver()
        if why is not None:
            tried.append(f"{path}: {why}")
            return None
    with _alt_drivers(alt):
        try:
            lib = _dlopen(path)
        except OSError as exc:
            tried.append(f"{path}: {exc}")
            return None
        if not _exports(lib, "zelLoaderGetVersions"):
            loaded = ZeLibrary(lib, path, is_loader=False, alt_driver=None)
            why = probe(loaded)
            if why is None:
                _opened[(path, None)] = loaded
                return loaded
            tried.append(f"{path}: {why}")
            return None
        loaded = ZeLibrary(lib, path, is_loader=True, alt_driver=alt)
        _loader_mode = mode
        why = probe(loaded)  # the loader's first zeInit happens in here
    _loader_probe[mode] = why
    _opened[key] = loaded
    if why is None:
        return loaded
    tried.append(f"{loaded.describe()}: {why}")
    return None


def _open_direct(path: str, probe: Probe, tried: list[str]) -> ZeLibrary | None:
    key = (path, None)
    if key in _opened:
        return _opened[key]
    try:
        lib = _dlopen(path)
    except OSError as exc:
        tried.append(f"{path}: {exc}")
        return None
    loaded = ZeLibrary(lib, path, is_loader=False, alt_driver=None)
    why = probe(loaded)
    if why is not None:
        tried.append(f"{path}: {why}")
        return None
    _opened[key] = loaded
    return loaded


def _sim_path() -> str:
    from ..._native import native_library_path

    return str(native_library_path(SIM_FILENAME).resolve())


def _loader_installed() -> bool:
    try:
        _dlopen(LOADER_NAME)
    except OSError:
        return False
    return True


def load_library(*, sim: bool, probe: Probe) -> ZeLibrary:
    """Open the library for ``levelzero`` (``sim=False``) or ``levelzero-sim``.

    ``probe`` runs zeInit and finds devices; a candidate it rejects is reported,
    and the next one tried.  Raises :class:`BackendUnavailableError` listing
    every path tried and why each failed.
    """
    tried: list[str] = []
    with _lock:
        if sim:
            try:
                sim_path = _sim_path()
            except BackendUnavailableError as exc:
                raise BackendUnavailableError(
                    f"levelzero-sim: the software Level Zero driver is unavailable: {exc}"
                ) from exc
            if os.environ.get(_ENV_SIM_DIRECT) == "1":
                found = _open_direct(sim_path, probe, tried)
            elif _loader_installed():
                found = _open_loader(LOADER_NAME, sim_path, probe, tried)
            else:
                tried.append(f"{LOADER_NAME}: not installed (Debian package libze1)")
                found = _open_direct(sim_path, probe, tried)
        else:
            found = None
            override = os.environ.get(_ENV_LIBRARY)
            if override:
                found = _open_candidate(override, probe, tried)
            else:
                tried.append(f"{_ENV_LIBRARY}: not set")
            if found is None:
                found = _open_loader(LOADER_NAME, None, probe, tried)
    if found is None:
        name = "levelzero-sim" if sim else "levelzero"
        raise BackendUnavailableError(
            f"{name}: no usable Level Zero library; tried:\n  - " + "\n  - ".join(tried)
        )
    return found


def _open_candidate(path: str, probe: Probe, tried: list[str]) -> ZeLibrary | None:
    """A user-given path: a loader is opened as a loader, anything else directly."""
    try:
        lib = _dlopen(path)
    except OSError as exc:
        tried.append(f"{path}: {exc}")
        return None
    if _exports(lib, "zelLoaderGetVersions"):
        return _open_loader(path, None, probe, tried)
    return _open_direct(path, probe, tried)


def reset_for_tests() -> None:
    """Forget what this process opened (the loader itself cannot forget its zeInit)."""
    with _lock:
        _opened.clear()
