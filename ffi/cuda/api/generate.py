"""Generate the C source of ``_aruntime_cuda_api``: the compiled (API-mode) CUDA binding.

cffi's ABI mode calls every C function through libffi, which costs about
200 ns a call.  This module emits, with cffi's API mode, a CPython extension
whose functions are plain C wrappers, about 3x cheaper to call.  It does not
link against ``libcuda``: each wrapper calls through a function pointer that
``ar_bind_path(path)`` fills with ``dlsym`` on the library the backend chose
(NVIDIA's or the sim), so the versioned names are exactly those declared in
``ffi/cuda/decl``.  A symbol the library lacks stays NULL and ``ar_has(name)``
says so; the Python side then raises NotSupportedError naming it.

One process binds the extension to one library; any other CUDA library
opened in the same process uses ABI mode (same declarations, same ``ffi``).

The native host functions (``ffi/cuda/helpers``) are compiled into the
extension too, so that the whole backend shares one ``ffi`` object.

    python -m ffi.cuda.api.generate OUT.c     (from the checkout's root)
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from ffi.build import emit_api_source

HERE = Path(__file__).resolve().parent
DECL = HERE.parent / "decl"
HELPERS_C = HERE.parent / "helpers" / "aruntime_cuda_helpers.c"
MODULE = "_aruntime_cuda_api"

# In API mode cffi checks Dl_info against <dlfcn.h>; "..." lets it fill the rest.
SYSTEM_CDEF = """
typedef struct { const char *dli_fname; ...; } Dl_info;
int dladdr(const void *addr, Dl_info *info);
int ar_bind_path(const char *path);
int ar_has(const char *name);
"""


def _declarations() -> str:
    return "\n".join(p.read_text() for p in sorted(DECL.glob("*.h")))


def _functions(text: str) -> list[tuple[str, str]]:
    clean = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.findall(r"^CUresult (cu\w+)\((.*)\);$", clean, flags=re.M)


def c_source() -> str:
    text = _declarations()
    types_part = re.sub(r"/\*.*?\*/", "", (DECL / "00_types.h").read_text(), flags=re.S)
    out = [
        "#ifndef _GNU_SOURCE",
        "#define _GNU_SOURCE",
        "#endif",
        "#include <dlfcn.h>",
        "#include <stddef.h>",
        "#include <stdint.h>",
        "#include <string.h>",
        types_part,
        # The host functions, compiled in (their header declares the API).
        f'#include "{HELPERS_C}"',
    ]
    for name, params in _functions(text):
        args = [] if params.strip() == "void" else [p.strip() for p in params.split(",")]
        names = [re.findall(r"(\w+)\s*$", a)[0] for a in args]
        out.append(f"static CUresult (*ar_p_{name})({params});")
        out.append(
            f"static CUresult {name}({params}) {{ return ar_p_{name}({', '.join(names)}); }}"
        )
    out.append("static void *ar_bound;")
    out.append("static int ar_bind_path(const char *path) {")
    out.append("    if (ar_bound != NULL) return -1;  /* one library per process */")
    out.append("    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);")
    out.append("    if (h == NULL) return -2;")
    for name, _ in _functions(text):
        out.append(f'    *(void **)&ar_p_{name} = dlsym(h, "{name}");')
    out.append("    ar_bound = h;")
    out.append("    return 0;")
    out.append("}")
    out.append("static int ar_has(const char *name) {")
    for name, _ in _functions(text):
        out.append(f'    if (strcmp(name, "{name}") == 0) return ar_p_{name} != NULL;')
    out.append("    return 0;")
    out.append("}")
    return "\n".join(out) + "\n"


def generate(out_c: Path) -> bool:
    """Write the C source to ``out_c`` (only when it changed); False without cffi."""
    return emit_api_source(MODULE, _declarations() + SYSTEM_CDEF, c_source(), out_c)


if __name__ == "__main__":
    generate(Path(sys.argv[1]))
