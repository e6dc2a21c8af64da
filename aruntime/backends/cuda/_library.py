"""Finding, loading and initialising the CUDA driver library.

Lookup order (``ARUNTIME_CUDA_LIBRARY`` in docs/backends.md), tried lazily on
the first open, never at import:

* ``cuda``: the path in ``ARUNTIME_CUDA_LIBRARY`` when set, then the system
  name ``libcuda.so.1`` (the dynamic loader's search: ``LD_LIBRARY_PATH``,
  ``ld.so.cache``...);
* ``cuda-sim``: the project's software driver,
  ``aruntime/_lib/libcuda.so.1`` (built on demand in a source checkout).

A candidate is accepted once it loads and its ``cuInit(0)`` succeeds.  When
none is, :class:`BackendUnavailableError` lists every candidate and why it
failed; NVIDIA's stub ``libcuda.so`` (``CUDA_ERROR_STUB_LIBRARY`` from
``cuInit``) is named as such.

This module and :mod:`._driver` are the only ones that touch the C library;
this one calls only ``cuInit`` and the error-naming functions.
"""

from __future__ import annotations

import os
import threading
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from ..._exceptions import BackendUnavailableError
from ..._native import native_library_path
from . import _errors
from ._ffi import (
    COMPILED,
    COMPILED_FFI,
    FUNCTION_NAMES,
    CData,
    CudaLib,
    HelperLib,
    abi_ffi,
    probe_ffi,
)

__all__ = ["ENV_LIBRARY", "CudaLibrary", "load_library"]

ENV_LIBRARY = "ARUNTIME_CUDA_LIBRARY"
SYSTEM_NAME = "libcuda.so.1"
SIM_FILE = "libcuda.so.1"
HELPERS_FILE = "libaruntime_cuda_helpers.so"

#: Where distributions install NVIDIA's driver library.
_SYSTEM_DIRS = tuple(
    Path(d)
    for d in (
        "/usr/lib/x86_64-linux-gnu",
        "/usr/lib/aarch64-linux-gnu",
        "/usr/lib64",
        "/usr/lib",
        "/usr/lib/wsl/lib",
    )
)

_lock = threading.Lock()
_loaded: dict[bool, CudaLibrary] = {}


@dataclass
class CudaLibrary:
    """A loaded, initialised CUDA driver library.

    ``lib`` has every declared function as an attribute, resolved once at
    load: the C function, or, for a symbol this driver does not export
    (a feature newer than it), a stand-in that raises
    :class:`NotSupportedError` naming the symbol when called.
    """

    probe: CData  # probe_ffi.dlopen result: cuInit and error names only
    path: str  # the file the symbols really come from
    sim: bool
    lib: CudaLib = field(init=False, repr=False)
    #: "api" (compiled wrappers) or "abi" (libffi); see :mod:`._ffi`.
    mode: str = field(init=False)
    #: The FFI whose cffi objects this library's functions take.
    ffi: Any = field(init=False, repr=False)
    _raw: Any = field(default=None, init=False, repr=False)
    _helpers: HelperLib | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if _bind_compiled(self.path):
            self.mode, self.ffi = "api", COMPILED_FFI
        else:
            self.mode, self.ffi = "abi", abi_ffi()
            self._raw = self.ffi.dlopen(self.path)
        resolved = {name: self.function(name) for name in FUNCTION_NAMES}
        self.lib = cast(CudaLib, types.SimpleNamespace(**resolved))

    @property
    def backend_name(self) -> str:
        return "cuda-sim" if self.sim else "cuda"

    def function(self, name: str) -> Callable[..., Any]:
        """The C function ``name``, or a stand-in that raises NotSupportedError naming it.

        Resolving at open and failing at use lets a driver older than a
        feature run everything else.
        """
        if self.has(name):
            source = COMPILED if self.mode == "api" else self._raw
            return cast("Callable[..., Any]", getattr(source, name))
        else:
            error = _errors.missing_symbol_error(name, self.path, backend=self.backend_name)

            def missing(*args: object) -> int:
                raise error.with_traceback(None)

            return missing

    def has(self, name: str) -> bool:
        """Whether the library exports ``name``."""
        if self.mode == "api":
            return bool(COMPILED.ar_has(name.encode()))
        try:
            getattr(self._raw, name)
        except AttributeError:
            return False
        return True

    def address(self, name: str) -> int:
        """The address of the C function ``name`` that this library's calls reach (0 if absent)."""
        if not self.has(name):
            return 0
        source = COMPILED if self.mode == "api" else self._raw
        return int(self.ffi.cast("uintptr_t", self.ffi.addressof(source, name)))

    def describe(self, code: int) -> tuple[str, str] | None:
        """``(cuGetErrorName, cuGetErrorString)`` of a code, or None if the library can't say."""
        return describe(self.probe, code)

    def helpers(self) -> HelperLib:
        """The native host-function library (loaded on first use)."""
        if self._helpers is None:
            if self.mode == "api":  # compiled into the extension
                self._helpers = cast(HelperLib, COMPILED)
            else:
                path = str(native_library_path(HELPERS_FILE))
                self._helpers = cast(HelperLib, self.ffi.dlopen(path))
        return self._helpers


_bound_path: str | None = None


