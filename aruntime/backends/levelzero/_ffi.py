"""The cffi declarations of the Level Zero API, read from ``ffi/levelzero/decl``.

ABI mode (``ffi.dlopen``): nothing is compiled at install, and the same
declarations bind the system loader, a vendor driver loaded directly, or the
project's software driver.  The declaration files are joined in
:data:`DECL_ORDER` (types first, then one file per API area).  They target the
Level Zero 1.4 API, the version of the ``ze_api.h`` that Debian's loader
(``libze1`` 1.8.x) ships, so every function is one that loader routes.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import cffi

__all__ = ["DECL_ORDER", "HELPERS_DECL", "decl_dir", "decl_source", "ffi"]

#: Declaration files in the order cffi must see them.
DECL_ORDER = (
    "types.h",
    "driver_device.h",
    "context_memory.h",
    "command.h",
    "sync.h",
    "module.h",
    "loader.h",
)

_PACKAGE_DIR = Path(__file__).resolve().parents[2]
#: Where the installer copies the declarations; a source checkout reads ffi/ directly.
_CANDIDATES = (
    _PACKAGE_DIR.parent / "ffi" / "levelzero" / "decl",
    _PACKAGE_DIR / "_lib" / "decl" / "levelzero",
)


def decl_dir() -> Path:
    """The folder holding the declaration files."""
    for candidate in _CANDIDATES:
        if (candidate / DECL_ORDER[0]).is_file():
            return candidate
    tried = ", ".join(str(c) for c in _CANDIDATES)
    raise FileNotFoundError(f"Level Zero cffi declarations not found (looked in {tried})")


def decl_source() -> str:
    """Every declaration file's text, joined in :data:`DECL_ORDER`."""
    folder = decl_dir()
    return "\n".join((folder / name).read_text() for name in DECL_ORDER)


#: aruntime's own helper library (``ffi/levelzero/helpers``), over the API's types.
HELPERS_DECL = """
typedef struct {
    void *dst;
    const void *src;
    size_t nbytes;
    ze_event_handle_t wait;
    ze_event_handle_t signal;
} ar_ze_step;
ze_result_t ar_ze_run_steps(const ar_ze_step *steps, size_t count, ze_event_handle_t tail,
                            ze_result_t (*sync)(ze_event_handle_t, uint64_t),
                            ze_result_t (*signal)(ze_event_handle_t), uint32_t *failed_at);
"""


@functools.cache
def _build() -> Any:
    built = cffi.FFI()
    built.cdef(decl_source())
    built.cdef(HELPERS_DECL)
    return built


class _LazyFFI:
    """Parses the declarations on first use, so importing the backend stays cheap."""

    def __getattr__(self, name: str) -> Any:
        return getattr(_build(), name)


#: The shared FFI object (``ffi.new``, ``ffi.dlopen``...).
ffi: Any = _LazyFFI()
