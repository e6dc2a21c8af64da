"""The DLPack capsule destructor (see dlpack_capsule.c)."""

from __future__ import annotations

from _aruntime_ffi_build import NativeLibrary  # set up by ffi/build.py

LIBRARIES = [
    NativeLibrary(
        filename="libaruntime_dlpack.so",
        sources=("dlpack/dlpack_capsule.c",),
        cflags=("-fvisibility=hidden",),
    ),
]
