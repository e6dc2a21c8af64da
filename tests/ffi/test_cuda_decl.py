"""Every cffi declaration in ffi/cuda/decl is compiled against the real cuda.h.

For each declared function the generated C file assigns the real function to
a pointer of the *declared* type, with -Werror, so a wrong parameter or
return type fails to compile.  Each typedef and struct is checked for type
compatibility, size and member offsets.  A name that cuda.h turns into a
macro (``cuMemAlloc`` -> ``cuMemAlloc_v2``) is an error: in ABI mode there
are no macros, and the unversioned export is the legacy ABI.

The test skips only where no cuda.h exists; it fails instead when
/usr/local/cuda/include/cuda.h exists or CI is set.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DECL = ROOT / "ffi" / "cuda" / "decl"

# Names cuda.h maps to a newer export that CUDA 12.0 drivers lack, whose
# unversioned export has the same signature: both are declared, the newer one
# is feature-tested at load.
SAME_ABI_AS_MACRO_TARGET = {"cuEventElapsedTime"}


def _find_include() -> Path | None:
    spec = importlib.util.spec_from_file_location("_cuda_headers", ROOT / "ffi/cuda/headers.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    result: Path | None = module.find_cuda_include()
    return result


def _cuda_sources() -> str:
    text = "\n".join(p.read_text() for p in sorted(DECL.glob("*.h")) if not p.name.startswith("9"))
    return re.sub(r"/\*.*?\*/", "", text, flags=re.S)


def _functions(text: str) -> list[tuple[str, str, str]]:
    pattern = re.compile(r"^(\w[\w\s\*]*?)\b(cu\w+)\((.*)\);$", re.M)
    return [(m.group(1).strip(), m.group(2), m.group(3)) for m in pattern.finditer(text)]


def _typedefs(text: str) -> list[tuple[str, str]]:
    """(abstract type, name) of each one-line typedef."""
    result = []
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("typedef") or not line.endswith(";") or "{" in line:
            continue
        body = line[len("typedef") : -1].strip()
        fnptr = re.match(r"^(.*)\(\s*\*\s*(\w+)\s*\)(.*)$", body)
        if fnptr:
            result.append((f"{fnptr.group(1)}(*){fnptr.group(3)}", fnptr.group(2)))
        else:
            m = re.match(r"^(.*?)(\w+)$", body)
            assert m, line
            result.append((m.group(1).strip(), m.group(2)))
    return result


def _structs(text: str) -> list[tuple[str, str, list[str], str]]:
    """(tag, typedef name, member names, body) of each struct definition."""
    pattern = re.compile(r"typedef struct (\w+) \{(.*?)\} (\w+);", re.S)
    result = []
    for m in pattern.finditer(text):
        members = re.findall(r"(\w+)\s*;", m.group(2))
        result.append((m.group(1), m.group(3), members, m.group(2)))
    return result


def _generate(text: str) -> str:
    out = ["#include <stddef.h>", "#include <stdint.h>", "#include <cuda.h>", ""]
    functions = _functions(text)
    assert len(functions) >= 50, "the declaration parser found too few functions"
    for _, name, _ in functions:
        if name in SAME_ABI_AS_MACRO_TARGET:
            continue
        out += [
            f"#ifdef {name}",
            f'#error "{name} is a cuda.h macro: declare the versioned symbol it maps to"',
            "#endif",
        ]
    for abstract, name in _typedefs(text):
        out.append(
            f"_Static_assert(__builtin_types_compatible_p({abstract}, {name}), "
            f'"typedef {name} differs from cuda.h");'
        )
    for tag, name, members, body in _structs(text):
        mine = f"ardecl_{name}"
        out.append(f"typedef struct ardecl_{tag} {{{body}}} {mine};")
        out.append(f'_Static_assert(sizeof({mine}) == sizeof({name}), "sizeof {name}");')
        for member in members:
            out.append(
                f"_Static_assert(offsetof({mine}, {member}) == offsetof({name}, {member}), "
                f'"offset of {name}.{member}");'
            )
            out.append(
                f"_Static_assert(__builtin_types_compatible_p(__typeof__((({mine} *)0)->{member}),"
                f' __typeof__((({name} *)0)->{member})), "type of {name}.{member}");'
            )
    for result, name, params in functions:
        out.append(f"{result} (*ardecl_{name})({params}) = &{name};")
    return "\n".join(out) + "\n"


def test_declarations_match_cuda_h(tmp_path: Path) -> None:
    include = _find_include()
    if include is None:
        if Path("/usr/local/cuda/include/cuda.h").exists() or os.environ.get("CI"):
            pytest.fail("cuda.h exists (or CI is set) but the header finder did not find it")
        pytest.skip("no cuda.h here (install the CUDA toolkit or pip install nvidia-cuda-runtime)")
    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    assert cc is not None, "a C compiler is required"
    source = tmp_path / "check_cuda_decl.c"
    source.write_text(_generate(_cuda_sources()))
    result = subprocess.run(
        [
            cc,
            "-std=gnu11",
            "-fsyntax-only",
            "-Wall",
            "-Werror",
            "-Wno-deprecated-declarations",
            "-Wno-unused-variable",
            f"-I{include}",
            str(source),
        ],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, f"{source}:\n{result.stderr}"


def test_a_wrong_declaration_fails_to_compile(tmp_path: Path) -> None:
    """The check has teeth: a 32-bit size, or a legacy unversioned name, is rejected."""
    include = _find_include()
    if include is None:
        pytest.skip("no cuda.h here")
    cc = shutil.which(os.environ.get("CC", "cc")) or "gcc"
    wrong = _cuda_sources()
    bad_cases = {
        "size": wrong.replace(
            "cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)",
            "cuMemAlloc_v2(CUdeviceptr *dptr, unsigned int bytesize)",
        ),
        "legacy": wrong.replace("cuMemAlloc_v2(", "cuMemAlloc("),
        "typedef": wrong.replace("typedef uint64_t cuuint64_t;", "typedef unsigned cuuint64_t;"),
        "struct": wrong.replace("    size_t srcY;\n", "    unsigned srcY;\n"),
    }
    for label, text in bad_cases.items():
        assert text != wrong, label
        source = tmp_path / f"bad_{label}.c"
        source.write_text(_generate(text))
        result = subprocess.run(
            [
                cc,
                "-std=gnu11",
                "-fsyntax-only",
                "-Werror",
                "-Wno-deprecated-declarations",
                f"-I{include}",
                str(source),
            ],
            capture_output=True,
            text=True,
        )
        assert result.returncode != 0, f"the {label} mistake compiled"


def test_cffi_accepts_the_declarations() -> None:
    from aruntime.backends.cuda import _ffi

    ffis = [_ffi.abi_ffi()] + ([_ffi.COMPILED_FFI] if _ffi.COMPILED_FFI is not None else [])
    for ffi in ffis:  # ABI mode, and the compiled extension where it was built
        assert ffi.sizeof("CUDA_MEMCPY2D_v2") == 128
        assert ffi.sizeof("CUdeviceptr") == 8
