"""Native libraries of the CUDA backend, built by ``ffi/build.py``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ffi.build import NativeLibrary, api_extension


def _api_extension() -> list[Any]:
    """The compiled CUDA binding (see api/generate.py), where it can be built here."""
    from ffi.cuda.api import generate as generator

    here = Path(__file__).resolve().parent
    decl = sorted(f"cuda/decl/{p.name}" for p in (here / "decl").glob("*.h"))
    return api_extension(
        generator.MODULE,
        here / "api" / "_generated" / f"{generator.MODULE}.c",
        generator.generate,
        depends=(*decl, "cuda/helpers/aruntime_cuda_helpers.c", "cuda/api/generate.py"),
        ldflags=("-ldl",),
    )


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
