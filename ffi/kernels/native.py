"""The portable kernels built for the CPU: the software drivers' module image.

The same sources build to PTX with nvcc (build_ptx.py) and to SPIR-V with
clang and llvm-spirv (build_spirv.py); see ar_portable.h.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType


def _build_module() -> ModuleType:
    # ffi/build.py runs as __main__, or is loaded under this name by setup.py
    # and aruntime._native; reuse whichever is there.
    for name in ("_aruntime_ffi_build", "__main__"):
        module = sys.modules.get(name)
        if module is not None and hasattr(module, "NativeLibrary"):
            return module
    spec = importlib.util.spec_from_file_location(
        "_aruntime_ffi_build", Path(__file__).resolve().parent.parent / "build.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


NativeLibrary = _build_module().NativeLibrary

#: Kept in step with aruntime/_kernel_images.py (ffi/ cannot import the package).
COMPUTE_MODULES = ("gemm", "conv2d", "attention", "reduce", "unary", "binary")

LIBRARIES = [
    NativeLibrary(
        filename="libarkernels_host.so",
        sources=("kernels/vector_ops.c",),
        cflags=("-fvisibility=hidden", "-Ikernels"),
        ldflags=("-lm",),
        depends=("kernels/ar_portable.h", "kernels/ar_pp.h", "kernels/ar_host_abi.h"),
    ),
    # The compute operations (issue 6): one module, and one host object, per source.
    *(
        NativeLibrary(
            filename=f"libarkernels_{name}.so",
            sources=(f"kernels/{name}.c",),
            cflags=("-fvisibility=hidden", "-Ikernels"),
            ldflags=("-lm",),
            depends=(
                "kernels/ar_portable.h",
                "kernels/ar_pp.h",
                "kernels/ar_host_abi.h",
                "kernels/ar_compute.h",
            ),
        )
        for name in COMPUTE_MODULES
    ),
]
