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
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import cffi

from ..._native import load_extension

__all__ = [
    "COMPILED_MODULE",
    "DECL_ORDER",
    "CompiledCalls",
    "compiled_calls",
    "HELPERS_DECL",
    "TYPES",
    "caster",
    "decl_dir",
    "decl_source",
    "ffi",
    "types_decl",
]

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


#: Every C type the backend names by string in ``ffi.new``, ``ffi.cast``,
#: ``ffi.sizeof`` or ``ffi.from_buffer`` (a test keeps the list complete).
#: cffi parses a type string with pycparser the first time it meets it, and
#: re-reads one line per declared typedef to do so: 2 to 7 ms per string, on
#: the thread of the first call, for most of these an op on an event loop
#: (the first staged copy parsed four and stalled the loop for 30 ms).  So
#: they are declared as the fields of one struct in the same ``cdef`` as the
#: helpers, and :class:`_LazyFFI` hands cffi the resolved types.
TYPES = (
    "ar_ze_step[]",
    "char[]",
    "size_t*",
    "uint32_t*",
    "uint64_t*",
    "uint8_t[256]",
    "uint8_t[]",
    "uintptr_t",
    "void*",
    "void**",
    "ze_api_version_t*",
    "ze_bool_t*",
    "ze_command_list_desc_t*",
    "ze_command_list_handle_t*",
    "ze_command_list_handle_t[1]",
    "ze_command_queue_desc_t*",
    "ze_command_queue_group_properties_t[]",
    "ze_command_queue_handle_t*",
    "ze_context_desc_t*",
    "ze_context_handle_t*",
    "ze_copy_region_t*",
    "ze_device_compute_properties_t*",
    "ze_device_handle_t[]",
    "ze_device_mem_alloc_desc_t*",
    "ze_device_memory_properties_t[]",
    "ze_device_properties_t*",
    "ze_driver_handle_t[]",
    "ze_driver_properties_t*",
    "ze_event_desc_t*",
    "ze_event_handle_t*",
    "ze_event_handle_t[]",
    "ze_event_pool_desc_t*",
    "ze_event_pool_handle_t*",
    "ze_fence_desc_t*",
    "ze_fence_handle_t*",
    "ze_group_count_t*",
    "ze_host_mem_alloc_desc_t*",
    "ze_kernel_desc_t*",
    "ze_kernel_handle_t*",
    "ze_kernel_properties_t*",
    "ze_kernel_timestamp_result_t*",
    "ze_memory_allocation_properties_t*",
    "ze_module_build_log_handle_t*",
    "ze_module_desc_t*",
    "ze_module_handle_t*",
    "zel_component_version_t[]",
)


def types_decl(types: tuple[str, ...] = TYPES) -> str:
    """C declarations with one field per type: ``ar_ze_types`` (see :data:`TYPES`).

    An open array ``T[]`` cannot be a field, so it is the flexible last
    member of a struct of its own, reached through a pointer field.
    """
    lines = []
    fields = []
    for index, name in enumerate(types):
        base, bracket, length = name.partition("[")
        if length == "]":
            lines.append(f"typedef struct {{ char head; {base} items[]; }} ar_ze_open_{index};")
            fields.append(f"ar_ze_open_{index} *t{index};")
        else:
            fields.append(f"{base} t{index}{bracket}{length};")
    lines.append("typedef struct { " + " ".join(fields) + " } ar_ze_types;")
    return "\n".join(lines)


_NO_BUFFER: Any = object()


@functools.cache
def _build() -> tuple[Any, dict[str, Any]]:
    """The FFI, and :data:`TYPES` resolved to cffi types (one parse for all of them)."""
    built = cffi.FFI()
    built.cdef(decl_source())
    built.cdef(HELPERS_DECL + types_decl())
    table = {}
    for name, (_, field) in zip(TYPES, built.typeof("ar_ze_types").fields, strict=True):
        ctype = field.type
        if name.endswith("[]"):
            ctype = ctype.item.fields[-1][1].type
        table[name] = ctype
    return built, table


