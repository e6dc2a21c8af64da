"""Native libraries of the CUDA backend, built by ``ffi/build.py``."""

from __future__ import annotations

import sysconfig
from pathlib import Path
from typing import Any

from ffi.build import NativeLibrary


def _api_extension() -> list[Any]:
    """The compiled CUDA binding (see api/generate.py), where it can be built here.

    It needs cffi (to generate its C source) and Python's headers; without
    them the backend uses cffi's ABI mode, which needs neither.
    """
    include = Path(sysconfig.get_paths()["include"])
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    if not (include / "Python.h").exists() or not suffix:
        return []
    from ffi.cuda.api import generate as generator

    source = Path(__file__).resolve().parent / "api" / "_generated" / "_aruntime_cuda_api.c"
    if not generator.generate(source):
        return []
    decl = sorted(f"cuda/decl/{p.name}" for p in (Path(__file__).parent / "decl").glob("*.h"))
    return [
        NativeLibrary(
            filename=f"_aruntime_cuda_api{suffix}",
            sources=(str(source),),
            depends=(*decl, "cuda/helpers/aruntime_cuda_helpers.c", "cuda/api/generate.py"),
            cflags=(f"-I{include}", "-Wno-unused-function", "-Wno-missing-field-initializers"),
            ldflags=("-ldl",),
        )
    ]


LIBRARIES = [
    # Host functions for cuLaunchHostFunc: C only, since no Python may run on
    # a driver thread.
    NativeLibrary(
        filename="libaruntime_cuda_helpers.so",
        sources=("cuda/helpers/aruntime_cuda_helpers.c",),
        depends=("cuda/decl/90_aruntime_helpers.h",),
        cflags=("-fvisibility=hidden",),
    ),
    *_api_extension(),
]
