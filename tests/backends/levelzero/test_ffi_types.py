"""The Level Zero backend never has cffi parse a C type string after open.

cffi parses each new type string with pycparser (milliseconds each) on the
thread that first names it, usually an op on an event loop.  The backend's
types are declared once in ``_ffi.TYPES`` instead; these tests keep that list
complete and correct.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import cffi.cparser
import numpy as np
import pytest

import aruntime as ar
from aruntime.backends.levelzero import _ffi

_PACKAGE = Path(_ffi.__file__).resolve().parent
_TYPED = {"new", "cast", "sizeof", "typeof", "from_buffer"}


def _named_types() -> Iterator[tuple[str, int, str]]:
    """(file, line, type) of every string literal passed as a type to ``ffi.<fn>``."""
    for path in sorted(_PACKAGE.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in _TYPED
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "ffi"
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                yield path.name, node.lineno, node.args[0].value


def test_every_type_the_backend_names_is_declared() -> None:
    named = list(_named_types())
    assert len(named) > 40  # the scan finds the calls
    missing = [f"{name}:{line} {cdecl!r}" for name, line, cdecl in named if cdecl not in _ffi.TYPES]
    assert not missing, f"add these to levelzero._ffi.TYPES: {missing}"
    unused = set(_ffi.TYPES) - {cdecl for _, _, cdecl in named}
    assert not unused, f"TYPES lists types nothing names: {sorted(unused)}"


def test_declared_types_are_the_parsed_ones() -> None:
    built, table = _ffi._build()
    assert list(table) == list(_ffi.TYPES)
    for cdecl, ctype in table.items():
        assert ctype is built.typeof(cdecl), cdecl


def test_types_decl_shapes() -> None:
    decl = _ffi.types_decl(("void*", "uint8_t[4]", "ze_event_handle_t[]"))
    assert "void* t0;" in decl
    assert "uint8_t t1[4];" in decl
    assert "typedef struct { char head; ze_event_handle_t items[]; } ar_ze_open_2;" in decl
    assert "ar_ze_open_2 *t2;" in decl


def test_wrapper_calls_match_cffi() -> None:
    built, _ = _ffi._build()
    array = _ffi.ffi.new("ze_event_handle_t[]", 3)
    assert len(array) == 3 and _ffi.ffi.typeof(array) is built.typeof("ze_event_handle_t[]")
    assert _ffi.ffi.sizeof("ze_copy_region_t*") == built.sizeof("void*")
    assert int(_ffi.ffi.cast("uintptr_t", 5)) == 5
    data = bytearray(b"abc")
    view = _ffi.ffi.from_buffer(data, require_writable=True)
    assert _ffi.ffi.typeof(view) is built.typeof("char[]") and len(view) == 3
    typed = _ffi.ffi.from_buffer("uint8_t[]", data)
    assert typed[1] == ord("b")
    # A type outside the table still works (cffi parses it).
    assert _ffi.ffi.sizeof("uint16_t") == 2


def test_ops_parse_no_type_string(monkeypatch: pytest.MonkeyPatch) -> None:
    try:
        gpu = ar.open_backend("levelzero-sim")
    except ar.BackendUnavailableError as exc:
        pytest.skip(f"levelzero-sim unavailable: {exc}")
    parsed: list[str] = []
    parse = cffi.cparser.Parser.parse_type

    def spy(self: cffi.cparser.Parser, cdecl: str) -> object:
        parsed.append(cdecl)
        return parse(self, cdecl)

    monkeypatch.setattr(cffi.cparser.Parser, "parse_type", spy)
    try:
        stream = gpu.create_stream()
        big = 3 * (4 << 20) + 5  # staged in 4 MiB pieces
        device = gpu.alloc(big)
        host = np.arange(big, dtype=np.uint64).astype(np.uint8)
        back = np.zeros_like(host)
        gpu.copy_h2d_async(host, device, stream=stream).wait()
        gpu.copy_d2h_async(device, back, stream=stream).wait()
        assert np.array_equal(host, back)
        pinned = gpu.alloc_host_pinned(1 << 16)
        gpu.free_host_pinned(pinned)
        with gpu.capture(stream) as graph:
            gpu.memset_async(device, 7, 64, stream=stream)
        gpu.launch_graph(graph, stream).wait()
        gpu.destroy_graph(graph)
        start, end = gpu.create_event(timing=True), gpu.create_event(timing=True)
        gpu.record_event(start, stream)
        kernel = gpu.kernel(gpu.builtin_module("vector_ops"), "saxpy")
        x = gpu.alloc(4096)
        gpu.memset_async(x, 0, 4096, stream=stream)
        gpu.launch(kernel, 4, 256, [np.uint32(1024), np.float32(2), x, x], stream=stream)
        gpu.record_event(end, stream)
        gpu.synchronize(stream).wait()
        assert gpu.elapsed_ms(start, end) >= 0
        for event in (start, end):
            gpu.destroy_event(event)
        gpu.free(x)
        gpu.free(device)
        stream.close()
    finally:
        gpu.close()
    assert not parsed, f"cffi parsed type strings during ops: {parsed}"
