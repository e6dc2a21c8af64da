"""The Level Zero cffi declarations agree with the real ``ze_api.h``.

Every declared prototype is redeclared after ``#include <level_zero/ze_api.h>``
and assigned to a function pointer of the declared type, every scalar typedef is
redefined, and every struct's size, field offsets and field types, and every
enum constant, are static-asserted against what cffi computed.  ``gcc -Werror``
turns any disagreement into a compile error that names the declaration.
"""

from __future__ import annotations

import copy
import re
import shutil
import subprocess
from pathlib import Path

import pytest

pycparser = pytest.importorskip("pycparser")
from pycparser import c_ast, c_generator  # noqa: E402

from aruntime.backends.levelzero import _ffi  # noqa: E402

HEADER = Path("/usr/include/level_zero/ze_api.h")
LOADER_HEADER = Path("/usr/include/level_zero/loader/ze_loader.h")

_FAKE_STDINT = """
typedef unsigned char uint8_t; typedef unsigned short uint16_t;
typedef unsigned int uint32_t; typedef unsigned long uint64_t;
typedef int int32_t; typedef long int64_t; typedef unsigned long size_t;
"""


def _strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def _parse() -> c_ast.FileAST:
    return pycparser.CParser().parse(_FAKE_STDINT + _strip_comments(_ffi.decl_source()))


def _type_text(node: c_ast.Node) -> str:
    """The C type name of a declaration's type (no declarator name)."""
    node = copy.deepcopy(node)
    for sub in _walk(node):
        if isinstance(sub, c_ast.TypeDecl):
            sub.declname = None
    return c_generator.CGenerator().visit(c_ast.Typename(None, [], None, node))


def _walk(node: c_ast.Node):  # type: ignore[no-untyped-def]
    yield node
    for _, child in node.children():
        yield from _walk(child)


def _generate_c() -> tuple[str, int, int, int]:
    ast = _parse()
    ffi = _ffi.ffi
    gen = c_generator.CGenerator()
    lines = [
        "#include <stddef.h>",
        "#include <stdint.h>",
        "#include <level_zero/ze_api.h>",
        "#include <level_zero/loader/ze_loader.h>",
    ]
    n_functions = n_structs = n_constants = 0
    fake = {"uint8_t", "uint16_t", "uint32_t", "uint64_t", "int32_t", "int64_t", "size_t"}
    for ext in ast.ext:
        if isinstance(ext, c_ast.Typedef):
            if ext.name in fake:
                continue
            inner = ext.type.type if isinstance(ext.type, c_ast.TypeDecl) else None
            if isinstance(inner, c_ast.Struct) and inner.decls is not None:
                n_structs += 1
                tname = ext.name
                lines.append(
                    f'_Static_assert(sizeof({tname}) == {ffi.sizeof(tname)}, "sizeof {tname}");'
                )
                for field in inner.decls:
                    off = ffi.offsetof(tname, field.name)
                    lines.append(
                        f"_Static_assert(offsetof({tname}, {field.name}) == {off}, "
                        f'"offsetof {tname}.{field.name}");'
                    )
                    lines.append(
                        "_Static_assert(__builtin_types_compatible_p("
                        f"__typeof__((({tname}*)0)->{field.name}), {_type_text(field.type)}), "
                        f'"type of {tname}.{field.name}");'
                    )
            elif isinstance(inner, c_ast.Enum) and inner.values is not None:
                lines.append(
                    f"_Static_assert(sizeof({ext.name}) == {ffi.sizeof(ext.name)}, "
                    f'"sizeof {ext.name}");'
                )
                for name, value in ffi.typeof(ext.name).relements.items():
                    n_constants += 1
                    lines.append(f'_Static_assert({name} == {value}, "value of {name}");')
            else:
                lines.append(gen.visit(ext) + ";")  # a redefinition must name the same type
        elif isinstance(ext, c_ast.Decl) and isinstance(ext.type, c_ast.FuncDecl):
            n_functions += 1
            lines.append(gen.visit(ext) + ";")  # conflicting types are an error
            pointer = copy.deepcopy(ext.type)
            pointer_decl = c_ast.Decl(
                f"p_{ext.name}", [], [], [], [], c_ast.PtrDecl([], pointer), None, None
            )
            for sub in _walk(pointer):
                if isinstance(sub, c_ast.TypeDecl) and sub.declname == ext.name:
                    sub.declname = f"p_{ext.name}"
            lines.append(f"{gen.visit(pointer_decl)} = {ext.name};")
    return "\n".join(lines) + "\n", n_functions, n_structs, n_constants


@pytest.fixture(scope="module")
def compiler() -> str:
    if not HEADER.exists() or not LOADER_HEADER.exists():
        pytest.skip(
            f"{HEADER} not found: install the Debian package libze-dev "
            "(apt-get install libze-dev) to check the Level Zero declarations"
        )
    cc = shutil.which("gcc")
    if cc is None:
        pytest.skip("gcc is not on PATH")
    return cc


def test_declarations_compile_against_ze_api_h(compiler: str, tmp_path: Path) -> None:
    source, n_functions, n_structs, n_constants = _generate_c()
    assert n_functions >= 50 and n_structs >= 20 and n_constants >= 50
    c_file = tmp_path / "ze_decl_check.c"
    c_file.write_text(source)
    result = subprocess.run(
        [
            compiler,
            "-std=gnu11",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-Wno-unused-variable",
            "-c",
            str(c_file),
            "-o",
            str(tmp_path / "ze_decl_check.o"),
        ],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, f"gcc rejected the declarations:\n{result.stderr}"


def test_a_wrong_declaration_is_caught(compiler: str, tmp_path: Path) -> None:
    """The check itself fails on a bad prototype (so a pass means something)."""
    source, *_ = _generate_c()
    bad = source.replace(
        "ze_result_t zeInit(ze_init_flags_t flags);", "ze_result_t zeInit(uint64_t flags);", 1
    )
    assert bad != source
    c_file = tmp_path / "bad.c"
    c_file.write_text(bad)
    result = subprocess.run(
        [compiler, "-std=gnu11", "-Werror", "-c", str(c_file), "-o", str(tmp_path / "bad.o")],
        capture_output=True,
        text=True,
    )
    assert result.returncode != 0
    assert "zeInit" in result.stderr