class _LazyFFI:
    """Parses the declarations on first use, so importing the backend stays cheap.

    ``new``, ``cast``, ``sizeof`` and ``from_buffer`` take the types of
    :data:`TYPES` from the table, never from cffi's parser.
    """

    def __getattr__(self, name: str) -> Any:
        # Kept on the instance once looked up, so the next read (``ffi.NULL``
        # on every append) finds it without coming here: this lookup costs
        # more than the driver call it is an argument of.
        value = getattr(_build()[0], name)
        setattr(self, name, value)
        return value

    def new(self, cdecl: Any, init: Any = None) -> Any:
        built, table = _build()
        return built.new(_resolve(table, cdecl), init)

    def cast(self, cdecl: Any, source: Any) -> Any:
        # Every append casts its pointers: once built, this instance's ``cast``
        # is a closure over cffi's own (a type not in the table, or already a
        # cffi type, is its own key).
        built, table = _build()
        bound, lookup = built.cast, table.get

        def fast(cdecl: Any, source: Any) -> Any:
            return bound(lookup(cdecl, cdecl), source)

        self.cast = fast  # type: ignore[method-assign]
        return fast(cdecl, source)

    def sizeof(self, cdecl: Any) -> int:
        built, table = _build()
        size: int = built.sizeof(_resolve(table, cdecl))
        return size

    def from_buffer(
        self, cdecl: Any, python_buffer: Any = _NO_BUFFER, require_writable: bool = False
    ) -> Any:
        if python_buffer is _NO_BUFFER:  # from_buffer(buffer): cffi's default type
            cdecl, python_buffer = "char[]", cdecl
        built, table = _build()
        return built.from_buffer(_resolve(table, cdecl), python_buffer, require_writable)


def caster(cdecl: str) -> Callable[[Any], Any]:
    """cffi's ``cast`` to ``cdecl`` (one of :data:`TYPES`), bound once.

    For the paths that cast on every op: a bound builtin costs a third of
    :meth:`_LazyFFI.cast`'s lookup per call.
    """
    built, table = _build()
    return functools.partial(built.cast, table[cdecl])


def _resolve(table: dict[str, Any], cdecl: Any) -> Any:
    """A type from the table if ``cdecl`` names one of :data:`TYPES`, else ``cdecl``."""
    return table.get(cdecl, cdecl) if isinstance(cdecl, str) else cdecl


#: The shared FFI object (``ffi.new``, ``ffi.dlopen``...).
ffi: Any = _LazyFFI()


#: The compiled per-op calls (``ffi/levelzero/api/generate.py``).
COMPILED_MODULE = "_aruntime_ze_api"
_compiled: list[Any] = []  # [module or None], loaded on first use
_compiled_lock = threading.Lock()


#: Set in a compiled append's result when the barrier before the op failed
#: (the low 32 bits hold the failed call's ze_result_t).
BARRIER_FAILED = 1 << 32


class CompiledCalls(NamedTuple):
    """The compiled calls of every op's path, bound to one opened library.

    Each takes integer handles (``int(ffi.cast("uintptr_t", handle))``) and,
    last, ``table``: that library's function pointers.
    """

    # The appends take (list, barrier_first, ...): see :data:`BARRIER_FAILED`.
    fill: Callable[..., int]  # (list, barrier_first, dst, pattern, pattern_size, nbytes, table)
    copy: Callable[..., int]  # (list, barrier_first, dst, src, nbytes, table)
    launch: Callable[..., int]  # (list, barrier_first, kernel, groups, table)
    barrier: Callable[..., int]  # (list, signal event or 0, table)
    host_reset: Callable[..., int]  # (event, table)
    query: Callable[..., int]  # (event, table)
    table: Any


def table_slot(calls: CompiledCalls, name: str) -> int:
    """The address of ``calls.table``'s slot for the function ``name`` (read at each call)."""
    compiled = _compiled[0].ffi
    return int(compiled.cast("uintptr_t", compiled.addressof(calls.table, name)))


def compiled_calls(lib: Any) -> CompiledCalls | None:
    """The compiled calls through ``lib``'s own functions, or None for ABI mode throughout.

    None where the extension was not built (no compiler, cffi or Python
    headers when aruntime was installed), when ``ARUNTIME_LEVELZERO_ABI=1``,
    or when ``lib`` is not a cffi library (a test's stand-in).  The table
    holds the addresses of ``lib``'s functions, so the calls reach the same
    code (loader, validation layer, driver) as the ABI binding's.
    """
    # The switch first: a driver opened with it set must not leave the
    # extension unloaded for the drivers opened after it is unset.
    if os.environ.get("ARUNTIME_LEVELZERO_ABI") == "1":
        return None
    with _compiled_lock:
        if not _compiled:
            _compiled.append(load_extension(COMPILED_MODULE, "ARUNTIME_LEVELZERO_ABI"))
    module = _compiled[0]
    if module is None:
        return None
    table = module.ffi.new("ar_ze_table *")
    try:
        for name, _ in module.ffi.typeof("ar_ze_table").fields:
            address = int(ffi.cast("uintptr_t", ffi.addressof(lib, name)))
            setattr(table, name, module.ffi.cast("void *", address))
    except (AttributeError, TypeError, cffi.FFIError):
        return None
    c = module.lib
    return CompiledCalls(
        c.ar_ze_fill,
        c.ar_ze_copy,
        c.ar_ze_launch,
        c.ar_ze_barrier,
        c.ar_ze_host_reset,
        c.ar_ze_query,
        table,
    )
