"""The DLPack capsule destructor (see dlpack_capsule.c)."""

from __future__ import annotations

from ffi.build import NativeLibrary

LIBRARIES = [
    NativeLibrary(
        filename="libaruntime_dlpack.so",
        sources=("dlpack/dlpack_capsule.c",),
        cflags=("-fvisibility=hidden",),
    ),
]