def _bind_compiled(path: str) -> bool:
    """Point the compiled wrappers at ``path`` (the first library only; False otherwise)."""
    global _bound_path
    if COMPILED is None:
        return False
    if _bound_path is None and COMPILED.ar_bind_path(path.encode()) == 0:
        _bound_path = path
    return _bound_path == path


def describe(lib: Any, code: int) -> tuple[str, str] | None:
    """Names a code through a probe_ffi library."""
    ffi = probe_ffi
    out = ffi.new("const char **")
    try:
        if lib.cuGetErrorName(code, out) != 0 or out[0] == ffi.NULL:
            return None
        name = ffi.string(out[0]).decode(errors="replace")
        text = ""
        if lib.cuGetErrorString(code, out) == 0 and out[0] != ffi.NULL:
            text = ffi.string(out[0]).decode(errors="replace")
    except AttributeError:  # a library without the error-naming functions
        return None
    return name, text


def _resolved_path(lib: CData, symbol: str, fallback: str) -> str:
    ffi = probe_ffi
    info = ffi.new("Dl_info *")
    try:
        libc: Any = ffi.dlopen(None)
        if libc.dladdr(ffi.addressof(lib, symbol), info) and info.dli_fname != ffi.NULL:
            return str(os.path.realpath(ffi.string(info.dli_fname).decode()))
    except (AttributeError, OSError, TypeError):
        pass
    return fallback


def _sim_path() -> str:
    return str(os.path.realpath(native_library_path(SIM_FILE)))


def _candidates(sim: bool, tried: list[str]) -> list[str]:
    if sim:
        try:
            return [str(native_library_path(SIM_FILE))]
        except BackendUnavailableError as exc:
            tried.append(f"the software driver {SIM_FILE}: {exc}")
            return []
    names = []
    env = os.environ.get(ENV_LIBRARY)
    if env:
        names.append(env)
    if True in _loaded:
        # The sim holds the soname libcuda.so.1 in this process, so the name
        # would resolve to it: look for NVIDIA's library by absolute path.
        found = [str(d / SYSTEM_NAME) for d in _SYSTEM_DIRS if (d / SYSTEM_NAME).exists()]
        if not found:
            dirs = ", ".join(str(d) for d in _SYSTEM_DIRS)
            tried.append(
                f"{SYSTEM_NAME}: the name resolves to aruntime's software driver, loaded "
                f"earlier in this process, and no other {SYSTEM_NAME} is in {dirs}"
            )
        names.extend(found)
    else:
        names.append(SYSTEM_NAME)
    return names


def _try_load(candidate: str, sim: bool) -> tuple[CudaLibrary | None, str]:
    try:
        lib: Any = probe_ffi.dlopen(candidate)
    except OSError as exc:
        return None, f"cannot be loaded: {exc}"
    try:
        init = lib.cuInit
    except AttributeError:
        return None, "is not a CUDA driver: it does not export cuInit"
    path = _resolved_path(lib, "cuInit", candidate)
    if not sim and "/" not in candidate:
        # The sim has the same soname; once loaded, the loader hands it out
        # for "libcuda.so.1" too.  Refuse to pass it off as a real GPU.
        try:
            if path == _sim_path():
                return None, (
                    f"resolves to aruntime's software driver {path}, loaded earlier in this "
                    "process under the same soname; open 'cuda-sim' for it, or open 'cuda' "
                    "in a process that has not loaded the sim"
                )
        except BackendUnavailableError:
            pass
    code = init(0)
    if code == _errors.CUDA_ERROR_STUB_LIBRARY:
        return None, (
            f"({path}) is a stub library (cuInit returned CUDA_ERROR_STUB_LIBRARY): it is "
            "the toolkit's link-time stand-in, not a driver; install the NVIDIA driver or "
            f"point {ENV_LIBRARY} at the real libcuda.so.1"
        )
    if code != 0:
        named = describe(lib, code)
        name, text = named if named is not None else (_errors.KNOWN_NAMES.get(code, "?"), "")
        hint = " (no CUDA device is visible)" if code == _errors.CUDA_ERROR_NO_DEVICE else ""
        return None, f"({path}): cuInit(0) failed with {name} ({code}) {text}{hint}".rstrip()
    return CudaLibrary(probe=lib, path=path, sim=sim), ""


def load_library(*, sim: bool) -> CudaLibrary:
    """The loaded CUDA library (real or sim), loading it on first call.

    Raises:
        BackendUnavailableError: no candidate loaded and initialised; the
            message lists each one tried and why it failed.
    """
    with _lock:
        cached = _loaded.get(sim)
        if cached is not None:
            return cached
        tried: list[str] = []
        for candidate in _candidates(sim, tried):
            loaded, why = _try_load(candidate, sim)
            if loaded is not None:
                _loaded[sim] = loaded
                return loaded
            origin = f" (from {ENV_LIBRARY})" if candidate == os.environ.get(ENV_LIBRARY) else ""
            tried.append(f"{candidate}{origin} {why}")
        backend = "cuda-sim" if sim else "cuda"
        lines = "\n".join(f"  - {line}" for line in tried)
        raise BackendUnavailableError(f"the {backend} backend is unavailable; tried:\n{lines}")


def forget_loaded() -> None:
    """Drop the cached libraries (tests that change ARUNTIME_CUDA_LIBRARY use this)."""
    with _lock:
        _loaded.clear()
