"""Finds the project's own native libraries (software drivers, host kernels).

An installed aruntime carries them in ``aruntime/_lib`` (built by the install
command).  A source checkout used without installing (``PYTHONPATH=.``) builds
them on first use from ``ffi/``, so the tests never run against stale objects.
"""

from __future__ import annotations

import fcntl
import importlib
import importlib.util
import os
import sys
import sysconfig
import threading
from pathlib import Path
from types import ModuleType

from ._exceptions import BackendUnavailableError

__all__ = [
    "SIM_LIBRARIES",
    "load_core_extension",
    "load_extension",
    "native_library_looked_up",
    "native_library_path",
    "sim_environment",
]

_PACKAGE_DIR = Path(__file__).resolve().parent
_LIB_DIR = _PACKAGE_DIR / "_lib"
_SOURCE_ROOT = _PACKAGE_DIR.parent
_SOURCE_FFI = _SOURCE_ROOT / "ffi" / "build.py"
_lock = threading.Lock()
_checked = False
_looked_up = False


def _load_builder() -> ModuleType:
    """The checkout's ``ffi.build``, which is not installed with the package.

    Under ``PYTHONPATH=.`` it imports as it is; from an editable install run
    elsewhere the checkout's root joins ``sys.path`` just for this import.
    """
    root = str(_SOURCE_ROOT)
    added = root not in sys.path
    if added:
        sys.path.insert(0, root)
    try:
        module = importlib.import_module("ffi.build")
    finally:
        if added:
            sys.path.remove(root)
    found = Path(module.__file__ or "").resolve()
    if found != _SOURCE_FFI:
        raise ImportError(f"ffi.build resolves to {found}, not the checkout's {_SOURCE_FFI}")
    return module


def _rebuild_from_source() -> None:
    """In a source checkout, bring ``_lib`` up to date (once per process)."""
    global _checked
    if _checked or not _SOURCE_FFI.exists():
        _checked = True
        return
    _build_locked()
    _checked = True


def _build_locked(only: tuple[str, ...] | None = None) -> None:
    """Bring ``_lib`` (or just its files ``only``) up to date from the checkout's ``ffi``."""
    _LIB_DIR.mkdir(exist_ok=True)
    # Several test processes may start at once: an flock keeps them from
    # compiling over each other.
    with open(_LIB_DIR / ".build.lock", "w") as lockfile:
        fcntl.flock(lockfile, fcntl.LOCK_EX)
        try:
            _load_builder().build(_LIB_DIR, only=only)
        finally:
            fcntl.flock(lockfile, fcntl.LOCK_UN)


def native_library_looked_up() -> bool:
    """Whether this process has asked for a native library yet (else none is loaded)."""
    return _looked_up


def native_library_path(filename: str) -> Path:
    """The path of one of the project's shared objects, building it if needed."""
    global _looked_up
    _looked_up = True
    with _lock:
        if os.environ.get("ARUNTIME_NO_NATIVE_BUILD") != "1":
            try:
                _rebuild_from_source()
            except Exception as exc:  # a compiler error must not hide the library
                raise BackendUnavailableError(
                    f"building the native library {filename} from "
                    f"{_SOURCE_FFI.parent} failed: {exc}"
                ) from exc
    path = _LIB_DIR / filename
    if not path.exists():
        raise BackendUnavailableError(
            f"{path} does not exist: reinstall aruntime (pip install .) so that its "
            "install command builds the software drivers with the C compiler"
        )
    return path


def load_extension(module: str, abi_switch: str) -> ModuleType | None:
    """The project's compiled (cffi API-mode) extension ``module``, or None for ABI mode.

    None where it was not built (no Python headers or cffi at install), or
    when the environment variable ``abi_switch`` is ``1``: the backend then
    calls its library through cffi's ABI mode, which needs neither.
    """
    if os.environ.get(abi_switch) == "1":
        return None
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    if not suffix:
        return None
    try:
        path = native_library_path(f"{module}{suffix}")
    except BackendUnavailableError:
        return None
    return _import_from(module, path)


def load_core_extension(module: str) -> ModuleType | None:
    """The core's own compiled extension ``module`` (no driver in it), or None if not built.

    Unlike :func:`native_library_path`, it does not count as looking up a
    native library: a mock-only process still loads no driver.  A source
    checkout brings ``_lib`` up to date first, as for every native library.
    """
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    if not suffix:
        return None
    filename = f"{module}{suffix}"
    with _lock:
        if os.environ.get("ARUNTIME_NO_NATIVE_BUILD") != "1" and _SOURCE_FFI.exists():
            try:
                _build_locked(only=(filename,))
            except Exception:  # the Python path does the same work
                return None
    path = _LIB_DIR / filename
    return _import_from(module, path) if path.exists() else None


def _import_from(module: str, path: Path) -> ModuleType | None:
    spec = importlib.util.spec_from_file_location(module, path)
    if spec is None or spec.loader is None:
        return None
    loaded = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(loaded)
    except ImportError:
        return None
    return loaded


#: The library each sim is found as, relative to aruntime's native folder.
SIM_LIBRARIES = {"cuda-sim": "libcuda.so.1", "levelzero-sim": "ze_loader/libze_loader.so.1"}


def sim_environment(backend: str) -> dict[str, str]:
    """The variables under which another program runs on ``backend`` (a sim) as its driver.

    ``LD_LIBRARY_PATH`` puts the folder of the sim's library first (the
    current value follows); for levelzero-sim, ``ONEAPI_DEVICE_SELECTOR``
    also keeps SYCL to Level Zero devices.
    """
    if backend not in SIM_LIBRARIES:
        raise ValueError(
            f"sim_environment: backend {backend!r} is not one of {sorted(SIM_LIBRARIES)}"
        )
    folder = str(native_library_path(SIM_LIBRARIES[backend]).parent)
    current = os.environ.get("LD_LIBRARY_PATH")
    env = {"LD_LIBRARY_PATH": f"{folder}{os.pathsep}{current}" if current else folder}
    if backend == "levelzero-sim":
        env["ONEAPI_DEVICE_SELECTOR"] = "level_zero:*"
    return env
